import Foundation
import SwitchboardCore
import SwitchboardStore

/// One pass of one direction: reading pages (and the next one ahead), recognising the bridge's own copies coming
/// back, pipelining a batch's publish with the next page, and storing the cursor once a page is bridged.
extension Bridge {
    // MARK: - One pass

    /// What one pass found.
    struct PassResult {
        /// Whether anything was read (or more was announced).
        var moved: Bool
        /// Whether the source said more changes follow the page.
        var hasMore: Bool
    }

    /// Bridges one page of `source`'s changes; returns what it found. When the page says more
    /// follow, the next one is read ahead while this one is copied (the cursor still advances only after a page is
    /// fully bridged, so a kill or an error loses nothing; a page read ahead is used only if it starts at the
    /// stored cursor).
    ///
    /// A page that ends with a batch of new messages leaves that batch's `publishAll` in flight: the next pass in
    /// the same direction reads and stages (prepares and persists) the next page meanwhile, then completes the
    /// batch in flight and stores its cursor before publishing its own. Anything else that publishes first
    /// completes the batch in flight, so publishes keep their order; a pass of the other direction that only
    /// reads the bridge's own copies coming back (settled echoes) leaves it in flight.
    func pass(from source: BridgeSide, to target: BridgeSide) async throws -> PassResult {
        try Task.checkCancellation()
        // A batch in flight from the other side stays in flight while this page only holds its own copies coming
        // back (settled echoes, which change nothing); it is completed before anything here is bridged.
        let ownInFlight = inFlight.map { $0.source.backend == source.backend } ?? false
        let cursor: Cursor?
        if let inFlight, ownInFlight {
            cursor = inFlight.cursor
        } else if let known = cursors[source.backend] {
            cursor = known
        } else {
            let pair = self.pair
            cursor = try await store.read { try $0.bridgeCursor(pair: pair, backend: source.backend) }
            cursors[source.backend] = cursor
        }
        let bulk = configuration.batchCopies ? target.adapter as? any BulkPublishingAdapter : nil
        let span = max(1, bulk?.bulkPublishLimit ?? 1)
        try await lookUpWaitingReplies(from: source, to: target)
        let batch = try await page(of: source, after: cursor, span: span)
        if oldestUnbridged == nil, let first = batch.changes.first { oldestUnbridged = first.changedAt }
        if batch.hasMore, !stopping, batch.cursor != cursor {
            let adapter = source.adapter, conversation = source.conversation, next = batch.cursor
            let limit = configuration.batchSize, skippingOwn = !configuration.copiesOwnMessages
            readAhead[source.backend] = (next, Task.detached {
                try await Self.pages(of: adapter, in: conversation, after: next, limit: limit, span: span,
                                     skippingOwn: skippingOwn)
            })
        }
        var run: [PlannedCopy] = []
        var planned = Set<MessageID>()
        // The page's echoes and copy states, read at once; the states are dropped as soon as anything is written
        // before they are used.
        let facts = try await pageFacts(of: batch.changes, from: source, to: target, batching: bulk != nil)
        let settled = facts.settled
        var states = facts.states
        for (index, change) in batch.changes.enumerated() {
            if stopping { return PassResult(moved: false, hasMore: false) }
            if settled.contains(index) { continue }
            if let bulk {
                if case .message(let message) = change,
                   let next = try await plan(message, from: source, to: target, excluding: planned, known: states[message.remoteID]) {
                    run.append(next)
                    planned.insert(next.id)
                    // A full batch is copied now unless it ends the page: then it goes below, left in flight.
                    if run.count >= max(1, bulk.bulkPublishLimit), index < batch.changes.count - 1 {
                        try await completeInFlight()
                        try await copyOrSplit(run, from: source, to: target, via: bulk)
                        run = []
                        planned = []
                        states = [:]
                    }
                    continue
                }
                if !run.isEmpty {
                    try await completeInFlight()
                    try await copyOrSplit(run, from: source, to: target, via: bulk)
                    run = []
                    planned = []
                    if stopping { return PassResult(moved: false, hasMore: false) }
                }
            }
            states = [:]
            try await completeInFlight()
            try await copyRepliesToCopiedTargets(from: source, to: target)
            try await bridgeOrHold(change, from: source, to: target)
        }
        if let bulk, !run.isEmpty, let staged = try await stageOrSplit(run, from: source, to: target, via: bulk) {
            let prepared = staged.prepared
            try await completeInFlight(startingNext: {
                InFlightCopy(staged: staged, publish: Task { try await bulk.publishAll(prepared) },
                             cursor: batch.cursor, storedCursor: cursor)
            })
            if stopping { try await completeInFlight() }
            if !batch.hasMore, !stopping { try await copyWaitingReplies(from: source, to: target) }
            return PassResult(moved: true, hasMore: batch.hasMore)
        }
        // The previous page's batch from this side is recorded before this page's cursor; one from the other side
        // has a cursor of its own and may stay in flight.
        if ownInFlight { try await completeInFlight() }
        if batch.cursor != cursor {
            try await storeCursor(batch.cursor, of: source)
        }
        if !batch.hasMore, !stopping {
            try await copyWaitingReplies(from: source, to: target)
        } else {
            try await copyRepliesToCopiedTargets(from: source, to: target)
        }
        return PassResult(moved: !batch.changes.isEmpty || batch.hasMore, hasMore: batch.hasMore)
    }

    /// A staged batch whose `publishAll` runs, and the page cursor to store once it is complete.
    struct InFlightCopy {
        /// The staged batch.
        var staged: StagedCopy
        /// The publish.
        var publish: Task<[PublishReceipt], any Error>
        /// The cursor after the batch's page.
        var cursor: Cursor?
        /// The cursor the page was read after.
        var storedCursor: Cursor?
        /// The side the batch comes from.
        var source: BridgeSide { staged.source }
    }

    /// A page's end: the source cursor to store once everything on the page is bridged.
    struct PageEnd {
        /// The cursor after the page.
        var cursor: Cursor?
    }

    /// Waits for the batch in flight (if any), records it and stores its page's cursor (in the same transaction
    /// when the batch went through).
    ///
    /// With `next`, the next batch's publish starts as soon as this one's has returned, before this one is recorded:
    /// the target still receives the batches in order, and the bookkeeping leaves the publishes' critical path. A
    /// kill or an error before the record leaves its copies pending in the ledger, to be published again under the
    /// same keys (harmless), and its page's cursor unstored.
    func completeInFlight(startingNext next: (() -> InFlightCopy)? = nil) async throws {
        guard let current = inFlight else {
            inFlight = next?()
            return
        }
        inFlight = nil
        let source = current.source
        let pageEnd = current.cursor != current.storedCursor ? PageEnd(cursor: current.cursor) : nil
        do {
            // The publish runs in a task of its own: cancelling the caller cancels it too, as a direct call would.
            let receipts = try await withTaskCancellationHandler {
                try await current.publish.value
            } onCancel: {
                current.publish.cancel()
            }
            inFlight = next?()
            try await finish(current.staged, receipts: receipts, advancing: pageEnd)
            return
        } catch where Self.isPermanent(error) {
            // One message of the batch cannot go: each is bridged alone, and what cannot go is held.
            for planned in current.staged.run {
                try await bridgeOrHold(.message(planned.message), from: source, to: current.staged.target)
            }
            inFlight = next?()
        }
        if let pageEnd { try await storeCursor(pageEnd.cursor, of: source) }
    }

    /// Stores `source`'s change cursor in the pair's records.
    func storeCursor(_ cursor: Cursor?, of source: BridgeSide) async throws {
        let pair = self.pair
        try await store.write { try $0.setBridgeCursor(cursor, pair: pair, backend: source.backend) }
        cursors[source.backend] = cursor
    }

    /// After an error: lets the batch in flight end and records it if its publish went through (otherwise its
    /// persisted copies are published again by the next pass); its cursor stays put.
    func abandonInFlight() async {
        guard let current = inFlight else { return }
        inFlight = nil
        if Task.isCancelled { current.publish.cancel() }
        if let receipts = try? await current.publish.value { try? await finish(current.staged, receipts: receipts) }
    }

    /// What the store knows of a page, read in one transaction: the positions of the bridge's own copies coming
    /// back (`settledEchoes`) and, when `batching`, the identity and copy state of every other message that may go
    /// in a batch, by source remote ID (one lookup per message otherwise).
    func pageFacts(of changes: [RemoteChange], from source: BridgeSide, to target: BridgeSide, batching: Bool) async throws
        -> (settled: Set<Int>, states: [RemoteID: (id: MessageID, state: BridgeCopyState)]) {
        let own = source.adapter.localUser
        var echoes: [Int] = [], plain: [Int] = []
        for index in changes.indices {
            guard case .message(let message) = changes[index] else { continue }
            if message.sender == own { echoes.append(index) }
            if batching, isPlain(message, from: source, to: target) { plain.append(index) }
        }
        guard !echoes.isEmpty || !plain.isEmpty else { return ([], [:]) }
        let pair = self.pair, copiesOwn = configuration.copiesOwnMessages
        let (settled, resolved) = try await store.read { [echoes, plain] tx in
            let settled = try Self.settledEchoes(at: echoes, in: changes, from: source, to: target, pair: pair,
                                                 copiesOwn: copiesOwn, in: tx)
            var resolved: [(message: RemoteMessage, resolution: MessageIdentity.Resolution, state: BridgeCopyState)] = []
            for index in plain where !settled.contains(index) {
                guard case .message(let message) = changes[index] else { continue }
                let resolution = try Self.identify(message, on: source, pair: pair, in: tx)
                resolved.append((message, resolution, try Self.copyState(resolution.id, towards: target.backend, pair: pair, in: tx)))
            }
            return (settled, resolved)
        }
        var states: [RemoteID: (id: MessageID, state: BridgeCopyState)] = [:]
        for entry in resolved {
            states[entry.message.remoteID] = (noted(entry.resolution, of: entry.message, on: source), entry.state)
        }
        return (settled, states)
    }

    /// Which of the `candidates` (positions of messages sent by the bridge's own account) are its own copies coming
    /// back, already mapped on both sides: `bridgeMessage` would change nothing for them.
    static func settledEchoes(at candidates: [Int], in changes: [RemoteChange], from source: BridgeSide,
                              to target: BridgeSide, pair: String, copiesOwn: Bool,
                              in tx: any StoreTransaction) throws -> Set<Int> {
        var settled = Set<Int>()
        for index in candidates {
            guard case .message(let message) = changes[index],
                  let id = try tx.messageID(backend: source.backend, remoteID: message.remoteID)
                      ?? MessageIdentity.normalizedKey(message.idempotencyKey, scope: KeyScope(message, on: source.backend)),
                  try tx.remoteID(of: id, backend: source.backend, part: 0) == message.remoteID,
                  try tx.remoteID(of: id, backend: target.backend, part: 0) != nil else { continue }
            if let copy = try tx.bridgeCopy(id), copy.pair == pair {
                // A copy towards `target` waits to be republished: the slow path does that.
                if copy.pendingTowards == target.backend { continue }
                // An original of the account's own this pair copied (`copiesOwnMessages`): its updates follow.
                if copiesOwn, copy.origin == source.backend { continue }
            }
            settled.insert(index)
        }
        return settled
    }

    /// The changes of `source` after `cursor` (see `pages`): the ones read ahead when they start there, else read now.
    func page(of source: BridgeSide, after cursor: Cursor?, span: Int) async throws -> ChangeBatch {
        if let ahead = readAhead.removeValue(forKey: source.backend) {
            if ahead.after == cursor, let batch = try? await ahead.page.value { return batch }
            ahead.page.cancel()
        }
        return try await Self.pages(of: source.adapter, in: source.conversation, after: cursor, limit: configuration.batchSize,
                                    span: span, skippingOwn: !configuration.copiesOwnMessages)
    }

    /// One page of changes after `cursor`, extended by the following full pages while every change so far is a
    /// message and the whole stays within `span` changes (a target's bulk publish size): a backlog of new messages
    /// then crosses in batches of `span`, whatever page size the source serves.
    static func pages(of adapter: any ChatAdapter, in conversation: ConversationID, after cursor: Cursor?,
                              limit: Int, span: Int, skippingOwn: Bool) async throws -> ChangeBatch {
        var batch = try await changes(of: adapter, in: conversation, after: cursor, limit: limit, skippingOwn: skippingOwn)
        while batch.hasMore, batch.changes.count + limit <= span, batch.cursor != cursor,
              batch.changes.allSatisfy({ if case .message = $0 { true } else { false } }) {
            // The rest of the span in whole pages, asked for at once: an adapter that can read that much in one go
            // (the XMTP-like one stores it in one transaction) does; the others serve a page and the loop goes on.
            let rest = (span - batch.changes.count) / limit * limit
            let next = try await changes(of: adapter, in: conversation, after: batch.cursor, limit: rest,
                                         skippingOwn: skippingOwn)
            guard !next.changes.isEmpty || next.cursor != batch.cursor else { break }
            batch = ChangeBatch(changes: batch.changes + next.changes, cursor: next.cursor, hasMore: next.hasMore)
        }
        return batch
    }

    /// One page of `adapter`'s changes; with `skippingOwn`, without the bridge account's own plain messages where
    /// the backend can leave them out (a live bridge does nothing with them: they are its own copies coming back).
    static func changes(of adapter: any ChatAdapter, in conversation: ConversationID, after cursor: Cursor?,
                                limit: Int, skippingOwn: Bool) async throws -> ChangeBatch {
        if skippingOwn, let filtering = adapter as? any OwnMessageFilteringAdapter {
            return try await filtering.changesSkippingOwnPlainMessages(in: conversation, after: cursor, limit: limit)
        }
        return try await adapter.changes(in: conversation, after: cursor, limit: limit)
    }
}
