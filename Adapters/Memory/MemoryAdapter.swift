import Foundation
import SwitchboardCore

/// The adapter for a `MemoryBackend`, signed in as one user; thin, the backend holds the truth.
public final class MemoryAdapter: ChatAdapter, EditingAdapter, DeletingAdapter, ReactingAdapter, ReceiptAdapter,
    TypingAdapter, UploadingAdapter, MessageCountingAdapter, Sendable
{
    /// The server this adapter talks to.
    public let server: MemoryBackend
    /// The signed-in user.
    public let localUser: UserID

    /// An adapter for `backend` signed in as `user`.
    public init(backend: MemoryBackend, user: UserID) {
        self.server = backend
        self.localUser = user
    }

    /// The backend's name in ID mappings.
    public var backend: BackendID { server.backendID }

    /// The backend's scheme and limits (no native noSend: the outbox emulates it).
    public var capabilities: AdapterCapabilities { server.capabilities }

    /// The backend's reaction policy.
    public var reactionPolicy: ReactionPolicy { server.reactionPolicy }

    // MARK: Publishing

    /// Encodes the message as canonical JSON, with its remote ID for the client and content schemes; no network call.
    nonisolated(nonsending) public func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        guard message.sender == localUser else {
            throw SwitchboardError(.invalidArgument, "message sender \(message.sender) is not the local user \(localUser)")
        }
        try MemoryWire.validate(message, limits: server.limits)
        let remoteID: RemoteID?
        switch server.scheme {
        case .clientAssigned: remoteID = RemoteID(message.id.rawValue)
        case .contentDerived: remoteID = try MemoryWire.contentDerivedID(for: message)
        case .serverAssigned: remoteID = nil
        }
        return PreparedMessage(id: message.id, conversation: message.conversation, remoteID: remoteID,
                               payload: try MemoryWire.payload(for: message))
    }

    /// Sends the prepared payload; the server stores it once per key, so a retry never duplicates.
    public func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        let message = try MemoryWire.message(fromPayload: prepared.payload)
        guard message.id == prepared.id, message.conversation == prepared.conversation else {
            throw SwitchboardError(.invalidArgument, "prepared message \(prepared.id) does not match its payload")
        }
        let receipt = try await server.publish(message, as: localUser)
        if let expected = prepared.remoteID, let actual = receipt.remoteID, expected != actual {
            throw SwitchboardError(.conflict, "server named \(prepared.id) \(actual), prepare computed \(expected)")
        }
        return receipt
    }

    // MARK: Reading

    /// The change-feed position now.
    public func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        try server.latestCursor(in: conversation, as: localUser)
    }

    /// Messages with seq below `cursor` (newest page when nil), oldest first.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        try server.history(in: conversation, before: cursor, limit: limit, as: localUser)
    }

    /// The conversation's messages, deleted ones included, counted by the backend.
    public func messageCount(in conversation: ConversationID) async throws -> Int {
        try server.messageCount(in: conversation, as: localUser)
    }

    /// Everything whose version is after `cursor`.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        try server.changes(in: conversation, after: cursor, limit: limit, as: localUser)
    }

    /// The live stream; the subscription ends when the consumer stops iterating.
    public func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        server.subscribe(to: conversation, as: localUser)
    }

    // MARK: Editing, deleting, reacting, receipts, typing

    /// Replaces the text of the local user's message `target`.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        try server.edit(target, in: conversation, text: text, as: localUser)
    }

    /// Deletes the local user's message `target`.
    public func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        try server.delete(target, in: conversation, as: localUser)
    }

    /// Adds or removes the local user's reaction on `target`.
    public func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID,
                            in conversation: ConversationID) async throws {
        try server.setReaction(symbol, isActive: isActive, on: target, in: conversation, as: localUser)
    }

    /// Acknowledges `target` as delivered or read.
    public func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws {
        try server.sendReceipt(state, for: target, in: conversation, as: localUser)
    }

    /// Tells the other members the local user is (or stopped) typing.
    public func sendTyping(_ isTyping: Bool, in conversation: ConversationID) async throws {
        try server.sendTyping(isTyping, in: conversation, as: localUser)
    }

    // MARK: Attachments

    /// Uploads the bytes with progress; returns the attachment with its remote location, state `uploaded`.
    public func upload(_ attachment: Attachment, data: Data, in conversation: ConversationID,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> Attachment {
        guard Digest.sha256Hex(data) == attachment.sha256 else {
            throw SwitchboardError(.invalidArgument, "digest mismatch: bytes of \(attachment.filename) do not match its sha256")
        }
        let location = try await server.upload(data, filename: attachment.filename, in: conversation, as: localUser,
                                               progress: progress)
        return attachment.uploaded(data, digest: attachment.sha256, to: location)
    }

    /// Downloads the bytes of an uploaded attachment, verifying their SHA-256.
    public func download(_ attachment: Attachment) async throws -> Data {
        guard let location = attachment.remoteLocation else {
            throw SwitchboardError(.invalidArgument, "attachment \(attachment.filename) has no remote location")
        }
        let data = try server.download(location, as: localUser)
        guard Digest.sha256Hex(data) == attachment.sha256 else {
            throw SwitchboardError(.conflict, "digest mismatch for \(attachment.filename)")
        }
        return data
    }
}
