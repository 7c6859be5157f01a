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
        public var remoteID: RemoteID {
            switch change {
            case .message(let message): message.remoteID
            case .reaction(let reaction): reaction.target
            case .receipt(let receipt): receipt.target
            }
        }

        /// What kind of change it is.
        public var kind: String {
            switch change {
            case .message(let message): message.deletedAt != nil ? "delete" : (message.editedAt != nil ? "edit" : "message")
            case .reaction: "reaction"
            case .receipt: "receipt"
            }
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
    private let held: String
    private let retrying: String

    /// The quarantine of the pair bridging conversation `a` with conversation `b` in `store`.
    public init(store: any Store, a: ConversationID, b: ConversationID) {
        self.init(store: store, ledger: Bridge.ledgerConversation(a: a, b: b))
    }

    /// The quarantine of the pair whose ledger is `ledger`.
    init(store: any Store, ledger: ConversationID) {
        self.store = store
        held = "bridge-quarantine:" + ledger.rawValue
        retrying = "bridge-quarantine-retry:" + ledger.rawValue
    }

    /// Every entry, oldest first; `retryRequested` marks those an operator asked to retry.
    public func entries() throws -> [Entry] {
        try store.read { tx in
            let requested = Set(try tx.pendingOperations(waitingOn: retrying).compactMap(Self.requestedID))
            return try tx.pendingOperations(waitingOn: held).compactMap { Self.entry($0, retry: requested.contains($0.id)) }
        }
    }

    /// How many changes are held (not counting those waiting for their retry).
    public func count() throws -> Int {
        try store.read { try $0.pendingOperations(waitingOn: held).count }
    }

    /// Sets `change` of `source` aside with `reason`. An entry for the same change (the same message, reaction or
    /// receipt target) is replaced, so a change read again after a restart, or a newer version of it, is held once.
    func hold(_ change: RemoteChange, from source: BackendID, reason: String) throws {
        let payload = try JSONEncoder().encode(Stored(source: source, change: change, reason: reason, at: Date()))
        try store.write { tx in
            for operation in try tx.pendingOperations(waitingOn: held) {
                if let old = Self.entry(operation, retry: false), old.source == source, Self.sameSubject(old.change, change) {
                    try tx.removePending(operation.id)
                }
            }
            _ = try tx.enqueuePending(PendingOperation(waitKey: held, kind: "quarantine", payload: payload, createdAt: Date()))
        }
    }

    /// Removes the held entries for the same subject as `change` (a newer version of it was bridged); true when
    /// any were removed.
    @discardableResult
    func release(supersededBy change: RemoteChange, from source: BackendID) throws -> Bool {
        try store.write { tx in
            var released = false
            for operation in try tx.pendingOperations(waitingOn: held) {
                guard let old = Self.entry(operation, retry: false), old.source == source,
                      Self.sameSubject(old.change, change) else { continue }
                try tx.removePending(operation.id)
                released = true
            }
            return released
        }
    }

    /// Asks the running bridge to bridge entry `id` again at its next pass (the entry keeps its number; one that
    /// fails again is held again, under a new number and reason); false when there is no such entry.
    @discardableResult
    public func retry(_ id: Int64) throws -> Bool {
        try store.write { tx in
            guard try tx.pendingOperations(waitingOn: held).contains(where: { $0.id == id }) else { return false }
            if try !tx.pendingOperations(waitingOn: retrying).contains(where: { Self.requestedID($0) == id }) {
                _ = try tx.enqueuePending(PendingOperation(waitKey: retrying, kind: "quarantine-retry",
                                                           payload: Data(String(id).utf8), createdAt: Date()))
            }
            return true
        }
    }

    /// Removes entry `id` for good (the change is not bridged); false when there is no such entry.
    @discardableResult
    public func drop(_ id: Int64) throws -> Bool {
        try store.write { tx in
            guard try tx.pendingOperations(waitingOn: held).contains(where: { $0.id == id }) else { return false }
            try tx.removePending(id)
            for request in try tx.pendingOperations(waitingOn: retrying) where Self.requestedID(request) == id {
                try tx.removePending(request.id)
            }
            return true
        }
    }

    /// The held entries an operator asked to retry, oldest first; the requests are taken (removed) as they are read.
    func takeRetryRequests() throws -> [Entry] {
        try store.write { tx in
            let requests = try tx.pendingOperations(waitingOn: retrying)
            guard !requests.isEmpty else { return [] }
            let wanted = Set(requests.compactMap(Self.requestedID))
            for request in requests { try tx.removePending(request.id) }
            return try tx.pendingOperations(waitingOn: held).filter { wanted.contains($0.id) }
                .compactMap { Self.entry($0, retry: true) }
        }
    }

    /// The entry number a retry request names.
    private static func requestedID(_ request: PendingOperation) -> Int64? {
        Int64(String(decoding: request.payload, as: UTF8.self))
    }

    /// Whether two changes are versions of the same thing: one message, one user's reaction with one symbol, or
    /// one user's receipt on one message.
    private static func sameSubject(_ first: RemoteChange, _ second: RemoteChange) -> Bool {
        switch (first, second) {
        case (.message(let one), .message(let other)): one.remoteID == other.remoteID
        case (.reaction(let one), .reaction(let other)):
            one.target == other.target && one.user == other.user && one.symbol == other.symbol
        case (.receipt(let one), .receipt(let other)): one.target == other.target && one.user == other.user
        default: false
        }
    }

    private static func entry(_ operation: PendingOperation, retry: Bool) -> Entry? {
        guard let stored = try? JSONDecoder().decode(Stored.self, from: operation.payload) else { return nil }
        return Entry(id: operation.id, source: stored.source, change: stored.change, reason: stored.reason, at: stored.at,
                     retryRequested: retry)
    }
}
