import Foundation
import SwitchboardCore
import SwitchboardStore

/// The persisted quarantine of one bridged pair: source changes the bridge could not bridge for a reason no retry
/// fixes (a key collision it could not place, input the other side refuses, a 4xx answer), set aside with their
/// reason so the pair's cursor moves on and nothing is lost or silent. Operators list, retry and drop entries
/// (`switchboard bridge quarantine`); a retried entry is bridged again by the running bridge's next pass.
public struct BridgeQuarantine: Sendable {
    /// One change set aside.
    public struct Entry: Sendable, Hashable, Codable {
        /// The entry's number in the store (what `retry` and `drop` take).
        public var id: Int64
        /// The backend the change came from.
        public var source: BackendID
        /// The change, as the source delivered it.
        public var change: RemoteChange
        /// Why it could not be bridged.
        public var reason: String
        /// When it was set aside.
        public var at: Date
        /// Whether an operator asked for it to be bridged again.
        public var retryRequested: Bool

        /// The source's ID of the change's message (or of the message a reaction or receipt is on).
        public var remoteID: RemoteID { change.subjectRemoteID }

        /// What kind of change it is.
        public var kind: String { change.kindName }
    }

    /// What an entry is about: a change's subject (one message, one user's reaction with one symbol, one user's
    /// receipt on one message) from one source. Two versions of one change have the same subject.
    struct Subject: Equatable {
        /// The backend the change came from.
        var source: BackendID
        /// A version of the change.
        var change: RemoteChange

        static func == (lhs: Subject, rhs: Subject) -> Bool {
            lhs.source == rhs.source && lhs.change.hasSameSubject(as: rhs.change)
        }
    }

    /// The stored form of an entry (its number is the queue row's).
    private struct Stored: Codable {
        var source: BackendID
        var change: RemoteChange
        var reason: String
        var at: Date
    }

    private let store: any Store
    private let pair: String

    /// The quarantine of the pair bridging conversation `a` with conversation `b` in `store`.
    public init(store: any Store, a: ConversationID, b: ConversationID) {
        self.init(store: store, pair: Bridge.pairKey(a: a, b: b))
    }

    /// The quarantine of the pair `pair` (`Bridge.pairKey`).
    init(store: any Store, pair: String) {
        self.store = store
        self.pair = pair
    }

    /// Every entry, oldest first; `retryRequested` marks those an operator asked to retry.
    public func entries() async throws -> [Entry] {
        try await adoptLegacyEntries()
        return try await heldEntries()
    }

    /// `entries()` without first adopting an older version's entries (a `Bridge` adopted them when it opened).
    func heldEntries() async throws -> [Entry] {
        try await store.read { tx in
            let requested = Set(try requests(tx).compactMap(Self.requestedID))
            return try heldOperations(tx).compactMap { Self.entry($0, retry: requested.contains($0.id)) }
        }
    }

    /// How many changes are held (not counting those waiting for their retry).
    public func count() async throws -> Int {
        try await store.read { try heldOperations($0).count }
    }

    /// Sets `change` of `source` aside with `reason`. An entry for the same change (the same message, reaction or
    /// receipt target) is replaced, so a change read again after a restart, or a newer version of it, is held once.
    func hold(_ change: RemoteChange, from source: BackendID, reason: String) async throws {
        let payload = try JSONEncoder().encode(Stored(source: source, change: change, reason: reason, at: Date()))
        let subject = Subject(source: source, change: change)
        try await store.write { tx in
            for operation in try heldOperations(tx) where Self.entry(operation, retry: false).map(Self.subject) == subject {
                try tx.removeBridgeOperation(operation.id)
            }
            try tx.enqueueBridgeOperation(PendingOperation(waitKey: WaitKey.quarantine, kind: "quarantine",
                                                           payload: payload, createdAt: Date()), pair: pair)
        }
    }

    /// Removes the held entries for the same subject as `change` (a newer version of it was bridged); true when
    /// any were removed.
    @discardableResult
    func release(supersededBy change: RemoteChange, from source: BackendID) async throws -> Bool {
        let subject = Subject(source: source, change: change)
        return try await store.write { tx in
            var released = false
            for operation in try heldOperations(tx) where Self.entry(operation, retry: false).map(Self.subject) == subject {
                try tx.removeBridgeOperation(operation.id)
                released = true
            }
            return released
        }
    }

    /// Asks the running bridge to bridge entry `id` again at its next pass (the entry keeps its number; one that
    /// fails again is held again, under a new number and reason); false when there is no such entry.
    @discardableResult
    public func retry(_ id: Int64) async throws -> Bool {
        try await adoptLegacyEntries()
        return try await store.write { tx in
            guard try heldOperations(tx).contains(where: { $0.id == id }) else { return false }
            if try !requests(tx).contains(where: { Self.requestedID($0) == id }) {
                try tx.enqueueBridgeOperation(PendingOperation(waitKey: WaitKey.quarantineRetry,
                                                               kind: "quarantine-retry", payload: Data(String(id).utf8),
                                                               createdAt: Date()), pair: pair)
            }
            return true
        }
    }

    /// Removes entry `id` for good (the change is not bridged); false when there is no such entry.
    @discardableResult
    public func drop(_ id: Int64) async throws -> Bool {
        try await adoptLegacyEntries()
        return try await store.write { tx in
            guard try heldOperations(tx).contains(where: { $0.id == id }) else { return false }
            try tx.removeBridgeOperation(id)
            for request in try requests(tx) where Self.requestedID(request) == id {
                try tx.removeBridgeOperation(request.id)
            }
            return true
        }
    }

    /// The held entries an operator asked to retry, oldest first; the requests are taken (removed) as they are read.
    func takeRetryRequests() async throws -> [Entry] {
        try await store.write { tx in
            let requests = try requests(tx)
            guard !requests.isEmpty else { return [] }
            let wanted = Set(requests.compactMap(Self.requestedID))
            for request in requests { try tx.removeBridgeOperation(request.id) }
            return try heldOperations(tx).filter { wanted.contains($0.id) }.compactMap { Self.entry($0, retry: true) }
        }
    }

    /// Moves entries that a store written before the bridge kept its own records holds in the engine's queue
    /// (keyed by the pair's old ledger conversation) into the pair's records; retry requests follow their entries'
    /// new numbers. Idempotent: a store without such entries is only read.
    func adoptLegacyEntries() async throws {
        let legacyHeld = WaitKey(stored: "bridge-quarantine:" + pair)
        let legacyRetry = WaitKey(stored: "bridge-quarantine-retry:" + pair)
        guard try await store.read({ try !$0.pendingOperations(waitingOn: legacyHeld).isEmpty
                                || !$0.pendingOperations(waitingOn: legacyRetry).isEmpty }) else { return }
        try await store.write { tx in
            let requested = Set(try tx.pendingOperations(waitingOn: legacyRetry).map { operation in
                try tx.removePending(operation.id)
                return Self.requestedID(operation)
            }.compactMap { $0 })
            for operation in try tx.pendingOperations(waitingOn: legacyHeld) {
                try tx.removePending(operation.id)
                let moved = try tx.enqueueBridgeOperation(PendingOperation(waitKey: WaitKey.quarantine,
                                                                           kind: "quarantine", payload: operation.payload,
                                                                           createdAt: operation.createdAt), pair: pair)
                guard requested.contains(operation.id) else { continue }
                try tx.enqueueBridgeOperation(PendingOperation(waitKey: WaitKey.quarantineRetry,
                                                               kind: "quarantine-retry", payload: Data(String(moved).utf8),
                                                               createdAt: Date()), pair: pair)
            }
        }
    }

    private func heldOperations(_ tx: any StoreTransaction) throws -> [PendingOperation] {
        try tx.bridgeOperations(pair: pair, waitingOn: WaitKey.quarantine)
    }

    private func requests(_ tx: any StoreTransaction) throws -> [PendingOperation] {
        try tx.bridgeOperations(pair: pair, waitingOn: WaitKey.quarantineRetry)
    }

    private static func subject(_ entry: Entry) -> Subject {
        Subject(source: entry.source, change: entry.change)
    }

    /// The entry number a retry request names.
    private static func requestedID(_ request: PendingOperation) -> Int64? {
        Int64(String(decoding: request.payload, as: UTF8.self))
    }

    private static func entry(_ operation: PendingOperation, retry: Bool) -> Entry? {
        guard let stored = try? JSONDecoder().decode(Stored.self, from: operation.payload) else { return nil }
        return Entry(id: operation.id, source: stored.source, change: stored.change, reason: stored.reason, at: stored.at,
                     retryRequested: retry)
    }
}
