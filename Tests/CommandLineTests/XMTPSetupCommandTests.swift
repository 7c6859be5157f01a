import Foundation
import SwitchboardCore
import SwitchboardNet
import TestSupport
import Testing
import XMTPAdapter
import XMTPNode

/// `switchboard xmtp register` and `xmtp group create|add-member` against a running XMTP-like node: the tokens,
/// group ID and secret they print work with the adapter.
@Suite("switchboard xmtp register and group against the node")
struct XMTPSetupCommandTests {
    @Test("inboxes registered and a group created by the command carry a message; add-member lets a newcomer read it")
    func registerAndGroup() async throws {
        let root = try makeTemporaryFolder("switchboard-xmtp-setup-test")
        let node = XMTPNodeServer(configuration: XMTPNodeConfiguration(dataDirectory: root.appendingPathComponent("node")))
        try await withCleanup {
            let url = "http://127.0.0.1:\(try await node.start())"
            var tokens: [UserID: String] = [:]
            for inbox: UserID in ["alice", "bob", "carol"] {
                tokens[inbox] = try await SwitchboardCommand.line(["xmtp", "register", "--url", url, "--inbox", inbox.rawValue])
            }
            let created = try await SwitchboardCommand.line(["xmtp", "group", "create", "--url", url, "--token", tokens["alice"]!,
                                                             "--member", "bob"])
            let fields = created.split(separator: " ").map(String.init)
            try #require(fields.count == 2, "expected 'GROUP SECRET', got \(created)")
            let group = ConversationID(fields[0])
            let secret = try #require(Hex.decode(fields[1]))
            #expect(Hex.decode(fields[0])?.count == 16)
            #expect(secret.count == 32)

            func adapter(_ inbox: UserID) throws -> XMTPAdapter {
                try XMTPAdapter(configuration: XMTPAdapter.Configuration(
                    baseURL: URL(string: url)!, inboxID: inbox, token: tokens[inbox]!,
                    databasePath: root.appendingPathComponent("\(inbox.rawValue).sqlite").path,
                    groupSecret: { _ in secret }), http: HTTPClient())
            }
            let alice = try adapter("alice")
            _ = try await alice.publish(try await alice.prepare(
                OutgoingMessage(id: .make(), conversation: group, sender: "alice", text: "hello group", createdAt: Date()), noSend: false))
            #expect(try await adapter("bob").allMessages(in: group).map(\.text) == ["hello group"])

            let carol = try adapter("carol")
            #expect(((try? await carol.allMessages(in: group)) ?? []).isEmpty, "carol read the group before she was added")
            let added = try await SwitchboardCommand.run(["xmtp", "group", "add-member", "--url", url, "--token", tokens["bob"]!,
                                                          "--group", group.rawValue.uppercased(), "--member", "carol"])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(try await carol.allMessages(in: group).map(\.text) == ["hello group"])

            let again = try await SwitchboardCommand.run(["xmtp", "register", "--url", url, "--inbox", "alice"])
            #expect(again.status == 1)
            #expect(again.stderr.contains("registering inbox alice failed") && again.stderr.contains("already registered"),
                    "\(again.stderr)")
            let stranger = try await SwitchboardCommand.run(["xmtp", "group", "add-member", "--url", url, "--token", "not-a-token",
                                                             "--group", group.rawValue, "--member", "bob"])
            #expect(stranger.status == 1)
            #expect(stranger.stderr.contains("--token must be a token `xmtp register` printed for this node"), "\(stranger.stderr)")
            #expect(!stranger.stderr.contains("not-a-token"))
        } cleanup: {
            await node.stop()
            try? FileManager.default.removeItem(at: root)
        }
    }
}
