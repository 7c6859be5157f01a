import Foundation
import SwitchboardCore
import SwitchboardNet

/// The node's endpoints, from parsed HTTP request to response (no sockets: tests may call `handle` directly).
///
/// Every endpoint but register requires `Authorization: Bearer <token>`; errors are grpc-gateway JSON.
/// - `POST /identity/v1/register` `{"inbox_id"}` → `{"token"}`; 409 if the inbox exists, unless the request
///   carries a valid token of that inbox (then a further token, for another installation, is issued).
/// - `POST /mls/v1/create-group` `{"group_id","members":[..]}` → `{}`; the caller becomes a member; 409 if it exists.
/// - `POST /mls/v1/add-members` / `remove-members` `{"group_id","inbox_ids":[..]}` → `{}` (members only).
/// - `POST /mls/v1/get-group` `{"group_id"}` → `{"group_id","members":[..]}` (members only).
/// - `POST /mls/v1/send-group-messages`, `query-group-messages`, `subscribe-group-messages`: XMTP's shapes.
/// - `POST /upload/v1/presign` `{"content_digest","content_length"}` → `{"upload_url","download_url","expires_ns"}`;
///   `PUT` the upload URL (201), `GET` the download URL (public).
final class NodeService: Sendable {
    /// The node's settings.
    let configuration: XMTPNodeConfiguration
    /// The durable state.
    let store: any XMTPNodeStore
    /// Live subscriptions.
    let hub: MessageHub
    private let runner: BlockingRunner
    /// Held while a batch is committed and published, so listeners see ids in increasing order.
    private let publishGate = Locked(0)
    /// The base of upload URLs, e.g. `http://127.0.0.1:8080`, set once the port is known.
    let base = ServerBaseURL()
    private let uploads: URL

    /// Rows per replay query of a subscription.
    static let replayPageSize = 500

    /// A service over `store`.
    init(configuration: XMTPNodeConfiguration, store: any XMTPNodeStore, runner: BlockingRunner) {
        self.configuration = configuration
        self.store = store
        self.runner = runner
        self.hub = MessageHub(bufferLimit: configuration.subscriberBufferLimit)
        self.uploads = configuration.dataDirectory.appendingPathComponent("uploads", isDirectory: true)
    }

    // MARK: Dispatch

    /// Answers one request; never throws (failures become grpc-gateway error bodies).
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await .answering(request, logger: configuration.logger, internalError: XMTPNodeError(.internal, "the node's store failed"),
                         respond: Self.errorResponse) { try await route(request) }
    }

    private func route(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let objectPrefix = "/upload/v1/objects/"
        switch (request.method, request.path) {
        case (.post, "/identity/v1/register"): return try await register(request)
        case (.post, "/mls/v1/create-group"): return try await createGroup(request)
        case (.post, "/mls/v1/add-members"): return try await changeMembers(request, adding: true)
        case (.post, "/mls/v1/remove-members"): return try await changeMembers(request, adding: false)
        case (.post, "/mls/v1/get-group"): return try await getGroup(request)
        case (.post, "/mls/v1/send-group-messages"): return try await send(request)
        case (.post, "/mls/v1/query-group-messages"): return try await query(request)
        case (.post, "/mls/v1/subscribe-group-messages"): return try await subscribe(request)
        case (.post, "/upload/v1/presign"): return try await presign(request)
        case (.put, let path) where path.hasPrefix(objectPrefix):
            return try await putObject(request, digest: String(path.dropFirst(objectPrefix.count)))
        case (.get, let path) where path.hasPrefix(objectPrefix), (.head, let path) where path.hasPrefix(objectPrefix):
            return try await getObject(digest: String(path.dropFirst(objectPrefix.count)))
        default:
            throw XMTPNodeError(.notFound, "no endpoint \(request.method) \(request.path)")
        }
    }

    /// A grpc-gateway error response.
    static func errorResponse(_ error: XMTPNodeError) -> HTTPServerResponse {
        .json(error.jsonBody, status: error.code.httpStatus)
    }

    private static func ok(_ value: JSONValue = .object([]), status: Int = 200) -> HTTPServerResponse {
        .json(Data(value.serialized.utf8), status: status)
    }

    // MARK: Identity

    /// A fresh random token (32 bytes, hex).
    static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return Digest.hex((0..<32).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The stored form of a token.
    static func tokenHash(_ token: String) -> String { Digest.sha256Hex(Array(token.utf8)) }

    /// The inbox of the request's bearer token; 401 otherwise.
    private func authenticate(_ request: HTTPServerRequest) async throws -> String {
        guard let token = request.bearerToken else {
            throw XMTPNodeError(.unauthenticated, "missing Authorization: Bearer <token> (register at /identity/v1/register)")
        }
        let hash = Self.tokenHash(token)
        let store = self.store
        guard let inbox = try await runner.run({ try store.inbox(forTokenHash: hash) }) else {
            throw XMTPNodeError(.unauthenticated, "unknown bearer token")
        }
        return inbox
    }

    private func register(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let parsed = try RegisterRequest.parse(request.body)
        let token = Self.makeToken(), hash = Self.tokenHash(token), now = NodeClock.nowNs()
        let store = self.store
        let presented = request.bearerToken.map(Self.tokenHash)
        let created = try await runner.run { try store.registerInbox(parsed.inboxID, tokenHash: hash, nowNs: now) }
        if !created {
            let owner: String? = if let presented { try await runner.run { try store.inbox(forTokenHash: presented) } } else { nil }
            guard owner == parsed.inboxID else {
                throw XMTPNodeError(.alreadyExists, "inbox \(parsed.inboxID) is already registered; present one of its tokens to add an installation")
            }
            try await runner.run { try store.addToken(inboxID: parsed.inboxID, tokenHash: hash, nowNs: now) }
        }
        return Self.ok(.object([("inbox_id", .string(parsed.inboxID)), ("token", .string(token))]))
    }

    // MARK: Groups

    /// The group's members after checking `inbox` is one: 404 for an unknown group, 403 for a non-member.
    @discardableResult
    private func requireMember(_ groupID: XMTPNodeGroupID, _ inbox: String) async throws -> [String] {
        let store = self.store
        guard let members = try await runner.run({ try store.members(of: groupID) }) else {
            throw XMTPNodeError(.notFound, "group \(groupID.hex) does not exist")
        }
        guard members.contains(inbox) else {
            throw XMTPNodeError(.permissionDenied, "inbox \(inbox) is not a member of group \(groupID.hex)")
        }
        return members
    }

    private func requireRegistered(_ inboxIDs: [String]) async throws {
        let store = self.store
        let missing = try await runner.run { try inboxIDs.filter { try !store.inboxExists($0) } }
        guard missing.isEmpty else {
            throw XMTPNodeError(.notFound, "inbox \(missing.joined(separator: ", ")) is not registered")
        }
    }

    private func createGroup(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try CreateGroupRequest.parse(request.body)
        try await requireRegistered(parsed.members)
        let members = [inbox] + parsed.members.filter { $0 != inbox }
        let store = self.store, now = NodeClock.nowNs()
        let created = try await runner.run { try store.createGroup(parsed.groupID, creator: inbox, members: members, nowNs: now) }
        guard created else { throw XMTPNodeError(.alreadyExists, "group \(parsed.groupID.hex) already exists") }
        return Self.ok(groupJSON(parsed.groupID, members: members.sorted()))
    }

    private func changeMembers(_ request: HTTPServerRequest, adding: Bool) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try GroupMembersRequest.parse(request.body)
        try await requireMember(parsed.groupID, inbox)
        let store = self.store
        if adding {
            try await requireRegistered(parsed.inboxIDs)
            try await runner.run { try store.addMembers(parsed.inboxIDs, to: parsed.groupID) }
        } else {
            try await runner.run { try store.removeMembers(parsed.inboxIDs, from: parsed.groupID) }
        }
        return Self.ok()
    }

    private func getGroup(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try GetGroupRequest.parse(request.body)
        let members = try await requireMember(parsed.groupID, inbox)
        return Self.ok(groupJSON(parsed.groupID, members: members))
    }

    private func groupJSON(_ groupID: XMTPNodeGroupID, members: [String]) -> JSONValue {
        .object([("group_id", .string(groupID.base64)), ("members", .array(members.map { .string($0) }))])
    }

    // MARK: Messages

    private func send(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try SendGroupMessagesRequest.parse(request.body, maxMessageSize: configuration.maxMessageSize)
        var checked = Set<XMTPNodeGroupID>()
        for message in parsed.messages where checked.insert(message.groupID).inserted {
            try await requireMember(message.groupID, inbox)
        }
        let store = self.store, hub = self.hub
        _ = try await runner.run { [self] in
            try publishGate.withLock { _ in
                let stored = try store.appendMessages(parsed.messages, nowNs: NodeClock.nowNs())
                hub.publish(stored)
                return stored.count
            }
        }
        return Self.ok()
    }

    private func query(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try QueryGroupMessagesRequest.parse(request.body)
        try await requireMember(parsed.groupID, inbox)
        let store = self.store
        let messages = try await runner.run { try store.queryMessages(parsed.groupID, page: parsed.page) }
        // `{"messages":[…],"paging_info":{…}}`, the messages written straight as bytes (a page is the hot path).
        var body = Array(#"{"messages":["#.utf8)
        body.reserveCapacity(messages.reduce(64) { $0 + $1.data.count * 4 / 3 + 160 })
        var groupBase64: [UInt8] = []
        Base64.append(parsed.groupID.bytes, to: &groupBase64)
        for (index, message) in messages.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            message.appendJSON(to: &body, groupBase64: message.groupID == parsed.groupID ? groupBase64 : nil)
        }
        body.append(contentsOf: #"],"paging_info":"#.utf8)
        parsed.page.json(after: messages).write(to: &body)
        body.append(UInt8(ascii: "}"))
        return .json(Data(body), status: 200)
    }

    private func subscribe(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try SubscribeGroupMessagesRequest.parse(request.body)
        for groupID in parsed.cursors.keys.sorted() { try await requireMember(groupID, inbox) }
        let store = self.store, hub = self.hub, runner = self.runner
        let body: @Sendable (HTTPServerResponseWriter) async throws -> Void = { writer in
            // Register first, then read the replay: a message stored meanwhile is in both, and the merge drops
            // the second copy; one stored after the replay read arrives live.
            let listener = hub.add(groups: Set(parsed.cursors.keys))
            defer { hub.remove(listener) }
            var merge = SubscriptionMerge(cursors: parsed.cursors)
            // The messages not sent yet, as one write of their lines.
            func send(_ messages: [XMTPNodeStoredMessage]) async throws {
                let fresh = merge.admit(messages)
                if !fresh.isEmpty { try await writer.write(fresh.reduce(into: Data()) { $0 += $1.streamLine }) }
            }
            while true {
                let marks = merge.highWater
                let page = try await runner.run { try store.messages(after: marks, limit: Self.replayPageSize) }
                try await send(page)
                if page.count < Self.replayPageSize { break }
            }
            while let batch = await listener.next() { try await send(batch) }
            if listener.overflowed {
                try await writer.write(XMTPNodeError(.resourceExhausted,
                                                     "the subscriber fell too far behind; resubscribe from the last id").streamLine)
            }
        }
        return HTTPServerResponse(status: 200, headers: ["Content-Type": "application/json"], body: .writer(body),
                                  heartbeat: HTTPServerResponse.Heartbeat(interval: configuration.subscriptionHeartbeat))
    }

    // MARK: Uploads

    private func presign(_ request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let inbox = try await authenticate(request)
        let parsed = try PresignRequest.parse(request.body, maxSize: configuration.maxUploadSize)
        let token = Self.makeToken()
        let lifetime = configuration.uploadURLLifetime.components
        let lifetimeNs = UInt64(max(0, lifetime.seconds)) * 1_000_000_000 + UInt64(max(0, lifetime.attoseconds / 1_000_000_000))
        let expires = NodeClock.nowNs() + lifetimeNs
        let grant = XMTPNodeUploadGrant(tokenHash: Self.tokenHash(token), contentDigest: parsed.contentDigest,
                                        contentLength: parsed.contentLength, expiresNs: expires, inboxID: inbox)
        let store = self.store
        try await runner.run { try store.saveUploadGrant(grant) }
        let download = "\(base.current)/upload/v1/objects/\(parsed.contentDigest)"
        return Self.ok(.object([
            ("upload_url", .string("\(download)?token=\(token)")),
            ("download_url", .string(download)),
            ("expires_ns", .string(String(expires))),
        ]))
    }

    private static func checkDigest(_ digest: String) throws(XMTPNodeError) -> String {
        guard NodeHex.isDigest(digest) else { throw .invalid("the object name must be a 64-character hex SHA-256 digest") }
        return digest.lowercased()
    }

    private func putObject(_ request: HTTPServerRequest, digest rawDigest: String) async throws -> HTTPServerResponse {
        let digest = try Self.checkDigest(rawDigest)
        guard let token = request.queryValue("token"), !token.isEmpty else {
            throw XMTPNodeError(.unauthenticated, "the upload URL needs its token query parameter (presign first)")
        }
        let store = self.store, hash = Self.tokenHash(token)
        guard let grant = try await runner.run({ try store.uploadGrant(tokenHash: hash) }), grant.contentDigest == digest else {
            throw XMTPNodeError(.permissionDenied, "the upload token is not valid for object \(digest)")
        }
        let now = NodeClock.nowNs()
        guard now < grant.expiresNs else {
            throw XMTPNodeError(.permissionDenied,
                                "the upload URL expired \((now - grant.expiresNs) / 1_000_000) ms ago; presign again")
        }
        let body = request.body
        guard body.count <= configuration.maxUploadSize else {
            throw XMTPNodeError.invalid("the body is \(body.count) bytes; the upload limit is \(configuration.maxUploadSize)")
        }
        guard UInt64(body.count) == grant.contentLength else {
            throw XMTPNodeError.invalid("the body is \(body.count) bytes but \(grant.contentLength) were presigned")
        }
        let actual = Digest.sha256Hex(body)
        guard actual == digest else {
            throw XMTPNodeError.invalid("content digest mismatch: the body hashes to \(actual), the URL names \(digest)")
        }
        let directory = uploads
        try await runner.run {
            let temporary = directory.appendingPathComponent(".upload-\(UUID().uuidString)")
            try body.write(to: temporary)
            guard rename(temporary.path, directory.appendingPathComponent(digest).path) == 0 else {
                try? FileManager.default.removeItem(at: temporary)
                throw XMTPNodeError(.internal, "could not store the object (errno \(errno))")
            }
        }
        return Self.ok(.object([("download_url", .string("\(base.current)/upload/v1/objects/\(digest)"))]), status: 201)
    }

    private func getObject(digest rawDigest: String) async throws -> HTTPServerResponse {
        let digest = try Self.checkDigest(rawDigest)
        let file = uploads.appendingPathComponent(digest)
        let data: Data? = try await runner.run {
            FileManager.default.fileExists(atPath: file.path) ? try Data(contentsOf: file) : nil
        }
        guard let data else { throw XMTPNodeError(.notFound, "no object \(digest)") }
        return HTTPServerResponse(status: 200, headers: ["Content-Type": "application/octet-stream"], body: data)
    }
}
