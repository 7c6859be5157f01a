import Foundation
import SocketIOAdapter
import SocketIOServer
import SwitchboardCore
import SwitchboardNet
import TestSupport
import Testing

/// `switchboard socketio register` and `socketio conversation create|add-member` against a running Socket-style
/// server: the tokens and conversation IDs they print work with the adapter.
@Suite("switchboard socketio register and conversation against the server")
struct SocketIOSetupCommandTests {
    @Test("users and a conversation made by the command carry a message; add-member lets a newcomer read it")
    func registerAndConversation() async throws {
        let root = try makeTemporaryFolder("switchboard-socketio-setup-test")
        let server = SocketIOServer(configuration: SocketIOServerConfiguration(dataDirectory: root.appendingPathComponent("socketio")))
        try await withCleanup {
            let url = "http://127.0.0.1:\(try await server.start())"
            var tokens: [UserID: String] = [:]
            for user: UserID in ["erin", "frank", "gina"] {
                tokens[user] = try await SwitchboardCommand.line(["socketio", "register", "--url", url, "--user", user.rawValue])
            }
            let room = ConversationID(try await SwitchboardCommand.line(["socketio", "conversation", "create", "--url", url,
                                                                         "--token", tokens["erin"]!, "--member", "frank"]))
            #expect(room.rawValue.hasPrefix("room-"))
            let named = try await SwitchboardCommand.line(["socketio", "conversation", "create", "--url", url,
                                                           "--token", tokens["frank"]!, "--conversation", "general"])
            #expect(named == "general")

            func adapter(_ user: UserID) -> SocketIOAdapter {
                SocketIOAdapter(configuration: SocketIOAdapter.Configuration(baseURL: URL(string: url)!, token: tokens[user]!,
                                                                             localUser: user), http: HTTPClient())
            }
            let erin = adapter("erin")
            _ = try await erin.publish(try await erin.prepare(
                OutgoingMessage(id: .make(), conversation: room, sender: "erin", text: "hello room", createdAt: Date()), noSend: false))
            #expect(try await adapter("frank").allMessages(in: room).map(\.text) == ["hello room"])

            let gina = adapter("gina")
            #expect(((try? await gina.allMessages(in: room)) ?? []).isEmpty, "gina read the room before she was added")
            let added = try await SwitchboardCommand.run(["socketio", "conversation", "add-member", "--url", url,
                                                          "--token", tokens["frank"]!, "--conversation", room.rawValue,
                                                          "--member", "gina"])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout == "added gina to \(room)\n")
            #expect(try await gina.allMessages(in: room).map(\.text) == ["hello room"])

            let refused = try await SwitchboardCommand.run(["socketio", "conversation", "add-member", "--url", url,
                                                            "--token", "not-a-token", "--conversation", room.rawValue,
                                                            "--member", "gina"])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("--token must be a token `socketio register` printed for this server"),
                    "\(refused.stderr)")
            let outsider = try await SwitchboardCommand.run(["socketio", "conversation", "add-member", "--url", url,
                                                             "--token", tokens["gina"]!, "--conversation", "general",
                                                             "--member", "erin"])
            #expect(outsider.status == 1)
            #expect(outsider.stderr.contains("the token's user be one of its members"), "\(outsider.stderr)")
            let twice = try await SwitchboardCommand.run(["socketio", "register", "--url", url, "--user", "erin"])
            #expect(twice.status == 1)
            #expect(twice.stderr.contains("registering user erin failed"), "\(twice.stderr)")
        } cleanup: {
            await server.stop()
            try? FileManager.default.removeItem(at: root)
        }
    }
}
