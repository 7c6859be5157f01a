import Foundation
import SwitchboardCore

/// One row of the ID map: a message's identity on one backend.
public struct IDMapping: Sendable, Hashable, Codable {
    /// The internal identity.
    public var messageID: MessageID
    /// The backend.
    public var backend: BackendID
    /// The conversation on that backend.
    public var conversation: ConversationID
    /// The backend's ID.
    public var remoteID: RemoteID
    /// Which part of the message (0 unless a backend splits one message into several).
    public var part: Int

    /// Builds a mapping.
    public init(messageID: MessageID, backend: BackendID, conversation: ConversationID, remoteID: RemoteID, part: Int = 0) {
        self.messageID = messageID
        self.backend = backend
        self.conversation = conversation
        self.remoteID = remoteID
        self.part = part
    }
}

/// Who a stored message belongs to: its conversation and sender.
public struct MessageOwner: Sendable, Hashable {
    /// The conversation the message is stored in.
    public var conversation: ConversationID
    /// Its sender.
    public var sender: UserID

    /// An owner from its parts.
    public init(conversation: ConversationID, sender: UserID) {
        self.conversation = conversation
        self.sender = sender
    }
}

/// Where an outbox entry stands.
public enum OutboxStatus: String, Sendable, Hashable, Codable {
    /// Waiting for its attachments to upload before it can be prepared.
    case awaitingUploads
    /// Prepared and due at `nextAttemptAt` (unless `noSend`).
    case queued
    /// Attempts exhausted or refused; waits for a user retry.
    case failed
}

/// A message waiting to be published, persisted so a crash loses nothing.
public struct OutboxEntry: Sendable, Hashable, Codable {
    /// The message (and idempotency key).
    public var messageID: MessageID
    /// The backend it goes to.
    public var backend: BackendID
    /// The conversation.
    public var conversation: ConversationID
    /// The adapter's prepared request; nil while attachments upload.
    public var prepared: PreparedMessage?
    /// Held until published by name (noSend).
    public var noSend: Bool
    /// Publish attempts made so far.
    public var attempts: Int
    /// Earliest time of the next attempt.
    public var nextAttemptAt: Date
    /// The last failure, for people (never contains secrets).
    public var lastError: String?
    /// Status.
    public var status: OutboxStatus
    /// When the entry was created; the worker publishes oldest first.
    public var createdAt: Date

    /// Builds an outbox entry.
    public init(messageID: MessageID, backend: BackendID, conversation: ConversationID, prepared: PreparedMessage?,
                noSend: Bool, attempts: Int = 0, nextAttemptAt: Date, lastError: String? = nil,
                status: OutboxStatus, createdAt: Date) {
        self.messageID = messageID
        self.backend = backend
        self.conversation = conversation
        self.prepared = prepared
        self.noSend = noSend
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.lastError = lastError
        self.status = status
        self.createdAt = createdAt
    }
}

/// What a sync cursor tracks.
public enum CursorKind: String, Sendable, Hashable, Codable {
    /// The change feed: delta sync resumes after it.
    case changes
    /// The oldest history page fetched: paging backwards resumes before it.
    case history
    /// The local position of the oldest message fetched by contiguous history paging (`micros:id`);
    /// stored rows older than it (edits of old messages seen in a delta sync) are not contiguous.
    case historyFloor
}

/// An operation whose target is not mapped yet; it waits in the store until the mapping appears.
public struct PendingOperation: Sendable, Hashable, Codable {
    /// Row identity, assigned by the store (0 before insertion).
    public var id: Int64
    /// What the operation waits for.
    public var waitKey: WaitKey
    /// The operation's kind, e.g. `edit`, `delete`, `reaction`, `receipt`.
    public var kind: String
    /// Its encoded arguments.
    public var payload: Data
    /// When it was queued.
    public var createdAt: Date

    /// Builds a pending operation.
    public init(id: Int64 = 0, waitKey: WaitKey, kind: String, payload: Data, createdAt: Date) {
        self.id = id
        self.waitKey = waitKey
        self.kind = kind
        self.payload = payload
        self.createdAt = createdAt
    }
}

/// The operations one transaction offers; every logical step of the engine runs in one transaction. The bridge's
/// own per-pair records are in `BridgeRecordTransaction`.
public protocol StoreTransaction: BridgeRecordTransaction {
    /// The message with its attachments and reactions, or nil.
    func message(_ id: MessageID) throws -> Message?
    /// The conversation and sender of the message stored under `id`, or nil (who holds that ID).
    func messageOwner(_ id: MessageID) throws -> MessageOwner?
    /// Inserts or replaces a message together with its attachments and reactions.
    func upsertMessage(_ message: Message) throws
    /// Inserts a message the caller has just seen absent in this transaction (a faster `upsertMessage`).
    func insertNewMessage(_ message: Message) throws
    /// Inserts the message (with its attachments and reactions) unless one with its ID exists, which is left as
    /// it was; returns whether it was inserted.
    func insertMessageIfAbsent(_ message: Message) throws -> Bool
    /// Moves a message from delivery state `expected` to `state` (nothing else changes); false when the message
    /// is absent or in another state.
    @discardableResult
    func updateDelivery(of id: MessageID, from expected: DeliveryState, to state: DeliveryState) throws -> Bool
    /// `updateDelivery` for many messages at once; returns how many moved.
    @discardableResult
    func updateDeliveries(of ids: [MessageID], from expected: DeliveryState, to state: DeliveryState) throws -> Int
    /// Removes a message and everything hanging off it (attachments, reactions, receipts, mappings, outbox).
    func removeMessage(_ id: MessageID) throws
    /// Up to `limit` messages of a conversation strictly before `position` (newest first); the newest when nil.
    func messages(in conversation: ConversationID, before position: TimelinePosition?, limit: Int) throws -> [Message]
    /// Up to `limit` messages strictly after `position` (oldest first).
    func messages(in conversation: ConversationID, after position: TimelinePosition, limit: Int) throws -> [Message]
    /// How many messages a conversation holds locally.
    func messageCount(in conversation: ConversationID) throws -> Int
    /// Every message that is not yet published or failed (draft, pending, uploading, sending, failed).
    func unfinishedMessages() throws -> [Message]

    /// Replaces one attachment's row (upload state, remote location) of `message`.
    func updateAttachment(_ attachment: Attachment, of message: MessageID) throws

    /// Records or replaces the receipt of `(message, user)`.
    func upsertReceipt(_ receipt: Receipt) throws
    /// Receipts of a message.
    func receipts(of message: MessageID) throws -> [Receipt]

    /// Records a mapping; a conflicting row on either unique side throws `conflict`; an identical row is a no-op.
    func insertMapping(_ mapping: IDMapping) throws
    /// Records a mapping unless either unique side is already taken (then nothing changes); true when inserted.
    @discardableResult
    func insertMappingIfAbsent(_ mapping: IDMapping) throws -> Bool
    /// The message a backend ID maps to.
    func messageID(backend: BackendID, remoteID: RemoteID) throws -> MessageID?
    /// The backend ID of a message part.
    func remoteID(of message: MessageID, backend: BackendID, part: Int) throws -> RemoteID?
    /// All mappings of a message.
    func mappings(of message: MessageID) throws -> [IDMapping]

    /// Inserts or replaces an outbox entry.
    func upsertOutbox(_ entry: OutboxEntry) throws
    /// The outbox entry of a message.
    func outboxEntry(_ message: MessageID) throws -> OutboxEntry?
    /// Removes a message's outbox entry.
    func removeOutbox(_ message: MessageID) throws
    /// Queued, non-noSend entries of `backend` due at `now`, oldest first.
    func dueOutbox(backend: BackendID, now: Date, limit: Int) throws -> [OutboxEntry]
    /// Every outbox entry of `backend`, oldest first.
    func outbox(backend: BackendID) throws -> [OutboxEntry]

    /// A stored sync cursor.
    func cursor(conversation: ConversationID, backend: BackendID, kind: CursorKind) throws -> Cursor?
    /// Stores (or clears with nil) a sync cursor.
    func setCursor(_ cursor: Cursor?, conversation: ConversationID, backend: BackendID, kind: CursorKind) throws

    /// Queues an operation waiting for a mapping; returns its row id.
    @discardableResult func enqueuePending(_ operation: PendingOperation) throws -> Int64
    /// Operations waiting on `waitKey`, oldest first.
    func pendingOperations(waitingOn waitKey: WaitKey) throws -> [PendingOperation]
    /// Every waiting operation, oldest first.
    func allPendingOperations() throws -> [PendingOperation]
    /// The keys among `keys` that at least one operation waits on.
    func waitKeys(among keys: [WaitKey]) throws -> Set<WaitKey>
    /// Removes a waiting operation.
    func removePending(_ id: Int64) throws
}

/// Persistence behind one protocol: SQLite embedded, PostgreSQL shared.
///
/// Async code calls `read` and `write`, which run the transaction on the store's own threads (its
/// `executor`) and suspend the caller meanwhile, so Swift's cooperative pool never waits on a lock, a disk or a
/// database server. `readBlocking` and `writeBlocking` run it on the calling thread: for threads that may block
/// (a server's request threads, command-line set-up, tests).
public protocol Store: Sendable {
    /// Runs `body` in one write transaction (IMMEDIATE) on the calling thread; any throw rolls back and rethrows.
    func writeBlocking<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// Runs `body` against a consistent read snapshot on the calling thread.
    func readBlocking<T>(_ body: (any StoreTransaction) throws -> T) throws -> T
    /// The threads `read` and `write` run their transactions on.
    var executor: BlockingExecutor { get }
}

extension Store {
    /// Runs `body` in one write transaction on the store's threads; any throw rolls back and rethrows.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await executor.run { try self.writeBlocking(body) }
    }

    /// Runs `body` against a consistent read snapshot on the store's threads.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreTransaction) throws -> T) async throws -> T {
        try await executor.run { try self.readBlocking(body) }
    }
}

/// A store that also hands out named, expiring leases, so several workers sharing it each own distinct work
/// (a bridge's conversation pair) and take over the work of a worker that died.
///
/// Every operation is atomic across processes sharing the store. `now` is the caller's clock: workers sharing a
/// store must agree on time to within a small fraction of `ttl`. The operations block the calling thread; async
/// code uses the `async` forms, which run on the store's `executor`.
public protocol LeaseStore: Store {
    /// Takes the lease `name` for `owner` until `now + ttl` when it is free, expired at `now`, or already held by
    /// `owner` (which renews it); returns whether `owner` holds it afterwards.
    func acquireLeaseBlocking(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool
    /// Extends `owner`'s lease to `now + ttl`; false when another owner took it over or it was released. A lease
    /// that expired but was taken by nobody is still `owner`'s and is renewed.
    func renewLeaseBlocking(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool
    /// Gives up the lease when `owner` holds it; does nothing otherwise.
    func releaseLeaseBlocking(_ name: String, owner: String) throws
    /// The owner of the lease at `now`, or nil when it is free or expired.
    func leaseOwnerBlocking(_ name: String, now: Date) throws -> String?
}

extension LeaseStore {
    /// Takes or renews the lease `name` for `owner` on the store's threads; whether `owner` holds it afterwards.
    public func acquireLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) async throws -> Bool {
        try await executor.run { try self.acquireLeaseBlocking(name, owner: owner, ttl: ttl, now: now) }
    }

    /// Extends `owner`'s lease on the store's threads; false when another owner took it over or it was released.
    public func renewLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) async throws -> Bool {
        try await executor.run { try self.renewLeaseBlocking(name, owner: owner, ttl: ttl, now: now) }
    }

    /// Gives up `owner`'s lease on the store's threads; does nothing when `owner` does not hold it.
    public func releaseLease(_ name: String, owner: String) async throws {
        try await executor.run { try self.releaseLeaseBlocking(name, owner: owner) }
    }

    /// The owner of the lease at `now`, read on the store's threads; nil when it is free or expired.
    public func leaseOwner(_ name: String, now: Date) async throws -> String? {
        try await executor.run { try self.leaseOwnerBlocking(name, now: now) }
    }
}

extension StoreTransaction {
    /// Reads the whole message (stores without a single-statement path).
    public func messageOwner(_ id: MessageID) throws -> MessageOwner? {
        try message(id).map { MessageOwner(conversation: $0.conversation, sender: $0.sender) }
    }

    /// Stores without a dedicated insert path upsert.
    public func insertNewMessage(_ message: Message) throws { try upsertMessage(message) }

    /// Reads, then inserts when absent (stores without a single-statement path).
    public func insertMessageIfAbsent(_ message: Message) throws -> Bool {
        guard try self.message(message.id) == nil else { return false }
        try insertNewMessage(message)
        return true
    }

    /// Reads the message and upserts it with the new state (stores without a single-statement path).
    @discardableResult
    public func updateDelivery(of id: MessageID, from expected: DeliveryState, to state: DeliveryState) throws -> Bool {
        guard var message = try message(id), message.delivery == expected else { return false }
        message.delivery = state
        try upsertMessage(message)
        return true
    }

    /// One `updateDelivery` per message (stores without a single-statement path).
    @discardableResult
    public func updateDeliveries(of ids: [MessageID], from expected: DeliveryState, to state: DeliveryState) throws -> Int {
        var moved = 0
        for id in ids where try updateDelivery(of: id, from: expected, to: state) { moved += 1 }
        return moved
    }

    /// One `pendingOperations(waitingOn:)` per key (stores without a single-statement path).
    public func waitKeys(among keys: [WaitKey]) throws -> Set<WaitKey> {
        Set(try keys.filter { !(try pendingOperations(waitingOn: $0).isEmpty) })
    }

    /// Checks both unique sides, then inserts (stores without a single-statement path).
    @discardableResult
    public func insertMappingIfAbsent(_ mapping: IDMapping) throws -> Bool {
        guard try messageID(backend: mapping.backend, remoteID: mapping.remoteID) == nil,
              try remoteID(of: mapping.messageID, backend: mapping.backend, part: mapping.part) == nil else { return false }
        try insertMapping(mapping)
        return true
    }
}
