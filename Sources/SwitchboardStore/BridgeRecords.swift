import Foundation
import SwitchboardCore

/// One entry of a bridge pair's ledger: a source message the pair handled, by whom, the last text and deletion it
/// bridged, and (while its copy is prepared but not yet published) where the copy goes.
///
/// The ledger is the pair's own: an update of a message is applied only to a copy whose entry is in the same pair
/// and whose original has the same sender and side (DESIGN §2).
public struct BridgeCopy: Sendable, Hashable {
    /// The pair (`Bridge.pairKey`) whose ledger holds the entry.
    public var pair: String
    /// The message's internal identity (the key of its copy).
    public var messageID: MessageID
    /// The backend the original came from; nil in entries adopted from stores that did not record it.
    public var origin: BackendID?
    /// The original's sender.
    public var sender: UserID
    /// The last text bridged.
    public var text: String
    /// When the original was sent.
    public var sentAt: Date
    /// When the original was last edited, as last bridged.
    public var editedAt: Date?
    /// When the original was deleted, once bridged (or seen deleted before it was copied).
    public var deletedAt: Date?
    /// While the copy is prepared and its publish not recorded: the backend it goes to; nil once published.
    public var pendingTowards: BackendID?
    /// The prepared copy to publish again after a restart (nil for a target that republishes by key: the copy
    /// is prepared again from `text`).
    public var prepared: PreparedMessage?

    /// An entry from its parts.
    public init(pair: String, messageID: MessageID, origin: BackendID?, sender: UserID, text: String, sentAt: Date,
                editedAt: Date? = nil, deletedAt: Date? = nil, pendingTowards: BackendID? = nil,
                prepared: PreparedMessage? = nil) {
        self.pair = pair
        self.messageID = messageID
        self.origin = origin
        self.sender = sender
        self.text = text
        self.sentAt = sentAt
        self.editedAt = editedAt
        self.deletedAt = deletedAt
        self.pendingTowards = pendingTowards
        self.prepared = prepared
    }
}

/// The bridge's own records, kept per pair apart from the engine's tables: the ledger of copies, the change
/// cursors of both sides, and the operations that wait (for a target's copy, a reply's target, an operator).
///
/// Every call names the pair, so no pair reads or changes another's records; only `bridgeCopy(_:)` looks across
/// pairs, to tell that a message belongs to another one.
public protocol BridgeRecordTransaction {
    /// The ledger entry of `id`, in whichever pair holds it (at most one does), or nil.
    func bridgeCopy(_ id: MessageID) throws -> BridgeCopy?
    /// Inserts or replaces a ledger entry.
    func upsertBridgeCopy(_ copy: BridgeCopy) throws
    /// Removes the entry of `id` from `pair`'s ledger.
    func removeBridgeCopy(_ id: MessageID, pair: String) throws
    /// Marks the pending copies of `ids` in `pair` published: no longer pending, their prepared copies dropped.
    func markBridgeCopiesPublished(_ ids: [MessageID], pair: String) throws
    /// Up to `limit` entries of `pair`'s ledger with message IDs after `after` (from the first when nil), in
    /// message ID order.
    func bridgeCopies(pair: String, after: MessageID?, limit: Int) throws -> [BridgeCopy]

    /// The change cursor of `pair`'s side on `backend`.
    func bridgeCursor(pair: String, backend: BackendID) throws -> Cursor?
    /// Stores (or clears with nil) the change cursor of `pair`'s side on `backend`.
    func setBridgeCursor(_ cursor: Cursor?, pair: String, backend: BackendID) throws

    /// Queues an operation of `pair`; returns its row id (the operation's own `id` is ignored).
    @discardableResult func enqueueBridgeOperation(_ operation: PendingOperation, pair: String) throws -> Int64
    /// `pair`'s operations waiting on `waitKey`, oldest first.
    func bridgeOperations(pair: String, waitingOn waitKey: WaitKey) throws -> [PendingOperation]
    /// `pair`'s operations whose wait key is in `family`, oldest first.
    func bridgeOperations(pair: String, in family: WaitKey.Family) throws -> [PendingOperation]
    /// The keys among `keys` that at least one of `pair`'s operations waits on.
    func bridgeWaitKeys(pair: String, among keys: [WaitKey]) throws -> Set<WaitKey>
    /// Removes an operation.
    func removeBridgeOperation(_ id: Int64) throws
}

/// The upper bound of every text that starts with a prefix, for range scans: the prefix followed by the
/// highest code point (bytewise, above every UTF-8 sequence a key may continue with).
public func prefixUpperBound(_ prefix: String) -> String {
    prefix + "\u{10FFFF}"
}
