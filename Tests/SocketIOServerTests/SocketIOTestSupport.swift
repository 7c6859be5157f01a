import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport
@testable import SocketIOServer

/// A fresh temporary directory, removed by the caller.
func makeTemporaryDirectory() throws -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("socketio-server-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A decoded JSON response body.
struct JSONBody: @unchecked Sendable {
    /// The decoded value (nil when the body was not JSON).
    let value: Any?

    /// Decodes `data`.
    init(_ data: Data) {
        value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
    }

    /// The body as an object (empty when it is not one).
    var object: [String: Any] { value as? [String: Any] ?? [:] }

    /// A nested value by key path.
    subscript(_ keys: String...) -> Any? {
        var current: Any? = value
        for key in keys { current = (current as? [String: Any])?[key] }
        return current
    }

    /// The `error.code` of an error body.
    var errorCode: String? { self["error", "code"] as? String }
}

/// One HTTP answer: status, headers and the decoded body.
struct Reply: @unchecked Sendable {
    /// The status code.
    let status: Int
    /// The response headers.
    let headers: HTTPHeaders
    /// The raw body.
    let data: Data
    /// The decoded body.
    var body: JSONBody { JSONBody(data) }
    /// The body as a message object.
    var message: [String: Any] { body.object }
}

/// The Socket-style server a `SocketIOHarness` runs.
extension SocketIOServer: HarnessServer {}

/// One running server plus an HTTP client; `with` starts it, runs the body and always stops it.
typealias SocketIOHarness = ServerHarness<SocketIOServer>

extension ServerHarness where Server == SocketIOServer {
    /// Starts a server (after `configure`), runs `body`, stops the server and removes its directory.
    static func with(configure: (inout SocketIOServerConfiguration) -> Void = { _ in },
                     _ body: (SocketIOHarness) async throws -> Void) async throws {
        try await run(label: "socketio-server-test", make: { directory in
            var configuration = SocketIOServerConfiguration(dataDirectory: directory)
            configure(&configuration)
            return SocketIOServer(configuration: configuration)
        }, body)
    }

    /// Sends `method path` with an optional JSON body (any JSONSerialization value) or raw bytes.
    func call(_ method: HTTPMethod, _ path: String, json: Any? = nil, raw: Data? = nil, token: String? = nil,
              headers extra: HTTPHeaders = HTTPHeaders()) async throws -> Reply {
        var headers = extra
        var body = raw
        if let json {
            headers["Content-Type"] = "application/json"
            body = try JSONSerialization.data(withJSONObject: json)
        }
        if let token { headers["Authorization"] = "Bearer \(token)" }
        let url = try #require(URL(string: base.absoluteString + path))
        let response = try await client.send(HTTPRequest(method: method, url: url, headers: headers, body: body))
        return Reply(status: response.status, headers: response.headers, data: response.body)
    }

    /// Registers `user` and returns its token.
    func register(_ user: String) async throws -> String {
        let reply = try await call(.post, "/auth/register", json: ["userId": user])
        try #require(reply.status == 201, "register \(user): \(reply.status) \(reply.body.object)")
        return try #require(reply.body["token"] as? String)
    }

    /// Creates conversation `id` as `token`'s user with `members`.
    func createConversation(_ id: String, members: [String], token: String) async throws {
        let reply = try await call(.post, "/conversations", json: ["id": id, "members": members], token: token)
        try #require(reply.status == 201, "create \(id): \(reply.status) \(reply.body.object)")
    }

    /// Sends a text message and returns the message object (status 201 required).
    @discardableResult
    func send(_ conversation: String, _ text: String, clientMessageID: String = UUID().uuidString, token: String) async throws
        -> [String: Any] {
        let reply = try await call(.post, "/conversations/\(conversation)/messages",
                                   json: ["clientMessageId": clientMessageID, "text": text], token: token)
        try #require(reply.status == 201, "send: \(reply.status) \(reply.body.object)")
        return reply.message
    }

    /// One history page: the texts, ids, versions and `hasMore`.
    func history(_ conversation: String, query: String = "", token: String) async throws
        -> (texts: [String], ids: [String], versions: [Int], hasMore: Bool, messages: [[String: Any]]) {
        let reply = try await call(.get, "/conversations/\(conversation)/messages\(query)", token: token)
        try #require(reply.status == 200, "history: \(reply.status) \(reply.body.object)")
        let messages = try #require(reply.body["messages"] as? [[String: Any]])
        return (messages.compactMap { $0["text"] as? String }, messages.compactMap { $0["id"] as? String },
                messages.compactMap { ($0["version"] as? NSNumber)?.intValue }, try #require(reply.body["hasMore"] as? Bool),
                messages)
    }
}
