import Dispatch
import Foundation

/// A presigned upload: which object the token allows, how big, until when. Only the token's hash is kept.
public struct XMTPNodeUploadGrant: Sendable, Hashable {
    /// sha256 hex of the upload token.
    public var tokenHash: String
    /// The object's digest (lowercase hex).
    public var contentDigest: String
    /// The announced size.
    public var contentLength: UInt64
    /// When the token stops working, nanoseconds since 1970.
    public var expiresNs: UInt64
    /// Who asked for it.
    public var inboxID: String

    /// A grant from its parts.
    public init(tokenHash: String, contentDigest: String, contentLength: UInt64, expiresNs: UInt64, inboxID: String) {
        self.tokenHash = tokenHash
        self.contentDigest = contentDigest
        self.contentLength = contentLength
        self.expiresNs = expiresNs
        self.inboxID = inboxID
    }
}

/// The node's durable state: inboxes and token hashes, groups and members, messages, upload grants.
///
/// Methods block (SQLite or libpq) and are called off the cooperative pool. `appendMessages` assigns ids in
/// increasing order that matches commit order, so a reader that saw id N has seen every id below N.
public protocol XMTPNodeStore: Sendable {
    /// Creates the inbox with its first token hash; false when the inbox exists already.
    func registerInbox(_ inboxID: String, tokenHash: String, nowNs: UInt64) throws -> Bool
    /// Adds another token hash to an existing inbox (a new installation).
    func addToken(inboxID: String, tokenHash: String, nowNs: UInt64) throws
    /// The inbox a token hash belongs to.
    func inbox(forTokenHash tokenHash: String) throws -> String?
    /// Whether the inbox is registered.
    func inboxExists(_ inboxID: String) throws -> Bool
    /// Creates a group with `members` (the creator included by the caller); false when it exists.
    func createGroup(_ groupID: XMTPNodeGroupID, creator: String, members: [String], nowNs: UInt64) throws -> Bool
    /// The group's members sorted, nil when there is no such group.
    func members(of groupID: XMTPNodeGroupID) throws -> [String]?
    /// Adds members (existing ones are kept).
    func addMembers(_ inboxIDs: [String], to groupID: XMTPNodeGroupID) throws
    /// Removes members (absent ones are ignored).
    func removeMembers(_ inboxIDs: [String], from groupID: XMTPNodeGroupID) throws
    /// Stores `messages` atomically in order, each with the next sequence id and `nowNs`; returns them stored.
    func appendMessages(_ messages: [XMTPNodeMessageInput], nowNs: UInt64) throws -> [XMTPNodeStoredMessage]
    /// One page of a group's messages.
    func queryMessages(_ groupID: XMTPNodeGroupID, page: XMTPNodePage) throws -> [XMTPNodeStoredMessage]
    /// Up to `limit` messages, ascending by id, of the given groups with ids above each group's cursor.
    func messages(after cursors: [XMTPNodeGroupID: UInt64], limit: Int) throws -> [XMTPNodeStoredMessage]
    /// Saves an upload grant.
    func saveUploadGrant(_ grant: XMTPNodeUploadGrant) throws
    /// The grant for a token hash.
    func uploadGrant(tokenHash: String) throws -> XMTPNodeUploadGrant?
    /// Releases connections; later calls fail.
    func close()
}
