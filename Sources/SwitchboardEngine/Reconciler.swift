import Foundation
import SwitchboardCore
import SwitchboardStore

/// Reconciles incoming changes with the store inside one transaction, on the store's threads: it carries what it
/// needs from the `ChatClient` (backend, local user, reactions in flight, the time) and brings back what the
/// client must take in afterwards (collisions counted, warnings, new wait keys), so no actor state is touched
/// off the actor.
struct Reconciler: Sendable {
    /// The client's backend.
    let backend: BackendID
    /// The client's own user.
    let localUser: UserID
    /// The client's reactions on their way, per message, when the transaction began.
    let reactionsInFlight: [MessageID: Int]
    /// The client's clock when the transaction began.
    let now: Date
    /// Carried keys refused as collisions.
    var keyCollisions = 0
    /// Lines to log at warning level once the transaction committed.
    var warnings: [String] = []
    /// Wait keys of incoming changes queued for a target not yet here.
    var newWaitKeys: Set<String> = []

    /// Resolves an incoming message to its `MessageID`: the ID map by its backend ID, else its carried key when
    /// the claim holds (DESIGN §2), else the deterministic derivation.
    mutating func resolve(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> MessageID {
        if let mapped = try tx.messageID(backend: backend, remoteID: remote.remoteID) { return mapped }
        return try resolveUnmapped(remote, tx: tx)
    }

    /// Resolves a message the ID map does not know. Its key binds only when that `MessageID` is new here or its
    /// stored message has the same conversation and sender (the local user's own echo, say); a key that names
    /// another party's message is a collision: counted, logged, and the message keeps a derived ID of its own, so
    /// nobody can edit, delete or replace another party's message by carrying its key.
    private mutating func resolveUnmapped(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> MessageID {
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
            warnings.append("message \(remote.remoteID) from \(remote.sender) carries key \(key), which is not theirs to "
                + "use (\(reason)); kept apart as \(resolution.id)")
        }
        return resolution.id
    }

    /// Applies one change inside a transaction and returns the events it causes (none when nothing changed).
    mutating func apply(_ change: RemoteChange, tx: any StoreTransaction) throws -> [ConversationEvent] {
        switch change {
        case .message(let remote): return try applyMessage(remote, tx: tx)
        case .reaction(let reaction): return try applyReaction(reaction, tx: tx)
        case .receipt(let receipt): return try applyReceipt(receipt, tx: tx)
        }
    }

    private mutating func applyMessage(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> [ConversationEvent] {
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
        message.content.attachments = Self.mergeAttachments(local: message.content.attachments, remote: remote.attachments)
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
    private static func mergeAttachments(local: [Attachment], remote: [Attachment]) -> [Attachment] {
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

    private mutating func applyReaction(_ reaction: RemoteReaction, tx: any StoreTransaction) throws -> [ConversationEvent] {
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

    private mutating func applyReceipt(_ remote: RemoteReceipt, tx: any StoreTransaction) throws -> [ConversationEvent] {
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

    private mutating func enqueueIncoming(_ change: RemoteChange, target: RemoteID, tx: any StoreTransaction) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let payload = try encoder.encode(change)
        let key = ChatClient.remoteKey(backend, target)
        // A refetch or redelivery of the same waiting change must not queue it twice.
        guard try !tx.pendingOperations(waitingOn: key).contains(where: { $0.payload == payload }) else { return }
        try tx.enqueuePending(PendingOperation(waitKey: key, kind: "incoming", payload: payload, createdAt: now))
        newWaitKeys.insert(key)
    }
}

extension ChatClient {
    /// A reconciler carrying the client's state as it is now.
    func reconciler() -> Reconciler {
        Reconciler(backend: backend, localUser: localUser, reactionsInFlight: reactionsInFlight, now: now)
    }

    /// Runs `body` with a fresh reconciler in one write transaction, then takes in what the reconciler brought back.
    func reconcile<T: Sendable>(_ body: @escaping @Sendable (inout Reconciler, any StoreTransaction) throws -> T) async throws -> T {
        let start = reconciler()
        let (result, finished) = try await store.write { tx in
            var reconciler = start
            let result = try body(&reconciler, tx)
            return (result, reconciler)
        }
        keyCollisions += finished.keyCollisions
        for warning in finished.warnings { log(.warning, warning) }
        pendingWaitKeys.formUnion(finished.newWaitKeys)
        return result
    }
}
