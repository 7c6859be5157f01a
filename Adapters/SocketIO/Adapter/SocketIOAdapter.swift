import Foundation
import SocketIOProtocol
import SwitchboardCore
import SwitchboardNet

/// The Socket-style backend (Adapters/SocketIO/WIRE.md) behind the `ChatAdapter` contract: REST for sends,
/// history, delta sync and mutations, a Socket.IO v5 connection for live events and typing, `/uploads` for files.
///
/// IDs are server-assigned: `prepare` encodes the POST body (the `MessageID` as `clientMessageId`) without the
/// network, `publish` POSTs it and returns the server's ID; the server answers a repeated `clientMessageId` with
/// the stored message, so a retry or replay never duplicates. Every copy of a message carries its
/// `clientMessageId` back as the idempotency key, so an echo lands on the optimistic row.
public final class SocketIOAdapter: ConfiguredAdapter, EditingAdapter, DeletingAdapter, ReactingAdapter, ReceiptAdapter,
    TypingAdapter, UploadingAdapter, MessageCountingAdapter {
    /// Where the server is and who signs in.
    public struct Configuration: AdapterConfiguration {
        /// The server's base URL, e.g. `http://127.0.0.1:8080`.
        public var baseURL: URL
        /// The user's bearer token (from `POST /auth/register`); never logged.
        public var token: String
        /// The signed-in user.
        public var localUser: UserID
        /// This backend's name in ID mappings.
        public var backend: BackendID = "socketio"
        /// How long the Engine.IO handshake may take (10 s).
        public var handshakeTimeout: Duration = .seconds(10)
        /// The first reconnect delay (1 s, doubling, ±50 %).
        public var reconnectInitialDelay: Duration = .seconds(1)
        /// The largest reconnect delay (5 s).
        public var reconnectMaximumDelay: Duration = .seconds(5)
        /// The most bytes of one REST answer read (downloads: `maxAttachmentBytes`); a larger or endless answer is
        /// cut there (a retryable `transport` error saying so), so memory stays bounded.
        public var maximumResponseBytes = 16 << 20

        /// A configuration for `localUser` at `baseURL` with `token`.
        public init(baseURL: URL, token: String, localUser: UserID) {
            self.baseURL = baseURL
            self.token = token
            self.localUser = localUser
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// Server-assigned IDs; WIRE.md's limits; the outbox emulates noSend.
    public let capabilities = AdapterCapabilities(idScheme: .serverAssigned, maxTextBytes: 65_536,
                                                  maxAttachmentBytes: 25 * 1024 * 1024, maxAttachmentsPerMessage: 10,
                                                  hasNativeNoSend: false, receiptStates: [.delivered, .read])
    /// One reaction per user: a new emoji replaces the old one.
    public let reactionPolicy = ReactionPolicy.onePerUser

    let rest: SocketIOREST
    let mapper: SocketIOChangeMapper
    private let live = Locked<[UUID: SocketIOLiveStream]>([:])

    /// An adapter for `configuration`, sharing `http` (one connection pool) when given.
    public init(configuration: Configuration, http: HTTPClient = HTTPClient()) {
        self.configuration = configuration
        mapper = SocketIOChangeMapper(localUser: configuration.localUser)
        rest = SocketIOREST(baseURL: configuration.baseURL, token: configuration.token, http: http,
                            maximumResponseBytes: configuration.maximumResponseBytes)
    }

    /// Uses a new token for REST and for every live socket's next connect (a refused socket retries at once).
    public func updateToken(_ token: String) async {
        rest.setToken(token)
        for stream in live.withLock({ Array($0.values) }) {
            await stream.client.setAuth(["token": .string(token)], reconnectNow: true)
        }
    }

    // MARK: prepare / publish

    /// Encodes the POST body; the server assigns the ID, so `remoteID` is nil until publish or echo.
    nonisolated(nonsending) public func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        guard message.text.utf8.count <= capabilities.maxTextBytes else {
            throw SwitchboardError(.contentTooLarge, "text exceeds \(capabilities.maxTextBytes) bytes")
        }
        guard message.attachments.count <= capabilities.maxAttachmentsPerMessage else {
            throw SwitchboardError(.contentTooLarge, "at most \(capabilities.maxAttachmentsPerMessage) attachments")
        }
        guard Self.isValidName(message.conversation.rawValue) else {
            throw SwitchboardError(.unknownConversation, "not a conversation ID of this backend: \(message.conversation)")
        }
        guard (1...128).contains(message.id.rawValue.utf8.count),
              !message.id.rawValue.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw SwitchboardError(.invalidArgument, "a clientMessageId is 1–128 UTF-8 bytes without control characters")
        }
        let body = SocketIOWire.postBody(message)
        return PreparedMessage(id: message.id, conversation: message.conversation, remoteID: nil,
                               payload: Data(body.serialized.utf8))
    }

    /// POSTs the prepared body; the answer (201 new, 200 repeat) carries the server's ID and time.
    public func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        guard let body = JSONValue.parseOrNil(prepared.payload), body["clientMessageId"] != nil else {
            throw SwitchboardError(.invalidArgument, "prepared payload is not a message body")
        }
        let answer: JSONValue
        do {
            answer = try await rest.json(.post, rest.messagesPath(prepared.conversation), body: body).value
        } catch let error as SwitchboardError where error.code == .notFound {
            throw SwitchboardError(.unknownConversation, error.message)
        }
        guard let message = SocketIOWire.message(answer) else {
            throw SwitchboardError(.transport, "the server's answer to a send is not a message", retryable: true)
        }
        if message.sender != localUser || message.idempotencyKey != prepared.id {
            throw SwitchboardError(.conflict, "the server answered with another message (\(message.remoteID))")
        }
        return PublishReceipt(remoteID: message.remoteID, serverTime: message.sentAt)
    }

    // MARK: history and delta sync

    /// The largest `version` in the conversation now: the newest page's, then every change after it.
    public func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        let newest = try await page(conversation, query: [])
        var latest = newest.messages.compactMap(SocketIOWire.version).max() ?? 0
        while true {
            let later = try await page(conversation, query: [("afterMessageId", String(latest))])
            guard let top = later.messages.compactMap(SocketIOWire.version).max(), top > latest else { break }
            latest = top
            if !later.hasMore { break }
        }
        return Cursor(String(latest))
    }

    /// The page of messages with IDs below `cursor` (the newest page when nil), oldest first, cut to `limit`.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        var query: [(String, String)] = []
        if let cursor {
            guard Self.isPosition(cursor.rawValue) else {
                throw SwitchboardError(.invalidArgument, "not a Socket.IO-style history cursor: \(cursor)")
            }
            query.append(("messageId", cursor.rawValue))
        }
        let fetched = try await page(conversation, query: query)
        let kept = fetched.messages.suffix(max(1, limit))
        var messages: [RemoteMessage] = [], reactions: [RemoteReaction] = [], receipts: [RemoteReceipt] = []
        for json in kept {
            guard let mapped = mapper.changes(for: json) else { continue }
            for change in mapped.changes {
                switch change {
                case .message(let message): messages.append(message)
                case .reaction(let reaction): reactions.append(reaction)
                case .receipt(let receipt): receipts.append(receipt)
                }
            }
        }
        let older = (fetched.hasMore || kept.count < fetched.messages.count) ? kept.first?["id"]?.stringValue : nil
        return HistoryPage(messages: messages, reactions: reactions, receipts: receipts, olderCursor: older.map(Cursor.init))
    }

    /// Every message whose `version` is above the cursor (new ones and changed older ones), in version order,
    /// paging until the server has no more or `limit` messages came; the cursor is the largest version seen.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        var after: Int64 = 0
        if let cursor {
            guard Self.isPosition(cursor.rawValue), let value = Int64(cursor.rawValue) else {
                throw SwitchboardError(.invalidArgument, "not a Socket.IO-style change cursor: \(cursor)")
            }
            after = value
        }
        var changes: [RemoteChange] = []
        var count = 0
        var hasMore = false
        let start = after
        repeat {
            let fetched = try await page(conversation, query: [("afterMessageId", String(after))])
            var advanced = false
            for json in fetched.messages {
                guard let mapped = mapper.changes(for: json) else { continue }
                changes += mapped.changes
                count += 1
                if mapped.version > after {
                    after = mapped.version
                    advanced = true
                }
            }
            hasMore = fetched.hasMore && advanced
        } while hasMore && count < max(1, limit)
        let next = after > start || cursor == nil ? Cursor(String(after)) : cursor
        return ChangeBatch(changes: changes, cursor: next, hasMore: hasMore)
    }

    /// The conversation's messages, deleted ones included: `GET …/messages/count`.
    public func messageCount(in conversation: ConversationID) async throws -> Int {
        let answer: JSONValue
        do {
            answer = try await rest.json(.get, rest.messagesPath(conversation, nil, "count")).value
        } catch let error as SwitchboardError where error.code == .notFound {
            throw SwitchboardError(.unknownConversation, error.message)
        }
        guard let count = answer["count"]?.intValue, count >= 0 else {
            throw SwitchboardError(.transport, "the server's count answer has no count", retryable: true)
        }
        return Int(count)
    }

    /// `GET …/messages` with `query`: the message objects (oldest first) and `hasMore`.
    private func page(_ conversation: ConversationID, query: [(String, String)]) async throws
        -> (messages: [JSONValue], hasMore: Bool) {
        let answer: JSONValue
        do {
            answer = try await rest.json(.get, rest.messagesPath(conversation), query: query).value
        } catch let error as SwitchboardError where error.code == .notFound {
            throw SwitchboardError(.unknownConversation, error.message)
        }
        guard let messages = answer["messages"]?.arrayValue else {
            throw SwitchboardError(.transport, "the server's message page has no messages array", retryable: true)
        }
        return (messages, answer["hasMore"]?.boolValue ?? false)
    }

    // MARK: live

    /// A Socket.IO connection for the conversation's live events: `connected` on every (re)connect (the engine
    /// then syncs from its cursor), `disconnected` on loss, reconnecting forever with backoff until the stream ends.
    public func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        let (stream, continuation) = AsyncStream<AdapterEvent>.makeStream(bufferingPolicy: .unbounded)
        let client = SocketIOClient(configuration: clientConfiguration())
        let connection = SocketIOLiveStream(client: client, conversation: conversation, localUser: localUser,
                                            mapper: mapper)
        let key = UUID()
        live.withLock { $0[key] = connection }
        continuation.onTermination = { [weak self] _ in
            self?.live.withLock { _ = $0.removeValue(forKey: key) }
            Task { await connection.stop() }
        }
        connection.start(continuation)
        return stream
    }

    /// The Socket.IO client settings for this user: auth `{"token":…}`, reconnect forever.
    func clientConfiguration() -> SocketIOClient.Configuration {
        var settings = SocketIOClient.Configuration(url: configuration.baseURL, auth: ["token": .string(rest.currentToken)])
        settings.handshakeTimeout = configuration.handshakeTimeout
        settings.reconnects = true
        settings.reconnectsAfterConnectError = true
        settings.backoff = ReconnectBackoff(initialDelay: configuration.reconnectInitialDelay,
                                            maximumDelay: configuration.reconnectMaximumDelay)
        return settings
    }

    // MARK: edits, deletes, reactions, receipts, typing

    /// How long `sendTyping` waits for a socket that is still connecting.
    static let typingConnectWait: Duration = .seconds(5)

    /// Replaces the text (`PATCH`); the server enforces sender-only and the 15-minute window.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        _ = try await rest.json(.patch, rest.messagesPath(conversation, target), body: ["text": .string(text)])
    }

    /// Deletes (`DELETE`; the row stays as a tombstone, so delta sync carries it); the server enforces the window.
    public func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        _ = try await rest.json(.delete, rest.messagesPath(conversation, target))
    }

    /// Sets (`PUT`, replacing the user's other emoji) or removes (`DELETE`) the local user's reaction; under the
    /// one-per-user policy the engine removes only the emoji it shows as the user's current one.
    public func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID) async throws {
        let path = rest.messagesPath(conversation, target, "reaction")
        mapper.beginOwnWrite(conversation, target)
        do {
            let answer: JSONValue
            if isActive {
                answer = try await rest.json(.put, path, body: ["emoji": .string(symbol)]).value
            } else {
                answer = try await rest.json(.delete, path).value
            }
            mapper.endOwnWrite(conversation, target, answer: answer)
        } catch {
            mapper.endOwnWrite(conversation, target, answer: nil)
            throw error
        }
    }

    /// Acknowledges `target` (`PUT …/receipt`); the server never lets read step back to delivered.
    public func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws {
        _ = try await rest.json(.put, rest.messagesPath(conversation, target, "receipt"), body: ["state": .string(state.rawValue)])
    }

    /// Emits `typing` on a live socket of the conversation (with an ack); a socket still connecting (typing right
    /// after opening) gets up to `typingConnectWait`; with none connected by then the indicator is dropped.
    public func sendTyping(_ isTyping: Bool, in conversation: ConversationID) async throws {
        let streams = live.withLock { $0.values.filter { $0.conversation == conversation } }
        var connected: [SocketIOLiveStream] = []
        for stream in streams where await stream.client.isConnected { connected.append(stream) }
        if connected.isEmpty, let first = streams.first, await first.client.waitUntilConnected(timeout: Self.typingConnectWait) {
            connected = [first]
        }
        if let stream = connected.first {
            let answer = try await stream.client.emitWithAck("typing", [["conversationId": .string(conversation.rawValue),
                                                                        "typing": .bool(isTyping)]])
            if answer.first?["ok"]?.boolValue != true {
                throw SwitchboardError(.refused, "typing refused: \(answer.first?["error"]?.stringValue ?? "no reason")")
            }
        }
    }

    // MARK: attachments

    /// `POST /uploads` with the bytes, their type and SHA-256 (the server checks it), reporting progress.
    public func upload(_ attachment: Attachment, data: Data, in conversation: ConversationID,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> Attachment {
        let digest = try attachment.verifiedDigest(of: data, limit: capabilities.maxAttachmentBytes)
        var headers = HTTPHeaders()
        headers.add("Content-Type", attachment.mimeType.isEmpty ? "application/octet-stream" : attachment.mimeType)
        headers.add("X-Content-SHA256", digest)
        let request = HTTPRequest(method: .post, url: rest.url("/uploads"), headers: headers, timeout: .seconds(120))
        let response = try await rest.send(request, upload: data) { fraction in progress(min(fraction, 0.99)) }
        guard let answer = JSONValue.parseOrNil(response.body), let url = answer["url"]?.stringValue else {
            throw SwitchboardError(.transport, "the upload answer has no URL", retryable: true)
        }
        progress(1)
        return attachment.uploaded(data, digest: digest, to: url)
    }

    /// `GET` the attachment's URL (with the token only on the server's own origin) and checks its SHA-256.
    public func download(_ attachment: Attachment) async throws -> Data {
        guard let location = attachment.remoteLocation, let url = URL(string: location),
              ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw SwitchboardError(.notFound, "\(attachment.filename) has no remote copy")
        }
        let response = try await rest.send(HTTPRequest(method: .get, url: url, timeout: .seconds(120),
                                                       maximumResponseBytes: Int(capabilities.maxAttachmentBytes)))
        if !attachment.sha256.isEmpty, Digest.sha256Hex(response.body) != attachment.sha256 {
            throw SwitchboardError(.storage, "\(attachment.filename): downloaded bytes do not match the SHA-256")
        }
        return response.body
    }

    // MARK: helpers

    /// Whether `text` is a user or conversation ID of this backend (`SocketIOIdentifier`: 1–128 of `[A-Za-z0-9._@:-]`).
    public static func isValidName(_ text: String) -> Bool { SocketIOIdentifier.isValid(text) }

    /// Whether `text` is a decimal sequence position.
    static func isPosition(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 19 && text.utf8.allSatisfy { (48...57).contains($0) }
    }
}
