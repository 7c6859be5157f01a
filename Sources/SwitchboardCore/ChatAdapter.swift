import Foundation

/// How a backend names messages; the contract fits all three.
public enum IDScheme: String, Sendable, Hashable, Codable, CaseIterable {
    /// The client picks the ID (the `MessageID` itself); known at prepare.
    case clientAssigned = "client"
    /// Derived from the content and the idempotency key; known at prepare.
    case contentDerived = "content"
    /// Assigned by the server; known after publish, or only from the echo.
    case serverAssigned = "server"
}

/// How re-tapping a reaction behaves on a backend.
public enum ReactionPolicy: String, Sendable, Hashable, Codable {
    /// One reaction per user: a new symbol replaces the old one.
    case onePerUser
    /// One reaction per user per symbol: re-tapping a symbol toggles it.
    case onePerUserPerSymbol
}

/// What an adapter can carry and how it names things.
public struct AdapterCapabilities: Sendable, Hashable {
    /// The backend's ID scheme.
    public var idScheme: IDScheme
    /// Largest text the backend accepts, in UTF-8 bytes.
    public var maxTextBytes: Int
    /// Largest single attachment, in bytes.
    public var maxAttachmentBytes: Int64
    /// Most attachments in one message.
    public var maxAttachmentsPerMessage: Int
    /// Whether the backend keeps noSend drafts itself (otherwise the outbox emulates it).
    public var hasNativeNoSend: Bool
    /// The receipt states the backend carries (XMTP-like backends have read receipts only).
    public var receiptStates: Set<ReceiptState>

    /// Describes an adapter's limits.
    public init(idScheme: IDScheme, maxTextBytes: Int = 64 * 1024, maxAttachmentBytes: Int64 = 25 * 1024 * 1024,
                maxAttachmentsPerMessage: Int = 10, hasNativeNoSend: Bool = false,
                receiptStates: Set<ReceiptState> = [.delivered, .read]) {
        self.receiptStates = receiptStates
        self.idScheme = idScheme
        self.maxTextBytes = maxTextBytes
        self.maxAttachmentBytes = maxAttachmentBytes
        self.maxAttachmentsPerMessage = maxAttachmentsPerMessage
        self.hasNativeNoSend = hasNativeNoSend
    }
}

/// A message handed to an adapter to prepare: references already translated to the backend's IDs.
public struct OutgoingMessage: Sendable, Hashable, Codable {
    /// The idempotency key the backend must carry.
    public var id: MessageID
    /// Target conversation.
    public var conversation: ConversationID
    /// The local user.
    public var sender: UserID
    /// The text.
    public var text: String
    /// The backend ID of the message this replies to.
    public var replyTo: RemoteID?
    /// Uploaded attachments (their `remoteLocation` is set).
    public var attachments: [Attachment]
    /// Metadata to carry where the backend can hold it.
    public var metadata: [String: String]
    /// Compose time.
    public var createdAt: Date

    /// Builds an outgoing message.
    public init(id: MessageID, conversation: ConversationID, sender: UserID, text: String, replyTo: RemoteID? = nil,
                attachments: [Attachment] = [], metadata: [String: String] = [:], createdAt: Date) {
        self.id = id
        self.conversation = conversation
        self.sender = sender
        self.text = text
        self.replyTo = replyTo
        self.attachments = attachments
        self.metadata = metadata
        self.createdAt = createdAt
    }
}

/// The result of `prepare`: what to publish, persisted in the outbox so a restart can publish it.
public struct PreparedMessage: Sendable, Hashable, Codable {
    /// The idempotency key.
    public var id: MessageID
    /// Target conversation.
    public var conversation: ConversationID
    /// The backend's ID when the scheme knows it before the network (client-assigned, content-derived).
    public var remoteID: RemoteID?
    /// The adapter's encoded request, opaque to everyone else.
    public var payload: Data

    /// Builds a prepared message.
    public init(id: MessageID, conversation: ConversationID, remoteID: RemoteID?, payload: Data) {
        self.id = id
        self.conversation = conversation
        self.remoteID = remoteID
        self.payload = payload
    }
}

/// What a successful publish tells: the backend ID if the server returns one, and its time.
public struct PublishReceipt: Sendable, Hashable {
    /// The backend ID; nil when only the echo will tell it.
    public var remoteID: RemoteID?
    /// The server's timestamp, when known.
    public var serverTime: Date?

    /// Builds a receipt.
    public init(remoteID: RemoteID?, serverTime: Date?) {
        self.remoteID = remoteID
        self.serverTime = serverTime
    }
}

/// A message as a backend delivers it (history, delta sync, live stream, echo).
public struct RemoteMessage: Sendable, Hashable, Codable {
    /// The backend's ID.
    public var remoteID: RemoteID
    /// Conversation.
    public var conversation: ConversationID
    /// The idempotency key the sender carried, if any.
    public var idempotencyKey: MessageID?
    /// Author.
    public var sender: UserID
    /// Current text.
    public var text: String
    /// Backend ID of the message replied to.
    public var replyTo: RemoteID?
    /// Attachments (remote copies).
    public var attachments: [Attachment]
    /// Metadata the backend carried.
    public var metadata: [String: String]
    /// Server time of the send.
    public var sentAt: Date
    /// Last edit time.
    public var editedAt: Date?
    /// Deletion time.
    public var deletedAt: Date?

    /// Builds a remote message.
    public init(remoteID: RemoteID, conversation: ConversationID, idempotencyKey: MessageID?, sender: UserID,
                text: String, replyTo: RemoteID? = nil, attachments: [Attachment] = [], metadata: [String: String] = [:],
                sentAt: Date, editedAt: Date? = nil, deletedAt: Date? = nil) {
        self.remoteID = remoteID
        self.conversation = conversation
        self.idempotencyKey = idempotencyKey
        self.sender = sender
        self.text = text
        self.replyTo = replyTo
        self.attachments = attachments
        self.metadata = metadata
        self.sentAt = sentAt
        self.editedAt = editedAt
        self.deletedAt = deletedAt
    }
}

extension RemoteMessage {
    /// Hashes what tells one message and version from another (the backend ID, edit and delete times) and not
    /// the text, attachments and metadata: a repeated delivery is recognised with one cheap hash, and equality
    /// still compares every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(remoteID)
        hasher.combine(editedAt)
        hasher.combine(deletedAt)
    }

    /// The metadata key an adapter sets (to the content type) when it shows content it cannot translate as
    /// fallback text, so bridges and migrations can say so instead of passing it silently.
    public static let unsupportedContentKey = "switchboard.unsupportedContent"
}

/// A reaction as a backend reports it; `isActive == false` means it was removed.
public struct RemoteReaction: Sendable, Hashable, Codable {
    /// Backend ID of the message reacted to.
    public var target: RemoteID
    /// Conversation.
    public var conversation: ConversationID
    /// Who reacted.
    public var user: UserID
    /// The symbol.
    public var symbol: String
    /// Whether the reaction stands (false: removed).
    public var isActive: Bool
    /// When.
    public var at: Date

    /// Builds a remote reaction.
    public init(target: RemoteID, conversation: ConversationID, user: UserID, symbol: String, isActive: Bool, at: Date) {
        self.target = target
        self.conversation = conversation
        self.user = user
        self.symbol = symbol
        self.isActive = isActive
        self.at = at
    }
}

/// A receipt as a backend reports it.
public struct RemoteReceipt: Sendable, Hashable, Codable {
    /// Backend ID of the acknowledged message.
    public var target: RemoteID
    /// Conversation.
    public var conversation: ConversationID
    /// The recipient.
    public var user: UserID
    /// Delivered or read.
    public var state: ReceiptState
    /// When.
    public var at: Date

    /// Builds a remote receipt.
    public init(target: RemoteID, conversation: ConversationID, user: UserID, state: ReceiptState, at: Date) {
        self.target = target
        self.conversation = conversation
        self.user = user
        self.state = state
        self.at = at
    }
}

/// One item of a backend's change feed.
public enum RemoteChange: Sendable, Hashable, Codable {
    /// A message appeared or changed (edit, delete).
    case message(RemoteMessage)
    /// A reaction was added or removed.
    case reaction(RemoteReaction)
    /// A receipt arrived.
    case receipt(RemoteReceipt)
}

/// A page of history, oldest first, and the cursor to page further back.
public struct HistoryPage: Sendable, Hashable {
    /// Messages, oldest first.
    public var messages: [RemoteMessage]
    /// Standing reactions on those messages.
    public var reactions: [RemoteReaction]
    /// Receipts on those messages.
    public var receipts: [RemoteReceipt]
    /// Cursor for the next older page; nil when the beginning is reached.
    public var olderCursor: Cursor?

    /// Builds a page.
    public init(messages: [RemoteMessage], reactions: [RemoteReaction] = [], receipts: [RemoteReceipt] = [],
                olderCursor: Cursor?) {
        self.messages = messages
        self.reactions = reactions
        self.receipts = receipts
        self.olderCursor = olderCursor
    }
}

/// What changed after a cursor, in order, and where to resume.
public struct ChangeBatch: Sendable, Hashable {
    /// Changes in the backend's order.
    public var changes: [RemoteChange]
    /// Where the next delta sync resumes (unchanged when nothing came).
    public var cursor: Cursor?
    /// Whether more changes wait after `cursor`.
    public var hasMore: Bool

    /// Builds a batch.
    public init(changes: [RemoteChange], cursor: Cursor?, hasMore: Bool) {
        self.changes = changes
        self.cursor = cursor
        self.hasMore = hasMore
    }
}

/// The live connection's state as an adapter reports it.
public enum ConnectionState: Sendable, Hashable {
    /// Connected (first time or again); the engine runs a delta sync now.
    case connected
    /// Lost; the adapter reconnects on its own.
    case disconnected(reason: String)
}

/// One item of an adapter's live stream.
public enum AdapterEvent: Sendable, Hashable {
    /// A change, exactly as a delta sync would report it.
    case change(RemoteChange)
    /// A typing indicator (ephemeral).
    case typing(conversation: ConversationID, user: UserID, isTyping: Bool)
    /// The connection went up or down.
    case connection(ConnectionState)
}

/// The contract every backend adapter fulfils: prepare / noSend / publish / publishAll / discard, history, changes, live events.
///
/// `prepare` never touches the network and is idempotent for the same message; `publish` is idempotent under the
/// message's key, so a retry or replay never duplicates. The engine persists each `PreparedMessage`, so an adapter
/// need not keep state across restarts.
public protocol ChatAdapter: AnyObject, Sendable {
    /// Which backend this adapter talks to; part of every ID mapping.
    var backend: BackendID { get }
    /// The signed-in user.
    var localUser: UserID { get }
    /// Limits and ID scheme.
    var capabilities: AdapterCapabilities { get }

    /// Encodes a message for publishing without any network call; gives the backend ID when the scheme knows it.
    nonisolated(nonsending) func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage
    /// Publishes a prepared message; publishing it again is harmless.
    func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt
    /// Publishes several prepared messages in order.
    func publishAll(_ prepared: [PreparedMessage]) async throws -> [PublishReceipt]
    /// Forgets an unpublished prepared message on the adapter's side.
    func discard(_ prepared: PreparedMessage) async throws

    /// The change-feed position now, from which `changes(after:)` reports everything later.
    func latestCursor(in conversation: ConversationID) async throws -> Cursor?
    /// Messages older than `cursor` (newest page when nil), oldest first.
    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage
    /// Everything that changed after `cursor`: new messages, edits, deletes, reactions, receipts.
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch
    /// The live stream; ends when the consumer stops iterating.
    func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent>
}

/// A network adapter's settings: at least which backend it is and who is signed in.
public protocol AdapterConfiguration: Sendable {
    /// This backend's name in ID mappings.
    var backend: BackendID { get }
    /// The signed-in user.
    var localUser: UserID { get }
}

/// An adapter whose backend and signed-in user come from its configuration.
public protocol ConfiguredAdapter: ChatAdapter {
    /// The adapter's settings type.
    associatedtype Configuration: AdapterConfiguration
    /// The configuration.
    var configuration: Configuration { get }
}

extension ConfiguredAdapter {
    /// The configured backend name.
    public var backend: BackendID { configuration.backend }
    /// The configured signed-in user.
    public var localUser: UserID { configuration.localUser }
}

extension ChatAdapter {
    /// Publishes each message in order (adapters with a batch call override this).
    public func publishAll(_ prepared: [PreparedMessage]) async throws -> [PublishReceipt] {
        var receipts: [PublishReceipt] = []
        for message in prepared { receipts.append(try await publish(message)) }
        return receipts
    }

    /// Nothing to forget by default: the engine's outbox held the prepared message.
    public func discard(_ prepared: PreparedMessage) async throws {}

    /// Every message of a conversation, oldest first, paging `history` back to the beginning (for checks and
    /// reports; a client pages on demand instead).
    public func allMessages(in conversation: ConversationID, pageSize: Int = 100) async throws -> [RemoteMessage] {
        var pages: [[RemoteMessage]] = []
        var cursor: Cursor?
        repeat {
            let page = try await history(in: conversation, before: cursor, limit: pageSize)
            pages.append(page.messages)
            cursor = page.olderCursor
        } while cursor != nil
        return pages.reversed().flatMap { $0 }
    }
}

/// An adapter that can edit a published message's text.
public protocol EditingAdapter: ChatAdapter {
    /// Replaces the text of `target`; throws `refused` when the backend says no.
    func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws
}

/// An adapter that can delete a published message.
public protocol DeletingAdapter: ChatAdapter {
    /// Deletes `target`; throws `refused` when the backend says no.
    func delete(_ target: RemoteID, in conversation: ConversationID) async throws
}

/// An adapter that carries reactions, under a policy.
public protocol ReactingAdapter: ChatAdapter {
    /// One per user, or one per user per symbol.
    var reactionPolicy: ReactionPolicy { get }
    /// Adds (`isActive`) or removes the local user's `symbol` on `target`.
    func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID) async throws
}

/// An adapter that carries delivery and read receipts.
public protocol ReceiptAdapter: ChatAdapter {
    /// Acknowledges `target` as delivered or read by the local user.
    func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws
}

/// An adapter that carries typing indicators.
public protocol TypingAdapter: ChatAdapter {
    /// Tells the others the local user is (or stopped) typing.
    func sendTyping(_ isTyping: Bool, in conversation: ConversationID) async throws
}

/// An adapter that hosts attachment bytes.
public protocol UploadingAdapter: ChatAdapter {
    /// Uploads `data` (encrypting it where the backend needs), reporting progress 0...1; returns the attachment
    /// with `remoteLocation` and `remoteParameters` set.
    func upload(_ attachment: Attachment, data: Data, in conversation: ConversationID,
                progress: @escaping @Sendable (Double) -> Void) async throws -> Attachment
    /// Fetches (and decrypts, verifying the digest) the bytes of an uploaded attachment.
    func download(_ attachment: Attachment) async throws -> Data
}

/// An adapter whose backend can leave the local account's own plain messages out of a change read.
///
/// For a reader that never acts on them, such as a bridge reading back the copies it published itself: the backend
/// skips the local user's messages that were neither edited nor deleted, and the cursor still moves past them.
/// Its cursors are interchangeable with `changes(in:after:limit:)`'s. Only for backends whose message IDs are known
/// without reading the echo (a reader that learns its copies' IDs from their echoes needs them).
public protocol OwnMessageFilteringAdapter: ChatAdapter {
    /// `changes(in:after:limit:)` without the local user's messages that were neither edited nor deleted.
    func changesSkippingOwnPlainMessages(in conversation: ConversationID, after cursor: Cursor?,
                                         limit: Int) async throws -> ChangeBatch

    /// `liveEvents(in:)` without changes to the local user's own messages (edited and deleted ones included).
    ///
    /// A wake-up for such a reader: the backend does not send its own copies back, so a change the same account
    /// makes elsewhere is only seen at the reader's next read (a poll, or any other change).
    func liveEventsSkippingOwnMessages(in conversation: ConversationID) -> AsyncStream<AdapterEvent>
}

/// An adapter that counts a conversation's messages more cheaply than paging its whole history through `history`.
///
/// For progress totals (a migration's "N of M"): the count is what `history` would list, deleted messages
/// included, taken at one moment; messages sent meanwhile may or may not be in it.
public protocol MessageCountingAdapter: ChatAdapter {
    /// The number of messages in `conversation`, deleted ones included.
    func messageCount(in conversation: ConversationID) async throws -> Int
}

/// An adapter whose backend can make a conversation that does not exist, or that its user may not read, look
/// empty (row-level security shows members only their conversations): `checkAccess` tells the difference, so a
/// migration or a bridge does not take a mistyped conversation ID for an empty conversation.
public protocol ConversationCheckingAdapter: ChatAdapter {
    /// Returns when `conversation` exists and the local user may read it; throws `unknownConversation` (naming
    /// the conversation and the user) otherwise.
    func checkAccess(to conversation: ConversationID) async throws
}

/// An adapter whose `publishAll` sends a run of prepared messages in bulk (a few requests, not one per message)
/// and publishes every message it is given (noSend-prepared ones included), returning one receipt per message,
/// in order. Bridges and migrations batch their copies only towards such an adapter.
public protocol BulkPublishingAdapter: ChatAdapter {
    /// The most messages worth handing to one `publishAll` call.
    var bulkPublishLimit: Int { get }
    /// Whether a message prepared again under the same key gets the same remote ID, and publishing it again does
    /// nothing on the backend once one copy is there (a client-supplied row ID inserted with duplicates ignored).
    /// A bridge then keeps only a marker for a staged copy instead of the prepared copy itself, and prepares it
    /// again if a restart finds it unfinished. False unless the adapter says so.
    var republishesByKey: Bool { get }
}

extension BulkPublishingAdapter {
    /// Not promised unless the adapter says so.
    public var republishesByKey: Bool { false }
}
