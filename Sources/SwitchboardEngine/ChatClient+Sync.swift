import Foundation
import SwitchboardCore
import SwitchboardStore

extension ChatClient {
    static let historyExhausted = Cursor("#beginning")

    /// Runs a delta sync now (what `open`, every reconnect and a return from background do): fetches what changed
    /// after the stored cursor, new messages and edits, deletes, reactions, receipts; nothing else.
    public func synchronize(_ id: ConversationID) async throws {
        let state = try state(id)
        if state.isSyncing {
            state.resyncRequested = true
            return
        }
        state.isSyncing = true
        defer { state.isSyncing = false }
        emit(.syncStateChanged(.syncing), in: id)
        repeat {
            state.resyncRequested = false
            do {
                try await deltaSync(id)
            } catch {
                emit(.syncStateChanged(.offline(reason: SwitchboardError.wrapping(error).message)), in: id)
                throw error
            }
        } while state.resyncRequested
        emit(.syncStateChanged(state.isConnected ? .live : .offline(reason: "live stream not connected")), in: id)
        try await flushAllPendingOperations()
        wake()
    }

    private func deltaSync(_ id: ConversationID) async throws {
        let backend = self.backend
        var cursor = try await store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .changes) }
        if cursor == nil {
            // First open: take the feed position first, then the newest page; the overlap is deduplicated.
            let latest = try await adapter.latestCursor(in: id)
            let page = try await adapter.history(in: id, before: nil, limit: configuration.pageSize)
            try await ingest(page, in: id, isNewestPage: true)
            try await store.write { tx in
                try tx.setCursor(latest ?? Cursor("0"), conversation: id, backend: backend, kind: .changes)
            }
            cursor = latest ?? Cursor("0")
        }
        while true {
            let batch = try await adapter.changes(in: id, after: cursor, limit: configuration.syncBatchSize)
            let events = try await reconcile { reconciler, tx -> [ConversationEvent] in
                var events: [ConversationEvent] = []
                for change in batch.changes { events += try reconciler.apply(change, tx: tx) }
                if let next = batch.cursor {
                    try tx.setCursor(next, conversation: id, backend: backend, kind: .changes)
                }
                return events
            }
            for event in events { emit(event, in: id) }
            cursor = batch.cursor ?? cursor
            if !batch.hasMore || batch.changes.isEmpty { break }
        }
    }

    /// Ingests one history page and records where paging backwards resumes and how far down history is contiguous.
    /// The newest page (first open) flows into the window; older pages wait for `loadOlder` to prepend them.
    func ingest(_ page: HistoryPage, in id: ConversationID, isNewestPage: Bool) async throws {
        let backend = self.backend
        let (events, floor) = try await reconcile { reconciler, tx -> ([ConversationEvent], TimelinePosition?) in
            var events: [ConversationEvent] = []
            for message in page.messages { events += try reconciler.apply(.message(message), tx: tx) }
            for reaction in page.reactions { events += try reconciler.apply(.reaction(reaction), tx: tx) }
            for receipt in page.receipts { events += try reconciler.apply(.receipt(receipt), tx: tx) }
            let existing = try tx.cursor(conversation: id, backend: backend, kind: .history)
            guard existing != Self.historyExhausted else { return (events, nil) }
            try tx.setCursor(page.olderCursor ?? Self.historyExhausted, conversation: id, backend: backend, kind: .history)
            var floor = try Self.decodeFloor(tx.cursor(conversation: id, backend: backend, kind: .historyFloor))
            if page.olderCursor == nil {
                floor = nil  // the beginning: everything stored is contiguous
            } else {
                for remote in page.messages {
                    guard let position = try tx.message(reconciler.resolve(remote, tx: tx))?.position else { continue }
                    if floor == nil || position < floor! { floor = position }
                }
            }
            try tx.setCursor(floor.map { Cursor("\($0.micros):\($0.id.rawValue)") }, conversation: id, backend: backend,
                             kind: .historyFloor)
            return (events, floor)
        }
        let window = conversations[id]?.window
        conversations[id]?.window.floor = floor
        if !isNewestPage { conversations[id]?.window.hasOlder = true }
        for event in events { emit(event, in: id) }
        if isNewestPage, page.olderCursor != nil, window != nil { conversations[id]?.window.hasOlder = true }
    }

    /// The stored history floor of a conversation.
    func historyFloor(_ id: ConversationID) async throws -> TimelinePosition? {
        let backend = self.backend
        return try await Self.decodeFloor(store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .historyFloor) })
    }

    static func decodeFloor(_ cursor: Cursor?) -> TimelinePosition? {
        guard let text = cursor?.rawValue, let colon = text.firstIndex(of: ":"),
              let micros = Int64(text[..<colon]) else { return nil }
        return TimelinePosition(timestamp: TimelinePosition.date(micros: micros), id: MessageID(String(text[text.index(after: colon)...])))
    }

    /// Fetches the next older history page from the backend; returns how many messages it held.
    @discardableResult
    func fetchOlderHistory(_ id: ConversationID) async throws -> Int {
        let backend = self.backend
        let cursor = try await store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .history) }
        if cursor == Self.historyExhausted { return 0 }
        let page = try await adapter.history(in: id, before: cursor, limit: configuration.pageSize)
        try await ingest(page, in: id, isNewestPage: false)
        return page.messages.count
    }

    func isHistoryExhausted(_ id: ConversationID) async throws -> Bool {
        let backend = self.backend
        return try await store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .history) } == Self.historyExhausted
    }

    /// Handles the live events queued at this moment, in order: connection changes trigger a delta sync; each run
    /// of consecutive changes is reconciled in one store transaction.
    func handleLive(_ events: [AdapterEvent], in id: ConversationID) async {
        var changes: [RemoteChange] = []
        for event in events {
            if case .change(let change) = event {
                changes.append(change)
                continue
            }
            await applyLive(changes, in: id)
            changes.removeAll()
            await handleLiveSignal(event, in: id)
        }
        await applyLive(changes, in: id)
    }

    /// After live changes were dropped for running too far ahead (`maxQueuedLiveChanges`): a delta sync from the
    /// stored cursor brings them back (live changes never move it).
    func resynchronize(_ id: ConversationID, afterDropping dropped: Int) async {
        droppedLiveChanges += dropped
        log(.warning, "\(dropped) live changes of \(id) arrived faster than they could be applied; resynchronizing")
        do { try await synchronize(id) } catch { log(.warning, "resync after dropped live changes failed: \(error)") }
    }

    /// Handles a live event that is not a change.
    private func handleLiveSignal(_ event: AdapterEvent, in id: ConversationID) async {
        guard let state = conversations[id] else { return }
        switch event {
        case .connection(.connected):
            state.isConnected = true
            do { try await synchronize(id) } catch { log(.warning, "sync after reconnect failed: \(error)") }
        case .connection(.disconnected(let reason)):
            state.isConnected = false
            emit(.syncStateChanged(.offline(reason: reason)), in: id)
        case .typing(_, let user, let isTyping):
            remoteTyping(user, isTyping: isTyping, in: id)
        case .change(let change):
            await applyLive([change], in: id)
        }
    }

    /// Reconciles live changes in one transaction; an identical change applied moments ago (duplicate delivery,
    /// replay) is skipped with one hash lookup. If the batch fails, each change is tried alone so one bad change
    /// cannot hold back the others; what still fails is left to the next sync.
    private func applyLive(_ changes: [RemoteChange], in id: ConversationID) async {
        guard let state = conversations[id], !changes.isEmpty else { return }
        var fresh: [RemoteChange] = []
        fresh.reserveCapacity(changes.count)
        for change in changes where state.recentChanges.insert(change) { fresh.append(change) }
        guard !fresh.isEmpty else { return }
        var events: [ConversationEvent] = []
        do {
            let batch = fresh
            events = try await reconcile { reconciler, tx in
                var events: [ConversationEvent] = []
                for change in batch { events += try reconciler.apply(change, tx: tx) }
                return events
            }
        } catch {
            for change in fresh {
                do {
                    events += try await reconcile { reconciler, tx in try reconciler.apply(change, tx: tx) }
                } catch {
                    state.recentChanges.remove(change)
                    log(.warning, "live change not applied: \(error); next sync repairs it")
                    state.resyncRequested = true
                }
            }
        }
        for event in events { emit(event, in: id) }
        for case let message? in events.map(\.message) where message.isOutgoing && message.delivery.isPublished {
            await flushOperations(waitingOn: WaitKey.published(message.id))
        }
        var echoed = false
        for case .message(let remote) in fresh {
            await flushOperations(waitingOn: WaitKey.remote(remote.remoteID, on: backend))
            echoed = echoed || remote.sender == localUser
        }
        if echoed { wake() }  // an echo may unblock a reply waiting for its target's ID
    }

}
