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
        var cursor = try store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .changes) }
        if cursor == nil {
            // First open: take the feed position first, then the newest page; the overlap is deduplicated.
            let latest = try await adapter.latestCursor(in: id)
            let page = try await adapter.history(in: id, before: nil, limit: configuration.pageSize)
            try ingest(page, in: id, isNewestPage: true)
            try store.write { tx in
                try tx.setCursor(latest ?? Cursor("0"), conversation: id, backend: backend, kind: .changes)
            }
            cursor = latest ?? Cursor("0")
        }
        while true {
            let batch = try await adapter.changes(in: id, after: cursor, limit: configuration.syncBatchSize)
            let events = try store.write { tx -> [ConversationEvent] in
                var events: [ConversationEvent] = []
                for change in batch.changes { events += try apply(change, tx: tx) }
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
    func ingest(_ page: HistoryPage, in id: ConversationID, isNewestPage: Bool) throws {
        let backend = self.backend
        let (events, floor) = try store.write { tx -> ([ConversationEvent], TimelinePosition?) in
            var events: [ConversationEvent] = []
            for message in page.messages { events += try apply(.message(message), tx: tx) }
            for reaction in page.reactions { events += try apply(.reaction(reaction), tx: tx) }
            for receipt in page.receipts { events += try apply(.receipt(receipt), tx: tx) }
            let existing = try tx.cursor(conversation: id, backend: backend, kind: .history)
            guard existing != Self.historyExhausted else { return (events, nil) }
            try tx.setCursor(page.olderCursor ?? Self.historyExhausted, conversation: id, backend: backend, kind: .history)
            var floor = try Self.decodeFloor(tx.cursor(conversation: id, backend: backend, kind: .historyFloor))
            if page.olderCursor == nil {
                floor = nil  // the beginning: everything stored is contiguous
            } else {
                for remote in page.messages {
                    guard let position = try tx.message(resolve(remote, tx: tx))?.position else { continue }
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
    func historyFloor(_ id: ConversationID) throws -> TimelinePosition? {
        let backend = self.backend
        return try Self.decodeFloor(store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .historyFloor) })
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
        let cursor = try store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .history) }
        if cursor == Self.historyExhausted { return 0 }
        let page = try await adapter.history(in: id, before: cursor, limit: configuration.pageSize)
        try ingest(page, in: id, isNewestPage: false)
        return page.messages.count
    }

    func isHistoryExhausted(_ id: ConversationID) throws -> Bool {
        let backend = self.backend
        return try store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .history) } == Self.historyExhausted
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
        do { try await synchronize(id) } catch { log(.debug, "resync after dropped live changes failed: \(error)") }
    }

    /// Handles a live event that is not a change.
    private func handleLiveSignal(_ event: AdapterEvent, in id: ConversationID) async {
        guard let state = conversations[id] else { return }
        switch event {
        case .connection(.connected):
            state.isConnected = true
            do { try await synchronize(id) } catch { log(.debug, "sync after reconnect failed: \(error)") }
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
            events = try store.write { tx in
                var events: [ConversationEvent] = []
                for change in fresh { events += try apply(change, tx: tx) }
                return events
            }
        } catch {
            for change in fresh {
                do {
                    events += try store.write { tx in try apply(change, tx: tx) }
                } catch {
                    state.recentChanges.remove(change)
                    log(.warning, "live change not applied: \(error); next sync repairs it")
                    state.resyncRequested = true
                }
            }
        }
        for event in events { emit(event, in: id) }
        for case let message? in events.map(\.message) where message.isOutgoing && message.delivery.isPublished {
            await flushOperations(waitingOn: Self.publishedKey(message.id))
        }
        var echoed = false
        for case .message(let remote) in fresh {
            await flushOperations(waitingOn: Self.remoteKey(backend, remote.remoteID))
            echoed = echoed || remote.sender == localUser
        }
        if echoed { wake() }  // an echo may unblock a reply waiting for its target's ID
    }

    // MARK: - Reconciliation

    /// Resolves an incoming message to its `MessageID`: the ID map by its backend ID, else its carried key when
    /// the claim holds (DESIGN §2), else the deterministic derivation.
    func resolve(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> MessageID {
        if let mapped = try tx.messageID(backend: backend, remoteID: remote.remoteID) { return mapped }
        return try resolveUnmapped(remote, tx: tx)
    }

    /// Resolves a message the ID map does not know. Its key binds only when that `MessageID` is new here or its
    /// stored message has the same conversation and sender (the local user's own echo, say); a key that names
    /// another party's message is a collision: counted, logged, and the message keeps a derived ID of its own, so
    /// nobody can edit, delete or replace another party's message by carrying its key.
    private func resolveUnmapped(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> MessageID {
        let backend = self.backend
        let resolution = try MessageIdentity.resolve(remote, on: backend) { candidate in
            var evidence = KeyEvidence()
            if let other = try tx.remoteID(of: candidate, backend: backend, part: 0), other != remote.remoteID {
                evidence.otherRemoteOnBackend = other
            }
            if let owner = try tx.messageOwner(candidate) {
                evidence.owner = KeyScope(backend: backend, conversation: owner.conversation, sender: owner.sender)
            }
            return evidence
        }
        if let key = resolution.refusedKey, let reason = resolution.collision {
            keyCollisions += 1
            log(.warning, "message \(remote.remoteID) from \(remote.sender) carries key \(key), which is not theirs to "
                + "use (\(reason)); kept apart as \(resolution.id)")
        }
        return resolution.id
    }

    /// Applies one change inside a transaction and returns the events it causes (none when nothing changed).
    func apply(_ change: RemoteChange, tx: any StoreTransaction) throws -> [ConversationEvent] {
        switch change {
        case .message(let remote): return try applyMessage(remote, tx: tx)
        case .reaction(let reaction): return try applyReaction(reaction, tx: tx)
        case .receipt(let receipt): return try applyReceipt(receipt, tx: tx)
        }
    }

    private func applyMessage(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> [ConversationEvent] {
        let backend = self.backend
        let mapped = try tx.messageID(backend: backend, remoteID: remote.remoteID)
        let id = try mapped ?? resolveUnmapped(remote, tx: tx)
        if mapped == nil {
            // The resolution checked that `id` names no other message here, so the mapping is new.
            try tx.insertMappingIfAbsent(IDMapping(messageID: id, backend: backend, conversation: remote.conversation,
                                                   remoteID: remote.remoteID))
        }
        var replyTo: MessageID?
        if let target = remote.replyTo {
            replyTo = try tx.messageID(backend: backend, remoteID: target) ?? MessageID.derived(backend: backend, remote: target)
        }
        let isOwn = remote.sender == localUser
        let arriving = Message(id: id, conversation: remote.conversation, sender: remote.sender,
                               content: MessageContent(text: remote.text, replyTo: replyTo, attachments: remote.attachments,
                                                       metadata: remote.metadata),
                               timestamp: remote.sentAt.roundedToMicroseconds, hasServerTimestamp: true,
                               editedAt: remote.editedAt?.roundedToMicroseconds,
                               deletedAt: remote.deletedAt?.roundedToMicroseconds,
                               delivery: isOwn ? .sent : .received, isOutgoing: isOwn)
        // Unmapped is almost always new (a repeat of a stored message finds its mapping): insert first, and read
        // the row only when one exists (an own message coming home before its mapping, say).
        if mapped == nil, try tx.insertMessageIfAbsent(arriving) { return [.messageUpserted(arriving)] }
        guard var message = try tx.message(id) else {
            try tx.insertNewMessage(arriving)
            return [.messageUpserted(arriving)]
        }
        let before = message
        if !message.hasServerTimestamp || message.timestamp != remote.sentAt.roundedToMicroseconds {
            message.timestamp = remote.sentAt.roundedToMicroseconds
            message.hasServerTimestamp = true
        }
        if message.isOutgoing && !message.delivery.isPublished {
            // The echo proves the backend has it: whatever the publish call said, it is sent.
            message.delivery = .sent
            try tx.removeOutbox(id)
        }
        message.content.attachments = mergeAttachments(local: message.content.attachments, remote: remote.attachments)
        var events: [ConversationEvent] = []
        let remoteEdited = remote.editedAt?.roundedToMicroseconds
        if remote.text != message.content.text, remote.deletedAt == nil, message.deletedAt == nil {
            // A copy older than our own edit (the original, or an earlier edit) must not undo it.
            let isOlderThanLocalEdit = message.editedAt.map { local in remoteEdited.map { $0 < local } ?? true } ?? false
            if !isOlderThanLocalEdit {
                message.content.text = remote.text
                message.editedAt = remoteEdited ?? message.editedAt
                events.append(.contentEdited(message))
            }
        }
        if let deleted = remote.deletedAt, message.deletedAt == nil {
            message.deletedAt = deleted.roundedToMicroseconds
            message.content.text = remote.text
            events.append(.deleted(message))
        }
        if message == before { return [] }
        try tx.upsertMessage(message)
        if events.isEmpty { events.append(.messageUpserted(message)) } else {
            events = events.map { event in
                switch event {
                case .contentEdited: .contentEdited(message)
                case .deleted: .deleted(message)
                default: event
                }
            }
            if message.delivery != before.delivery || message.timestamp != before.timestamp {
                events.insert(.messageUpserted(message), at: 0)
            }
        }
        return events
    }

    /// The remote attachment set wins (a partial failure may have split it); local files stay for display.
    private func mergeAttachments(local: [Attachment], remote: [Attachment]) -> [Attachment] {
        guard !remote.isEmpty else { return local }
        return remote.map { incoming in
            var merged = incoming
            if let mine = local.first(where: { $0.id == incoming.id || $0.sha256 == incoming.sha256 }) {
                merged.id = mine.id
                merged.localPath = mine.localPath
            }
            merged.upload = .uploaded
            return merged
        }
    }

    private func applyReaction(_ reaction: RemoteReaction, tx: any StoreTransaction) throws -> [ConversationEvent] {
        guard let id = try tx.messageID(backend: backend, remoteID: reaction.target),
              var message = try tx.message(id) else {
            try enqueueIncoming(.reaction(reaction), target: reaction.target, tx: tx)
            return []
        }
        // An echo of the local user's own reaction while a change of theirs on this message is on its way is not
        // applied (see `reactionsInFlight`): the local state is what they asked for last.
        if reaction.user == localUser, reactionsInFlight[id, default: 0] > 0 { return [] }
        var reactions = message.reactions
        let existing = reactions.firstIndex { $0.user == reaction.user && $0.symbol == reaction.symbol }
        if reaction.isActive {
            if existing == nil { reactions.append(Reaction(user: reaction.user, symbol: reaction.symbol, at: reaction.at.roundedToMicroseconds)) }
        } else if let existing {
            reactions.remove(at: existing)
        }
        guard reactions != message.reactions else { return [] }
        message.reactions = reactions
        try tx.upsertMessage(message)
        return [.reactionsChanged(message)]
    }

    private func applyReceipt(_ remote: RemoteReceipt, tx: any StoreTransaction) throws -> [ConversationEvent] {
        guard let id = try tx.messageID(backend: backend, remoteID: remote.target), var message = try tx.message(id) else {
            try enqueueIncoming(.receipt(remote), target: remote.target, tx: tx)
            return []
        }
        let existing = try tx.receipts(of: id).first { $0.user == remote.user }
        if let existing, existing.state >= remote.state { return [] }
        let receipt = Receipt(message: id, user: remote.user, state: remote.state, at: remote.at.roundedToMicroseconds)
        try tx.upsertReceipt(receipt)
        if message.isOutgoing && remote.user != localUser && message.delivery.isPublished {
            let climbed: DeliveryState = remote.state == .read ? .read : .delivered
            if climbed.rank > message.delivery.rank {
                message.delivery = climbed
                try tx.upsertMessage(message)
            }
        }
        return [.receiptChanged(message, receipt)]
    }

    private func enqueueIncoming(_ change: RemoteChange, target: RemoteID, tx: any StoreTransaction) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let payload = try encoder.encode(change)
        let key = Self.remoteKey(backend, target)
        // A refetch or redelivery of the same waiting change must not queue it twice.
        guard try !tx.pendingOperations(waitingOn: key).contains(where: { $0.payload == payload }) else { return }
        try tx.enqueuePending(PendingOperation(waitKey: key, kind: "incoming", payload: payload, createdAt: now))
        pendingWaitKeys.insert(key)
    }

    static func remoteKey(_ backend: BackendID, _ remote: RemoteID) -> String { "remote:\(backend.rawValue):\(remote.rawValue)" }
}
