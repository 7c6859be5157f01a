import Foundation
import SwitchboardCore
import SwitchboardNet
import Testing
import TestSupport
import XMTPCodec
@testable import XMTPNode

/// Every suite that runs against both back ends, sharing one private PostgreSQL cluster.
@Suite("XMTP node back ends", .postgresCluster)
struct BackendSuites {}

/// The two store back ends every store and HTTP test runs against.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// SQLite under the data directory.
    case sqlite
    /// PostgreSQL: a fresh database in the suite's private cluster.
    case postgres

    /// The backend's name in test output.
    var testDescription: String { rawValue }

    /// A store of this kind in `directory` (SQLite) or a fresh database (PostgreSQL).
    func makeStore(in directory: URL) throws -> any XMTPNodeStore {
        switch self {
        case .sqlite: try SQLiteNodeStore(path: directory.appendingPathComponent("node.sqlite").path)
        case .postgres: try PostgresNodeStore(url: PostgresTestCluster.required().freshDatabase())
        }
    }
}

/// A value the test needs; throws (failing the test) when it is nil.
func need<T>(_ value: T?, _ what: String = "a required value", sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
    guard let value else { throw MissingValue(what: what, location: sourceLocation) }
    return value
}

/// Thrown by `need` for a nil value.
struct MissingValue: Error, CustomStringConvertible {
    /// What was missing.
    let what: String
    /// Where.
    let location: SourceLocation
    /// `missing …`.
    var description: String { "missing \(what) at \(location)" }
}

/// A fresh temporary directory, removed by the caller.
func makeTemporaryDirectory() throws -> URL {
    let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("xmtp-node-test-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A random 16-byte group ID.
func randomGroupID() -> XMTPNodeGroupID {
    XMTPNodeGroupID(bytes: (0..<16).map { _ in UInt8.random(in: 0...255) })!
}

/// Envelope bytes for `group` carrying `payload` as ciphertext.
func envelope(_ group: XMTPNodeGroupID, _ payload: [UInt8]) -> [UInt8] {
    XMTPGroupEnvelope(groupID: group.bytes, nonce: Array(repeating: 7, count: 12), ciphertext: payload).encoded()
}

/// A message input for `group` whose ciphertext is `text`.
func input(_ group: XMTPNodeGroupID, _ text: String) -> XMTPNodeMessageInput {
    XMTPNodeMessageInput(groupID: group, data: envelope(group, Array(text.utf8)), senderHMAC: [1, 2, 3], shouldPush: true)
}

/// A decoded JSON object from a response.
struct JSONBody: @unchecked Sendable {
    /// The object (empty when the body was not an object).
    let object: [String: Any]

    /// Decodes `data`.
    init(_ data: Data) {
        object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
    }

    /// A nested value by key path.
    subscript(_ keys: String...) -> Any? {
        var current: Any? = object
        for key in keys { current = (current as? [String: Any])?[key] }
        return current
    }
}

/// The XMTP-like node a `NodeHarness` runs.
extension XMTPNodeServer: HarnessServer {}

/// One running node plus an HTTP client, for the HTTP tests.
typealias NodeHarness = ServerHarness<XMTPNodeServer>

extension ServerHarness where Server == XMTPNodeServer {
    /// Starts a node on `backend`, runs `body`, stops the node and removes its directory.
    static func with(_ backend: Backend, configure: (inout XMTPNodeConfiguration) -> Void = { _ in },
                     _ body: (NodeHarness) async throws -> Void) async throws {
        let databaseURL = backend == .postgres ? try PostgresTestCluster.required().freshDatabase() : nil
        try await run(label: "xmtp-node-test", make: { directory in
            var configuration = XMTPNodeConfiguration(dataDirectory: directory)
            configuration.subscriptionHeartbeat = .milliseconds(200)
            if let databaseURL { configuration.databaseURL = databaseURL }
            configure(&configuration)
            return XMTPNodeServer(configuration: configuration)
        }, body)
    }

    /// POSTs `json` (any JSONSerialization value) to `path` with an optional bearer token.
    func post(_ path: String, _ json: Any, token: String? = nil) async throws -> (status: Int, body: JSONBody) {
        let response = try await client.send(request(path, json, token: token))
        return (response.status, JSONBody(response.body))
    }

    /// The POST request for `path`.
    func request(_ path: String, _ json: Any, token: String? = nil) throws -> HTTPRequest {
        var headers: HTTPHeaders = ["Content-Type": "application/json"]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        return HTTPRequest(method: .post, url: base.appendingPathComponent(path), headers: headers,
                           body: try JSONSerialization.data(withJSONObject: json))
    }

    /// Registers `inbox` and returns its token.
    func register(_ inbox: String) async throws -> String {
        let (status, body) = try await post("identity/v1/register", ["inbox_id": inbox])
        try #require(status == 200, "register \(inbox): \(status) \(body.object)")
        return try #require(body["token"] as? String)
    }

    /// Creates `group` as `token`'s inbox with `members`.
    func createGroup(_ group: XMTPNodeGroupID, members: [String], token: String) async throws {
        let (status, body) = try await post("mls/v1/create-group", ["group_id": group.base64, "members": members], token: token)
        try #require(status == 200, "create-group: \(status) \(body.object)")
    }

    /// Sends one message per text to `group`; returns the status.
    @discardableResult
    func send(_ group: XMTPNodeGroupID, _ texts: [String], token: String) async throws -> Int {
        let messages = texts.map { text in
            ["v1": ["data": Base64.encode(envelope(group, Array(text.utf8))), "sender_hmac": "AQID", "should_push": true]]
        }
        return try await post("mls/v1/send-group-messages", ["messages": messages], token: token).status
    }

    /// Queries one page; returns (ids, texts, cursor).
    func query(_ group: XMTPNodeGroupID, direction: String = "DIRECTION_ASCENDING", limit: Int = 100, cursor: UInt64 = 0,
               token: String) async throws -> (ids: [UInt64], texts: [String], cursor: String?, status: Int) {
        let (status, body) = try await post("mls/v1/query-group-messages", [
            "group_id": group.base64,
            "paging_info": ["direction": direction, "limit": limit, "id_cursor": String(cursor)],
        ], token: token)
        let messages = (body["messages"] as? [[String: Any]]) ?? []
        var ids: [UInt64] = [], texts: [String] = []
        for message in messages {
            let v1 = try #require(message["v1"] as? [String: Any])
            ids.append(try need(UInt64(try need(v1["id"] as? String))))
            texts.append(try Self.text(v1))
        }
        return (ids, texts, body["paging_info", "id_cursor"] as? String, status)
    }

    /// The ciphertext text of a `v1` message object.
    static func text(_ v1: [String: Any]) throws -> String {
        let data = try need(Base64.decodeLenient(try need(v1["data"] as? String)))
        return String(decoding: try XMTPGroupEnvelope.decode(data).ciphertext, as: UTF8.self)
    }
}
