import Foundation
import SwitchboardCore
import SwitchboardNet

/// The REST endpoints of WIRE.md, from parsed HTTP request to response (no sockets: tests may call `handle`
/// directly), plus what the Socket.IO endpoint needs (token checks, typing, the live hub).
///
/// Every endpoint but register needs `Authorization: Bearer <token>`. Mutations run under one gate that also
/// publishes their live event, so sockets see changes in commit (version) order. WIRE.md states every validation
/// rule (unknown members, empty messages, `replyTo`, deleted messages, body and text limits, `clientMessageId`).
final class SocketIOService: Sendable {
    /// The server's settings.
    let configuration: SocketIOServerConfiguration
    /// The durable state.
    let store: SocketIOStore
    /// Live listeners, one per connected socket.
    let hub: SocketIOEventHub
    private let runner: BlockingRunner
    /// Held while a change is committed and published, so listeners see changes in version order.
    private let publishGate = Locked(0)
    /// The base of file URLs, e.g. `http://127.0.0.1:8080`, set once the port is known.
    let base = ServerBaseURL()
    private let uploads: URL

    /// A service over `store`; uploaded files live in `<dataDirectory>/uploads`.
    init(configuration: SocketIOServerConfiguration, store: SocketIOStore, runner: BlockingRunner) {
        self.configuration = configuration
        self.store = store
        self.runner = runner
        self.hub = SocketIOEventHub(bufferLimit: configuration.socketBufferLimit)
        self.uploads = configuration.dataDirectory.appendingPathComponent("uploads", isDirectory: true)
    }

    // MARK: Dispatch

    /// Answers one request; never throws (failures become `{"error":{…}}` bodies).
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await .answering(request, logger: configuration.logger, internalError: .internal("the server's store failed"),
                         respond: Self.errorResponse) { try await route(request) }
    }

    /// The error's JSON response.
    static func errorResponse(_ error: SocketIOServerError) -> HTTPServerResponse {
        .json(error.jsonBody, status: error.status)
    }

    private static func ok(_ value: JSONValue, status: Int = 200) -> HTTPServerResponse {
        .json(Data(value.serialized.utf8), status: status)
    }

    private func route(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        var segments = request.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        if segments.count > 1, segments.last == "" { segments.removeLast() }
        let method = request.method
        if segments.first != "uploads", request.body.count > configuration.maxRequestBodySize {
            throw SocketIOServerError.tooLarge(
                "the body is \(request.body.count) bytes; at most \(configuration.maxRequestBodySize) are allowed")
        }
        switch segments.first {
        case "auth" where segments == ["auth", "register"] && method == .post:
            return try await register(request)
        case "socket.io":
            return Self.engineIORefusal(request)
        case "uploads" where segments.count == 1 && method == .post:
            return try await upload(request)
        case "files" where segments.count == 2 && (method == .get || method == .head):
            return try await file(request, id: segments[1])
        case "conversations":
            return try await conversations(request, Array(segments.dropFirst()))
        default:
            throw SocketIOServerError.notFound("no endpoint \(method) \(request.path)")
        }
    }

    private func conversations(_ request: HTTPServerRequest, _ rest: [String]) async throws -> HTTPServerResponse {
        let method = request.method
        if rest.isEmpty {
            guard method == .post else { throw SocketIOServerError.notFound("no endpoint \(method) \(request.path)") }
            return try await createConversation(request)
        }
        let conversation = rest[0], tail = Array(rest.dropFirst())
        let messageID = tail.count >= 2 && tail[0] == "messages" ? tail[1] : ""
        let action = tail.count == 3 ? tail[2] : nil
        switch (method, tail.count) {
        case (.get, 0): return try await getConversation(request, conversation)
        case (.post, 1) where tail[0] == "members": return try await addMembers(request, conversation)
        case (.post, 1) where tail[0] == "messages": return try await send(request, conversation)
        case (.get, 1) where tail[0] == "messages": return try await history(request, conversation)
        case (.get, 2) where messageID == "count": return try await count(request, conversation)
        case (.patch, 2) where !messageID.isEmpty: return try await edit(request, conversation, messageID)
        case (.delete, 2) where !messageID.isEmpty: return try await delete(request, conversation, messageID)
        case (.put, 3) where !messageID.isEmpty && action == "reaction":
            return try await react(request, conversation, messageID, remove: false)
        case (.delete, 3) where !messageID.isEmpty && action == "reaction":
            return try await react(request, conversation, messageID, remove: true)
        case (.put, 3) where !messageID.isEmpty && action == "receipt": return try await receipt(request, conversation, messageID)
        default: throw SocketIOServerError.notFound("no endpoint \(method) \(request.path)")
        }
    }

    /// The answer to a plain HTTP request on `/socket.io/`: engine.io's error shapes (only WebSocket upgrades work).
    static func engineIORefusal(_ request: HTTPServerRequest) -> HTTPServerResponse {
        let (code, message): (Int, String)
        if request.queryValue("transport") != "websocket" {
            (code, message) = (0, "Transport unknown")
        } else if request.queryValue("EIO") != "4" {
            (code, message) = (5, "Unsupported protocol version")
        } else {
            (code, message) = (3, "Bad request")
        }
        return ok(.object([("code", .number(String(code))), ("message", .string(message))]), status: 400)
    }

    // MARK: Identity

    /// A fresh random token: 32 bytes, base64url without padding.
    static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Base64.encode(bytes).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// The stored form of a token: its SHA-256, hex.
    static func tokenHash(_ token: String) -> String { Digest.sha256Hex(Array(token.utf8)) }

    /// The user a token belongs to, nil when unknown (the Socket.IO connect uses it too).
    func user(forToken token: String) async throws -> String? {
        guard !token.isEmpty, token.utf8.count <= 256 else { return nil }
        let hash = Self.tokenHash(token), store = self.store
        return try await runner.run { try store.user(forTokenHash: hash) }
    }

    /// The user of the request's bearer token; 401 otherwise.
    private func authenticate(_ request: HTTPServerRequest) async throws -> String {
        guard let token = request.bearerToken else {
            throw SocketIOServerError.unauthorized("missing Authorization: Bearer <token> (register at /auth/register)")
        }
        guard let user = try await user(forToken: token) else { throw SocketIOServerError.unauthorized("unknown bearer token") }
        return user
    }

    private func register(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let body = try SocketIOJSONBody(request.body)
        let userID = try SocketIOValidation.id(try body.requiredString("userId"), field: "userId")
        let token = Self.makeToken(), hash = Self.tokenHash(token), now = SocketIOTime.nowMs(), store = self.store
        let created = try await runner.run { try store.registerUser(userID, tokenHash: hash, nowMs: now) }
        if !created {
            let owner: String? = if let presented = request.bearerToken { try await user(forToken: presented) } else { nil }
            guard owner == userID else {
                throw SocketIOServerError.conflict("user \(userID) exists; present one of its tokens to get a further one")
            }
            try await runner.run { try store.addToken(userID: userID, tokenHash: hash, nowMs: now) }
        }
        return Self.ok(.object([("userId", .string(userID)), ("token", .string(token))]), status: 201)
    }

    // MARK: Conversations

    /// The conversation after checking `user` is a member; 404 for unknown conversations and non-members alike.
    @discardableResult
    private func requireMember(_ id: String, _ user: String) async throws -> SocketIOConversation {
        let store = self.store
        guard SocketIOValidation.isValidID(id),
              let conversation = try await runner.run({ try store.conversation(id) }), conversation.members.contains(user) else {
            throw SocketIOServerError.notFound("conversation \(id) not found")
        }
        return conversation
    }

    private func requireRegistered(_ userIDs: [String]) async throws {
        let store = self.store
        let unknown = try await runner.run { try store.unknownUsers(userIDs) }
        guard unknown.isEmpty else {
            throw SocketIOServerError.badRequest("not registered: \(unknown.joined(separator: ", "))")
        }
    }

    private func createConversation(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        let body = try SocketIOJSONBody(request.body)
        let id = try SocketIOValidation.id(try body.requiredString("id"), field: "id")
        let listed = try SocketIOValidation.userIDs(try body.strings("members") ?? [], field: "members")
        guard listed.count <= 1000 else { throw SocketIOServerError.badRequest("at most 1000 members per request") }
        try await requireRegistered(listed)
        let members = [user] + listed.filter { $0 != user }
        let store = self.store, now = SocketIOTime.nowMs()
        guard let conversation = try await runner.run({ try store.createConversation(id, creator: user, members: members, nowMs: now) })
        else { throw SocketIOServerError.conflict("conversation \(id) exists") }
        return Self.ok(conversation.json, status: 201)
    }

    private func getConversation(_ request: HTTPServerRequest, _ id: String) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        return Self.ok(try await requireMember(id, user).json)
    }

    private func addMembers(_ request: HTTPServerRequest, _ id: String) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        let body = try SocketIOJSONBody(request.body)
        guard let list = try body.strings("userIds") else { throw SocketIOServerError.badRequest("userIds is required") }
        let userIDs = try SocketIOValidation.userIDs(list, field: "userIds")
        guard userIDs.count <= 1000 else { throw SocketIOServerError.badRequest("at most 1000 members per request") }
        try await requireMember(id, user)
        try await requireRegistered(userIDs)
        let store = self.store
        guard let conversation = try await runner.run({ try store.addMembers(userIDs, to: id) }) else {
            throw SocketIOServerError.notFound("conversation \(id) not found")
        }
        return Self.ok(conversation.json)
    }

    // MARK: Messages

    /// Runs `change` under the publish gate; when it returns an event name, publishes the message to every member.
    private func commit(_ conversation: String, _ change: @escaping @Sendable (SocketIOStore) throws -> (SocketIOMessage, String?))
        async throws -> SocketIOMessage {
        let store = self.store, hub = self.hub
        return try await runner.run { [self] in
            try self.publishGate.withLock { _ in
                let (message, event) = try change(store)
                if let event, let members = try store.conversation(conversation)?.members {
                    hub.publish(SocketIOLiveEvent(name: event, payload: message.json), to: members)
                }
                return message
            }
        }
    }

    private func send(_ request: HTTPServerRequest, _ conversation: String) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        try await requireMember(conversation, user)
        let body = try SocketIOJSONBody(request.body)
        // A retry returns the stored message even if its body would no longer pass validation.
        let clientMessageID = try SocketIOValidation.clientMessageID(body), store = self.store
        if let existing = try await runner.run({
            try store.message(conversation: conversation, sender: user, clientMessageID: clientMessageID)
        }) {
            return Self.ok(existing.json, status: 200)
        }
        let input = try SocketIOValidation.messageInput(body, maxTextBytes: configuration.maxTextBytes,
                                                        maxAttachments: configuration.maxAttachments)
        if let replyTo = input.replyTo {
            guard try await runner.run({ try store.message(conversation: conversation, id: replyTo) }) != nil else {
                throw SocketIOServerError.badRequest("replyTo \(replyTo) is not a message of conversation \(conversation)")
            }
        }
        let created = Locked(false)
        let message = try await commit(conversation) { store in
            let (message, isNew) = try store.insertMessage(input, conversation: conversation, sender: user, nowMs: SocketIOTime.nowMs())
            created.withLock { $0 = isNew }
            return (message, isNew ? "message" : nil)
        }
        return Self.ok(message.json, status: created.withLock { $0 } ? 201 : 200)
    }

    private func history(_ request: HTTPServerRequest, _ conversation: String) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        try await requireMember(conversation, user)
        let before = try request.queryValue("messageId").map { text throws(SocketIOServerError) in
            try SocketIOValidation.messageID(text, field: "messageId")
        }
        let after = try request.queryValue("afterMessageId").map { text throws(SocketIOServerError) -> Int64 in
            if text == "0" { return 0 }
            return try SocketIOValidation.messageID(text, field: "afterMessageId")
        }
        guard before == nil || after == nil else {
            throw SocketIOServerError.badRequest("messageId and afterMessageId cannot be combined")
        }
        let store = self.store, limit = max(1, configuration.pageSize)
        let (messages, hasMore) = try await runner.run { () -> ([SocketIOMessage], Bool) in
            if let after { return try store.changes(conversation: conversation, after: after, limit: limit) }
            let (page, more) = try store.page(conversation: conversation, before: before, limit: limit)
            return (page.reversed(), more)
        }
        return Self.ok(.object([("messages", .array(messages.map(\.json))), ("hasMore", .bool(hasMore))]))
    }

    /// `GET /conversations/{id}/messages/count`: `{"count": N}`, every message of the conversation (deleted ones
    /// included), as the history pages would list them.
    private func count(_ request: HTTPServerRequest, _ conversation: String) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        try await requireMember(conversation, user)
        let store = self.store
        let count = try await runner.run { try store.messageCount(conversation: conversation) }
        return Self.ok(.object([("count", .int(Int64(count)))]))
    }

    /// The window (in milliseconds) has passed since `createdMs`.
    /// The caller of a change to one message and the message's id, once its token and membership are checked.
    private func messageTarget(_ request: HTTPServerRequest, _ conversation: String, _ rawID: String) async throws
        -> (user: String, id: Int64) {
        let user = try await authenticate(request)
        try await requireMember(conversation, user)
        return (user, try SocketIOValidation.messageID(rawID, field: "the message id"))
    }

    /// `message`, or 404 `message <id> not found` when there is none.
    private static func found(_ message: SocketIOMessage?, _ id: Int64) throws -> SocketIOMessage {
        guard let message else { throw SocketIOServerError.notFound("message \(id) not found") }
        return message
    }

    private static func closed(_ window: Duration, since createdMs: Int64, now: Int64) -> Bool {
        now - createdMs > window.wholeMilliseconds
    }

    private func edit(_ request: HTTPServerRequest, _ conversation: String, _ rawID: String) async throws -> HTTPServerResponse {
        let (user, id) = try await messageTarget(request, conversation, rawID)
        let body = try SocketIOJSONBody(request.body)
        let text = try SocketIOValidation.text(try body.requiredString("text"), maxBytes: configuration.maxTextBytes)
        let window = configuration.editWindow
        let message = try await commit(conversation) { store in
            let now = SocketIOTime.nowMs()
            let current = try Self.found(try store.message(conversation: conversation, id: id), id)
            guard current.senderID == user else { throw SocketIOServerError.forbidden("not_sender", "only the sender may edit") }
            guard !current.isDeleted else { throw SocketIOServerError.conflict("message \(id) is deleted") }
            guard !Self.closed(window, since: current.createdMs, now: now) else {
                throw SocketIOServerError.forbidden("edit_window_closed", "the edit window of message \(id) has closed")
            }
            guard !text.isEmpty || !(current.attachments.arrayValue?.isEmpty ?? true) else {
                throw SocketIOServerError.badRequest("a message needs text or at least one attachment")
            }
            let edited = try Self.found(try store.edit(conversation: conversation, id: id, text: text, nowMs: now), id)
            return (edited, "message:edited")
        }
        return Self.ok(message.json)
    }

    private func delete(_ request: HTTPServerRequest, _ conversation: String, _ rawID: String) async throws -> HTTPServerResponse {
        let (user, id) = try await messageTarget(request, conversation, rawID)
        let window = configuration.deleteWindow
        let message = try await commit(conversation) { store in
            let now = SocketIOTime.nowMs()
            let current = try Self.found(try store.message(conversation: conversation, id: id), id)
            guard current.senderID == user else { throw SocketIOServerError.forbidden("not_sender", "only the sender may delete") }
            if current.isDeleted { return (current, nil) }
            guard !Self.closed(window, since: current.createdMs, now: now) else {
                throw SocketIOServerError.forbidden("delete_window_closed", "the delete window of message \(id) has closed")
            }
            let deleted = try Self.found(try store.delete(conversation: conversation, id: id, nowMs: now), id)
            return (deleted, "message:deleted")
        }
        return Self.ok(message.json)
    }

    private func react(_ request: HTTPServerRequest, _ conversation: String, _ rawID: String, remove: Bool) async throws
        -> HTTPServerResponse {
        let (user, id) = try await messageTarget(request, conversation, rawID)
        let emoji = remove ? "" : try SocketIOValidation.emoji(try SocketIOJSONBody(request.body).requiredString("emoji"))
        let message = try await commit(conversation) { store in
            let before = try Self.found(try store.message(conversation: conversation, id: id), id)
            if !remove && before.isDeleted { throw SocketIOServerError.conflict("message \(id) is deleted") }
            let now = SocketIOTime.nowMs()
            let after = try Self.found(remove
                ? try store.removeReaction(conversation: conversation, id: id, userID: user, nowMs: now)
                : try store.setReaction(conversation: conversation, id: id, userID: user, emoji: emoji, nowMs: now), id)
            return (after, after.version == before.version ? nil : "message:reaction")
        }
        return Self.ok(message.json)
    }

    private func receipt(_ request: HTTPServerRequest, _ conversation: String, _ rawID: String) async throws -> HTTPServerResponse {
        let (user, id) = try await messageTarget(request, conversation, rawID)
        let name = try SocketIOJSONBody(request.body).requiredString("state")
        guard let state = SocketIOReceiptState(name: name) else {
            throw SocketIOServerError.badRequest("state must be delivered or read")
        }
        let message = try await commit(conversation) { store in
            let before = try Self.found(try store.message(conversation: conversation, id: id), id)
            let after = try Self.found(try store.setReceipt(conversation: conversation, id: id, userID: user, state: state,
                                                            nowMs: SocketIOTime.nowMs()), id)
            return (after, after.version == before.version ? nil : "message:receipt")
        }
        return Self.ok(message.json)
    }

    // MARK: Typing (Socket.IO)

    /// Publishes `{"conversationId","userId","typing"}` to the other members; 404 when `user` is not a member.
    func typing(user: String, conversation: String, typing: Bool) async throws {
        let store = self.store, hub = self.hub
        guard SocketIOValidation.isValidID(conversation),
              let found = try await runner.run({ try store.conversation(conversation) }), found.members.contains(user) else {
            throw SocketIOServerError.notFound("conversation \(conversation) not found")
        }
        let event = SocketIOLiveEvent(name: "typing", payload: .object([
            ("conversationId", .string(conversation)), ("userId", .string(user)), ("typing", .bool(typing)),
        ]))
        // On a runner thread, like the other publishes: the gate may be held across SQLite work, which must
        // not stall a cooperative-pool thread.
        try await runner.run { [self] in
            self.publishGate.withLock { _ in hub.publish(event, to: found.members.filter { $0 != user }) }
        }
    }

    // MARK: Uploads

    /// Whether `id` has the shape of a file ID: 32 lowercase hex digits.
    static func isFileID(_ id: String) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    private func upload(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let user = try await authenticate(request)
        let body = request.body
        guard body.count <= configuration.maxUploadSize else {
            throw SocketIOServerError.tooLarge("the upload is \(body.count) bytes; at most \(configuration.maxUploadSize) are allowed")
        }
        let contentType = request.headers["Content-Type"]?.trimmingCharacters(in: .whitespaces) ?? ""
        guard contentType.utf8.count <= 255, SocketIOValidation.hasNoControlCharacters(contentType) else {
            throw SocketIOServerError.badRequest("Content-Type is not acceptable")
        }
        let actual = Digest.sha256Hex(body)
        if let claimed = request.headers["X-Content-SHA256"] {
            guard let expected = SocketIOValidation.sha256(claimed.trimmingCharacters(in: .whitespaces)) else {
                throw SocketIOServerError.badRequest("X-Content-SHA256 must be 64 hex digits")
            }
            guard expected == actual else {
                throw SocketIOServerError(status: 400, code: "digest_mismatch",
                                          "the body hashes to \(actual), X-Content-SHA256 says \(expected)")
            }
        }
        var generator = SystemRandomNumberGenerator()
        let id = Digest.hex((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let record = SocketIOUpload(id: id, ownerID: user, contentType: contentType.isEmpty ? "application/octet-stream" : contentType,
                                    size: body.count, sha256: actual)
        let directory = uploads, store = self.store
        try await runner.run {
            let temporary = directory.appendingPathComponent(".upload-\(id)")
            try body.write(to: temporary)
            guard rename(temporary.path, directory.appendingPathComponent(id).path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                throw SocketIOServerError.internal("could not store the upload (errno \(errno))")
            }
            try store.saveUpload(record, nowMs: SocketIOTime.nowMs())
        }
        return Self.ok(.object([("url", .string("\(base.current)/files/\(id)")), ("size", .int(Int64(body.count))),
                                ("sha256", .string(actual))]), status: 201)
    }

    private func file(_ request: HTTPServerRequest, id: String) async throws -> HTTPServerResponse {
        _ = try await authenticate(request)
        guard Self.isFileID(id) else { throw SocketIOServerError.notFound("no file \(id)") }
        let store = self.store, path = uploads.appendingPathComponent(id)
        let found: (SocketIOUpload, Data)? = try await runner.run {
            guard let record = try store.upload(id), FileManager.default.fileExists(atPath: path.path) else { return nil }
            return (record, try Data(contentsOf: path))
        }
        guard let (record, data) = found else { throw SocketIOServerError.notFound("no file \(id)") }
        // Served as a download that browsers must not sniff: the content type is whatever the uploader claimed.
        return HTTPServerResponse(status: 200, headers: [
            "Content-Type": record.contentType, "X-Content-SHA256": record.sha256,
            "X-Content-Type-Options": "nosniff", "Content-Disposition": "attachment",
        ], body: data)
    }
}
