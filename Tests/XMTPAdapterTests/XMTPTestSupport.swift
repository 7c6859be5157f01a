import Foundation
import SwitchboardConformance
import SwitchboardCore
import SwitchboardNet
import XMTPAdapter
import XMTPConformance
import XMTPCrypto
import XMTPNode

/// An in-process XMTP-like node on a temporary data directory.
final class TestNode: Sendable {
    /// The running server.
    let server: XMTPNodeServer
    /// Its data directory (removed by `stop`).
    let directory: URL
    /// Its base URL.
    let baseURL: URL

    /// Wraps a started server.
    private init(server: XMTPNodeServer, directory: URL, baseURL: URL) {
        self.server = server
        self.directory = directory
        self.baseURL = baseURL
    }

    /// Starts a node on a fresh temporary directory.
    static func start() async throws -> TestNode {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-adapter-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let server = XMTPNodeServer(configuration: XMTPNodeConfiguration(dataDirectory: directory))
        let port = try await server.start()
        return TestNode(server: server, directory: directory, baseURL: URL(string: "http://127.0.0.1:\(port)")!)
    }

    /// Stops the node and removes its directory.
    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: directory)
    }
}

/// One group of two fresh inboxes on a test node, with helpers to make adapters on chosen databases.
struct TestGroup: Sendable {
    /// The node.
    let node: TestNode
    /// The conversation (group ID hex).
    let conversation: ConversationID
    /// The group's raw ID.
    let groupID: [UInt8]
    /// The group secret.
    let secret: [UInt8]
    /// The first member.
    let alice: UserID
    /// The second member.
    let bob: UserID
    /// Bearer tokens by inbox.
    let tokens: [UserID: String]
    /// A folder for local databases.
    let directory: URL

    /// Registers two inboxes and creates their group.
    static func make(on node: TestNode) async throws -> TestGroup {
        let harness = XMTPHarness(baseURL: node.baseURL)
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
        let aliceToken = try await harness.register(alice)
        let bobToken = try await harness.register(bob)
        let groupID = try SecureRandom.bytes(16)
        try await harness.createGroup(groupID, members: [bob], token: aliceToken)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-adapter-db-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return TestGroup(node: node, conversation: ConversationID(Digest.hex(groupID)), groupID: groupID,
                         secret: try SecureRandom.bytes(32), alice: alice, bob: bob,
                         tokens: [alice: aliceToken, bob: bobToken], directory: directory)
    }

    /// Creates another group of the same two members on the node (alice creates it); its conversation ID.
    func makeSiblingGroup() async throws -> ConversationID {
        let groupID = try SecureRandom.bytes(16)
        try await XMTPHarness(baseURL: node.baseURL).createGroup(groupID, members: [bob], token: tokens[alice]!)
        return ConversationID(Digest.hex(groupID))
    }

    /// The path of a named local database in the group's folder.
    func databasePath(_ name: String) -> String { directory.appendingPathComponent("\(name).sqlite").path }

    /// An adapter for `user` on the database `database` (default: the user's own).
    func adapter(_ user: UserID, database: String? = nil) throws -> XMTPAdapter {
        try adapter(user, database: database, at: node.baseURL)
    }

    /// An adapter for `user` on the database `database` (default: the user's own) whose node cannot be reached:
    /// every request fails as a network outage does, the local database is the real one.
    func unreachableAdapter(_ user: UserID, database: String? = nil) throws -> XMTPAdapter {
        try adapter(user, database: database, at: URL(string: "http://127.0.0.1:1")!)
    }

    private func adapter(_ user: UserID, database: String?, at baseURL: URL) throws -> XMTPAdapter {
        let secret = self.secret
        let configuration = XMTPAdapter.Configuration(baseURL: baseURL, inboxID: user, token: tokens[user]!,
                                                      databasePath: databasePath(database ?? user.rawValue),
                                                      groupSecret: { _ in secret })
        return try XMTPAdapter(configuration: configuration)
    }

    /// An outgoing text message from `user`.
    func outgoing(_ text: String, from user: UserID, replyTo: RemoteID? = nil, id: MessageID = .make()) -> OutgoingMessage {
        OutgoingMessage(id: id, conversation: conversation, sender: user, text: text, replyTo: replyTo, createdAt: Date())
    }

    /// Every envelope the node holds for the group, oldest first (raw query, as a third party sees them).
    func envelopeCount() async throws -> Int {
        let client = HTTPClient()
        var count = 0
        var cursor = "0"
        while true {
            var headers = HTTPHeaders()
            headers.add("Content-Type", "application/json")
            headers.add("Authorization", "Bearer \(tokens[alice]!)")
            let body: JSONValue = ["group_id": .string(Data(groupID).base64EncodedString()),
                                   "paging_info": ["direction": "DIRECTION_ASCENDING", "limit": 100, "id_cursor": .string(cursor)]]
            let response = try await client.send(HTTPRequest(method: .post, url: node.baseURL.appendingPathComponent("mls/v1/query-group-messages"),
                                                             headers: headers, body: Data(body.serialized.utf8)))
            let messages = JSONValue.parseOrNil(response.body)?["messages"]?.arrayValue ?? []
            count += messages.count
            guard messages.count == 100, let last = messages.last?["v1"]?["id"]?.stringValue else { return count }
            cursor = last
        }
    }

    /// Sends raw envelope bytes as `user` (for malformed-envelope tests).
    func sendRaw(_ data: [UInt8], as user: UserID) async throws {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json")
        headers.add("Authorization", "Bearer \(tokens[user]!)")
        let body: JSONValue = ["messages": [["v1": ["data": .string(Data(data).base64EncodedString()), "sender_hmac": "",
                                                    "should_push": true]]]]
        let response = try await HTTPClient().send(HTTPRequest(method: .post, url: node.baseURL.appendingPathComponent("mls/v1/send-group-messages"),
                                                               headers: headers, body: Data(body.serialized.utf8)))
        guard response.isSuccess else { throw SwitchboardError(.transport, "raw send failed: HTTP \(response.status)") }
    }

    /// Removes the databases folder.
    func cleanUp() { try? FileManager.default.removeItem(at: directory) }
}
