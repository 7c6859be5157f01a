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
    var newWaitKeys: Set<WaitKey> = []

    // Each function below gathers the facts inside the transaction, asks `ReconcileDecision` (pure, tested as
    // tables) what to do, and does it.

    /// Resolves an incoming message to its `MessageID`: the ID map by its backend ID, else its carried key when
    /// the claim holds (DESIGN §2), else the deterministic derivation.
    mutating func resolve(_ remote: RemoteMessage, tx: any StoreTransaction) throws -> MessageID {
        try identify(remote, mapped: tx.messageID(backend: backend, remoteID: remote.remoteID), tx: tx).id
    }

    /// The identity of an incoming message, given what the ID map says of its backend ID; a carried key refused as
    /// not the sender's to use is counted and logged.
    private mutating func identify(_ remote: RemoteMessage, mapped: MessageID?,
                                   tx: any StoreTransaction) throws -> ReconcileDecision.Identity {
        let identity = try ReconcileDecision.identity(mapped.map { .mapped($0) } ?? .unmapped(resolution(of: remote, tx: tx)))
        if let key = identity.refusedKey, let reason = identity.collision {
            keyCollisions += 1
            warnings.append("message \(remote.remoteID) from \(remote.sender) carries key \(key), which is not theirs to "
                + "use (\(reason)); kept apart as \(identity.id)")
        }
        return identity
    }

    /// Resolves a message the ID map does not know under `MessageIdentity`'s rule, from what the message rows say
    /// of each candidate ID. Its key binds only when that `MessageID` is new here or its stored message has the
    /// same conversation and sender (the local user's own echo, say); a key that names another party's message is
    /// a collision, and the message keeps a derived ID of its own, so nobody can edit, delete or replace another
    /// party's message by carrying its key.
    private func resolution(of remote: RemoteMessage, tx: any StoreTransaction) throws -> MessageIdentity.Resolution {
        let backend = self.backend
        return try MessageIdentity.resolve(remote, on: backend) { candidate in
            var evidence = KeyEvidence()
            if let other = try tx.remoteID(of: candidate, backend: backend, part: 0), other != remote.remoteID {
                evidence.otherRemoteOnBackend = other
            }
            if let owner = try tx.messageOwner(candidate) {
                evidence.owner = KeyScope(backend: backend, conversation: owner.conversation, sender: owner.sender)
            }
            return evidence
        }
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
        let identity = try identify(remote, mapped: tx.messageID(backend: backend, remoteID: remote.remoteID), tx: tx)
        let id = identity.id
        if identity.isFirstSighting {
            // The resolution checked that `id` names no other message here, so the mapping is new.
            try tx.insertMappingIfAbsent(IDMapping(messageID: id, backend: backend, conversation: remote.conversation,
                                                   remoteID: remote.remoteID))
        }
        let replyTarget = try remote.replyTo.flatMap { target in try tx.messageID(backend: backend, remoteID: target) }
        let arriving = ReconcileDecision.arriving(remote, as: id, replyTarget: replyTarget, backend: backend,
                                                  localUser: localUser)
        // A first sighting is almost always new: insert first, and read the row only when one exists (an own
        // message coming home before its mapping, say). Inserted, it is the decision's `insert`.
        if identity.isFirstSighting, try tx.insertMessageIfAbsent(arriving) { return [.messageUpserted(arriving)] }
        switch ReconcileDecision.landing(arriving, on: try tx.message(id)) {
        case .insert(let message):
            try tx.insertNewMessage(message)
            return [.messageUpserted(message)]
        case .duplicate:
            return []
        case .update(let row, let confirmsEcho, let events):
            if confirmsEcho { try tx.removeOutbox(id) }
            try tx.upsertMessage(row)
            return events
        }
    }

    private mutating func applyReaction(_ reaction: RemoteReaction, tx: any StoreTransaction) throws -> [ConversationEvent] {
        let target = try tx.messageID(backend: backend, remoteID: reaction.target).flatMap { id in try tx.message(id) }
        // `reactionsInFlight`: the reaction changes of the local user's on their way, per message.
        let inFlight = target.map { reactionsInFlight[$0.id, default: 0] > 0 } ?? false
        switch ReconcileDecision.reaction(reaction, on: target, localChangeInFlight: inFlight, localUser: localUser) {
        case .waitForTarget:
            try enqueueIncoming(.reaction(reaction), target: reaction.target, tx: tx)
            return []
        case .keepLocal, .unchanged:
            return []
        case .apply(let message):
            try tx.upsertMessage(message)
            return [.reactionsChanged(message)]
        }
    }

    private mutating func applyReceipt(_ remote: RemoteReceipt, tx: any StoreTransaction) throws -> [ConversationEvent] {
        let target = try tx.messageID(backend: backend, remoteID: remote.target).flatMap { id in try tx.message(id) }
        let current = try target.flatMap { message in try tx.receipts(of: message.id).first { $0.user == remote.user }?.state }
        switch ReconcileDecision.receipt(remote, on: target, current: current, localUser: localUser) {
        case .waitForTarget:
            try enqueueIncoming(.receipt(remote), target: remote.target, tx: tx)
            return []
        case .stale:
            return []
        case .record(let receipt, let message, let climbs):
            try tx.upsertReceipt(receipt)
            if climbs { try tx.upsertMessage(message) }
            return [.receiptChanged(message, receipt)]
        }
    }

    private mutating func enqueueIncoming(_ change: RemoteChange, target: RemoteID, tx: any StoreTransaction) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let payload = try encoder.encode(change)
        let key = WaitKey.remote(target, on: backend)
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
