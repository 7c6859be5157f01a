import Foundation
import SupabaseAdapter
import SupabaseProtocol
import SupabaseServer
import SwitchboardCore
import SwitchboardNet
import TestSupport
import Testing

/// `switchboard supabase token` and `supabase conversation create|add-member` against a running Supabase-like server:
/// what they print works with the adapter, as a user following the README would use it.
@Suite("switchboard supabase token and conversation against the server", .serialized, .postgresCluster)
struct SupabaseSetupCommandTests {
    private static let secret = "supabase-setup-command-tests-secret-0123456789"

    @Test("a conversation made by the command takes a message sent with minted tokens; add-member lets a newcomer read it")
    func conversationWithMintedTokens() async throws {
        try await Self.withServer { url in
            let conversation = try await SwitchboardCommand.line(["supabase", "conversation", "create", "--url", url.absoluteString,
                                                                  "--jwt-secret", Self.secret, "--title", "general",
                                                                  "--member", "alice", "--member", "bridge"])
            #expect(UUID(uuidString: conversation) != nil, "not a UUID: \(conversation)")
            let room = ConversationID(conversation)
            let alice = try await Self.adapter(url, user: "alice")
            let sent = try await alice.publish(try await alice.prepare(
                OutgoingMessage(id: .make(), conversation: room, sender: "alice", text: "hello from the README", createdAt: Date()),
                noSend: false))
            #expect(sent.remoteID != nil)

            let carol = try await Self.adapter(url, user: "carol")
            #expect(((try? await carol.allMessages(in: room)) ?? []).isEmpty, "carol read the room before she was added")
            let added = try await SwitchboardCommand.run(["supabase", "conversation", "add-member", "--url", url.absoluteString,
                                                          "--conversation", conversation, "--member", "carol"],
                                                         environment: ["SWITCHBOARD_JWT_SECRET": Self.secret])
            #expect(added.status == 0, "\(added.stderr)")
            #expect(added.stdout == "added carol to \(conversation)\n")
            #expect(try await carol.allMessages(in: room).map(\.text) == ["hello from the README"])

            let again = try await SwitchboardCommand.run(["supabase", "conversation", "add-member", "--url", url.absoluteString,
                                                          "--jwt-secret", Self.secret, "--conversation", conversation.uppercased(),
                                                          "--member", "carol", "--member", "alice"])
            #expect(again.status == 0, "\(again.stderr)")
            #expect(try await carol.allMessages(in: room).count == 1)
        }
    }

    @Test("each role's token verifies with the server's secret and carries the role, the user and the lifetime asked for")
    func tokenClaims() async throws {
        let signer = JWTSigner(secret: Self.secret)
        let cases: [([String], JWTRole, String?, Int)] = [
            (["--role", "anon"], .anon, nil, 86_400),
            (["--role", "service_role", "--expires", "60"], .serviceRole, nil, 60),
            (["--role", "authenticated", "--user", "alice", "--expires", "315360000"], .authenticated, "alice", 315_360_000),
        ]
        for (options, role, user, lifetime) in cases {
            let before = Date().timeIntervalSince1970
            let token = try await SwitchboardCommand.line(["supabase", "token", "--jwt-secret", Self.secret] + options)
            let claims = try signer.verify(token)
            #expect(claims.role == role)
            #expect(claims.sub == user)
            let expiry = try #require(claims.exp).timeIntervalSince1970
            #expect(expiry >= before.rounded(.down) + Double(lifetime) && expiry <= Date().timeIntervalSince1970 + Double(lifetime) + 1)
            #expect(throws: JWTError.self) { try JWTSigner(secret: Self.secret + "x").verify(token) }
        }
    }

    @Test("a wrong secret and an unknown conversation fail with exit 1 and say why, without printing the secret")
    func refusals() async throws {
        try await Self.withServer { url in
            let wrong = "not-the-secret-of-this-server-0123456789abcdef"
            let refused = try await SwitchboardCommand.run(["supabase", "conversation", "create", "--url", url.absoluteString,
                                                            "--jwt-secret", wrong, "--member", "alice"])
            #expect(refused.status == 1)
            #expect(refused.stderr.contains("is --jwt-secret the secret the server was started with?"), "\(refused.stderr)")
            #expect(!refused.stderr.contains(wrong) && !refused.stdout.contains(wrong))
            let missing = UUID().uuidString.lowercased()
            let unknown = try await SwitchboardCommand.run(["supabase", "conversation", "add-member", "--url", url.absoluteString,
                                                            "--jwt-secret", Self.secret, "--conversation", missing,
                                                            "--member", "alice"])
            #expect(unknown.status == 1)
            #expect(unknown.stderr.contains("no conversation \(missing)"), "\(unknown.stderr)")
        }
        let nobody = try await SwitchboardCommand.run(["supabase", "conversation", "create", "--url", "http://127.0.0.1:9",
                                                       "--jwt-secret", Self.secret, "--member", "alice"])
        #expect(nobody.status == 1)
        #expect(nobody.stderr.contains("(is the server running there?)"), "\(nobody.stderr)")
    }

    /// Runs `body` with a server on a fresh database of the suite's cluster, stopped and removed afterwards.
    private static func withServer(_ body: (URL) async throws -> Void) async throws {
        let cluster = try PostgresTestCluster.required()
        let root = try makeTemporaryFolder("switchboard-supabase-setup-test")
        var configuration = SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"), jwtSecret: secret)
        configuration.databaseURL = try cluster.freshDatabase()
        let server = SupabaseServer(configuration: configuration)
        do {
            let port = try await server.start()
            try await withCleanup {
                try await body(URL(string: "http://127.0.0.1:\(port)")!)
            } cleanup: {
                await server.stop()
            }
        } catch {
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        try? FileManager.default.removeItem(at: root)
    }

    /// An adapter for `user` signed in with tokens the command minted: the anon key and the user's access token.
    private static func adapter(_ url: URL, user: UserID) async throws -> SupabaseAdapter {
        let anon = try await SwitchboardCommand.line(["supabase", "token", "--role", "anon"],
                                                     environment: ["SWITCHBOARD_JWT_SECRET": secret])
        let access = try await SwitchboardCommand.line(["supabase", "token", "--jwt-secret", secret, "--role", "authenticated",
                                                        "--user", user.rawValue])
        return SupabaseAdapter(configuration: SupabaseAdapter.Configuration(baseURL: url, apiKey: anon, accessToken: access,
                                                                            localUser: user), http: HTTPClient())
    }
}

/// The setup commands' mistakes: each is a usage error (exit 2) naming the option, before any request.
@Suite("switchboard setup commands: usage errors")
struct SetupCommandUsageTests {
    private static let secret = "setup-command-usage-tests-secret-0123456789"

    @Test("a bad or missing option is exit 2 with a message naming it", arguments: [
        (["supabase", "token", "--jwt-secret", secret], "needs --role"),
        (["supabase", "token", "--jwt-secret", secret, "--role", "admin"], "--role must be anon, service_role or authenticated"),
        (["supabase", "token", "--jwt-secret", secret, "--role", "authenticated"], "--role authenticated needs --user ID"),
        (["supabase", "token", "--jwt-secret", secret, "--role", "anon", "--user", "alice"], "--user goes with"),
        (["supabase", "token", "--jwt-secret", "short", "--role", "anon"], "--jwt-secret must be at least 32 characters"),
        (["supabase", "token", "--role", "anon"], "--jwt-secret S (or SWITCHBOARD_JWT_SECRET) is required"),
        (["supabase", "token", "--jwt-secret", secret, "--role", "anon", "--expires", "0"], "--expires must be a number of seconds"),
        (["supabase", "token", "--jwt-secret", secret, "--role", "anon", "--expires", "soon"], "--expires must be a number of seconds"),
        (["supabase", "conversation", "create", "--jwt-secret", secret, "--member", "a"], "needs --url"),
        (["supabase", "conversation", "create", "--url", "127.0.0.1:5", "--jwt-secret", secret, "--member", "a"],
         "--url must be an http(s) URL"),
        (["supabase", "conversation", "create", "--url", "http://127.0.0.1:5", "--jwt-secret", secret], "at least one --member"),
        (["supabase", "conversation", "add-member", "--url", "http://127.0.0.1:5", "--jwt-secret", secret,
          "--conversation", "general", "--member", "a"], "--conversation must be a conversation's UUID"),
        (["supabase", "conversation", "delete"], "unknown supabase conversation subcommand 'delete'"),
        (["supabase"], "supabase needs a subcommand"),
        (["xmtp", "register", "--url", "http://127.0.0.1:5"], "xmtp register needs --inbox"),
        (["xmtp", "group", "create", "--url", "http://127.0.0.1:5"], "xmtp group create needs --token"),
        (["xmtp", "group", "add-member", "--url", "http://127.0.0.1:5", "--token", "t", "--group", "zz", "--member", "a"],
         "--group must be a group ID of 32 hex digits"),
        (["xmtp", "group", "add-member", "--url", "http://127.0.0.1:5", "--token", "t",
          "--group", "00112233445566778899aabbccddeeff"], "at least one --member"),
        (["xmtp", "group"], "xmtp group needs a subcommand"),
        (["socketio", "register", "--url", "ftp://127.0.0.1:5", "--user", "erin"], "--url must be an http(s) URL"),
        (["socketio", "conversation", "create", "--url", "http://127.0.0.1:5", "--token", "t", "--member", ""],
         "--member must not be empty"),
        (["socketio", "conversation", "add-member", "--url", "http://127.0.0.1:5", "--token", "t", "--member", "a"],
         "needs --conversation ID"),
        (["socketio", "join"], "unknown socketio subcommand 'join'"),
        (["supabase", "token", "--jwt-secret", secret, "--role", "anon", "--user-id", "a"], "unknown option --user-id"),
    ])
    func usageError(arguments: [String], message: String) async throws {
        let result = try await SwitchboardCommand.run(arguments, environment: ["SWITCHBOARD_JWT_SECRET": ""])
        #expect(result.status == 2, "\(arguments): \(result.stdout)")
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
