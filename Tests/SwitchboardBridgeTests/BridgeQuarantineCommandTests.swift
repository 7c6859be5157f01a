import Foundation
import SocketIOAdapter
import SocketIOConformance
import SocketIOServer
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardCore
import SwitchboardStore
import TestSupport
import Testing

/// `switchboard bridge quarantine list|retry|drop` on a store a real bridge run wrote: a Socket-style server that
/// takes at most 200 bytes of text refuses (400) the copy of a longer Supabase-like message for good, so
/// `switchboard bridge --catch-up-only` holds it and goes on; the operator lists, retries and drops it.
@Suite("switchboard bridge quarantine against a bridge run", .serialized, .postgresCluster)
struct BridgeQuarantineCommandTests {
    @Test("list shows the held change with its reason, retry has the next run bridge it again, drop forgets it")
    func listRetryDrop() async throws {
        let cluster = try PostgresTestCluster.required()
        let servers = try await QuarantineServers.start(databaseURL: try cluster.freshDatabase())
        try await withCleanup { try await runListRetryDrop(servers) } cleanup: { await servers.stop() }
    }

    /// The body of `listRetryDrop` (the caller stops the servers).
    private func runListRetryDrop(_ servers: QuarantineServers) async throws {
        let carol = servers.carolAdapter()
        let long = String(repeating: "far too long for the room ", count: 12)
        var refused: RemoteID?
        for text in ["fits", long, "after it"] {
            let outgoing = OutgoingMessage(id: .make(), conversation: servers.conversation, sender: carol.localUser, text: text,
                                           createdAt: Date())
            let prepared = try await carol.prepare(outgoing, noSend: false)
            let remote = try #require(try await carol.publish(prepared).remoteID ?? prepared.remoteID)
            if text == long { refused = remote }
        }
        let refusedID = try #require(refused)

        // The bridge run holds the long message and copies the others.
        let run = try await servers.switchboard(["bridge", "--config", servers.configPath, "--catch-up-only"])
        #expect(run.status == 0, "catch-up-only exited \(run.status): \(run.stderr.suffix(2000))")
        #expect(run.stdout.contains("quarantined 1"), "\(run.stdout)")
        #expect(run.stderr.contains("quarantined side b message \(refusedID)"), "\(run.stderr.suffix(2000))")
        let room = try await servers.erinAdapter().allMessages(in: servers.room)
        #expect(room.map(\.text) == ["fits", "after it"], "the pair went on past the refused message")

        // list: one entry, naming the source, the kind, the message and the target's refusal.
        var list = try await servers.quarantine(["list"])
        #expect(list.status == 0, "\(list.stderr)")
        #expect(list.stdout.contains("pair general: 1 quarantined"), "\(list.stdout)")
        let entry = try #require(QuarantineLine(list.stdout), "no entry line in: \(list.stdout)")
        #expect(entry.text.contains("from supabase  message \(refusedID)"), "\(entry.text)")
        #expect(entry.text.contains("HTTP 400") && entry.text.contains("at most 200 are allowed"),
                "the reason is the room's refusal: \(entry.text)")
        #expect(!entry.text.contains("(retry requested)"))
        let byPair = try await servers.quarantine(["list", "--pair", "general"])
        #expect(byPair.status == 0 && byPair.stdout == list.stdout, "--pair general lists the same: \(byPair.stdout)")
        // Nothing here signs in, so an operator's shell need not hold the sides' secrets; the bridge itself does.
        let executable = try SwitchboardExecutable.locate().path
        let withoutSecrets = try await ChildProcess.runDetached(
            executable, ["bridge", "quarantine", "list", "--config", servers.configPath], timeout: .seconds(60))
        #expect(withoutSecrets.status == 0 && withoutSecrets.stdout == list.stdout, "\(withoutSecrets.stderr)")
        let bridgeWithoutSecrets = try await ChildProcess.runDetached(
            executable, ["bridge", "--config", servers.configPath, "--catch-up-only"], timeout: .seconds(60))
        #expect(bridgeWithoutSecrets.status == 2 && bridgeWithoutSecrets.stderr.contains("BRIDGE_TEST_"),
                "\(bridgeWithoutSecrets.stderr)")

        // retry: marked, and the next run bridges it again; the room still refuses it, so it is held again.
        let retry = try await servers.quarantine(["retry", String(entry.id)])
        #expect(retry.status == 0, "\(retry.stderr)")
        #expect(retry.stdout.contains("pair general: retry requested for entry \(entry.id)"), "\(retry.stdout)")
        list = try await servers.quarantine(["list"])
        #expect(QuarantineLine(list.stdout)?.text.contains("(retry requested)") == true, "\(list.stdout)")
        let again = try await servers.switchboard(["bridge", "--config", servers.configPath, "--catch-up-only"])
        #expect(again.status == 0, "\(again.stderr.suffix(2000))")
        #expect(again.stderr.contains("quarantined side b message \(refusedID)"),
                "the retry was tried: \(again.stderr.suffix(2000))")
        list = try await servers.quarantine(["list"])
        #expect(list.stdout.contains("pair general: 1 quarantined"), "\(list.stdout)")
        let heldAgain = try #require(QuarantineLine(list.stdout))
        #expect(heldAgain.text.contains("message \(refusedID)") && !heldAgain.text.contains("(retry requested)"), "\(heldAgain.text)")
        #expect(heldAgain.id != entry.id, "held again under a new number")

        // drop: gone, and never bridged; dropping it again, or the old number, says there is no such entry.
        let drop = try await servers.quarantine(["drop", String(heldAgain.id)])
        #expect(drop.status == 0, "\(drop.stderr)")
        #expect(drop.stdout.contains("pair general: dropped entry \(heldAgain.id)"), "\(drop.stdout)")
        list = try await servers.quarantine(["list"])
        #expect(list.stdout.contains("pair general: 0 quarantined") && QuarantineLine(list.stdout) == nil, "\(list.stdout)")
        for id in [heldAgain.id, entry.id] {
            let gone = try await servers.quarantine(["drop", String(id)])
            #expect(gone.status == 1, "drop \(id) of no entry exited \(gone.status)")
            #expect(gone.stderr.contains("no quarantine entry \(id)"), "\(gone.stderr)")
        }
        let last = try await servers.switchboard(["bridge", "--config", servers.configPath, "--catch-up-only"])
        #expect(last.status == 0 && last.stdout.contains("quarantined 0"), "\(last.stdout)")
        #expect(try await servers.erinAdapter().allMessages(in: servers.room).map(\.text) == ["fits", "after it"])
    }
}

/// The usage errors of `switchboard bridge quarantine`, on a config whose endpoints are never contacted.
@Suite("switchboard bridge quarantine: usage errors")
struct BridgeQuarantineCommandUsageTests {
    @Test("a missing --config, an unknown action, pair or entry, a bad or missing entry number: a clear error and a nonzero exit")
    func usageErrors() async throws {
        let folder = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-quarantine-usage-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let endpoint: (String) -> JSONValue = { conversation in
            .object(["adapter": "socketio", "url": "http://127.0.0.1:9", "conversation": .string(conversation),
                     "user": "bridge", "token": "unused"])
        }
        var b = endpoint("room-b").objectValue ?? [:]
        b["backend"] = "socketio-b"
        let config = try writeConfig(bridgeConfig(store: .object(["sqlite": "bridge.sqlite"]), worker: nil, leaseSeconds: 15,
                                                  statusEverySeconds: 5, a: endpoint("room-a"), b: .object(b)),
                                     as: "bridge.json", in: folder)
        let executable = try SwitchboardExecutable.locate().path
        /// Runs `switchboard bridge quarantine` with `arguments`.
        func quarantine(_ arguments: [String]) async throws -> ProcessResult {
            try await ChildProcess.runDetached(executable, ["bridge", "quarantine"] + arguments, timeout: .seconds(30))
        }

        let empty = try await quarantine(["list", "--config", config])
        #expect(empty.status == 0 && empty.stdout.contains("pair general: 0 quarantined"), "\(empty.stdout)\(empty.stderr)")
        let cases: [(arguments: [String], status: Int32, says: String)] = [
            (["list"], 2, "bridge quarantine needs --config FILE"),
            (["retry", "1"], 2, "bridge quarantine needs --config FILE"),
            (["forget", "--config", config], 2, "bridge quarantine needs list, retry or drop"),
            ([], 2, "bridge quarantine needs list, retry or drop"),
            (["retry", "--config", config], 2, "bridge quarantine retry needs entry numbers"),
            (["drop", "--config", config, "abc"], 2, "'abc' is not a quarantine entry number"),
            (["drop", "--config", config, "0"], 2, "'0' is not a quarantine entry number"),
            (["list", "--config", config, "--pair", "nosuch"], 2, "no pair named 'nosuch'"),
            (["list", "--config", config, "--verbose", "yes"], 2, "--verbose"),
            (["retry", "--config", config, "999"], 1, "no quarantine entry 999 held"),
            (["drop", "--config", config, "999"], 1, "no quarantine entry 999"),
            (["list", "--config", folder.appendingPathComponent("missing.json").path], 2, "missing.json"),
        ]
        for (arguments, status, says) in cases {
            let result = try await quarantine(arguments)
            let command = "quarantine " + arguments.joined(separator: " ")
            #expect(result.status == status, "\(command) exited \(result.status): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(command) said: \(result.stderr)")
            #expect(!result.stdout.contains("quarantined"), "nothing listed on an error: \(result.stdout)")
        }
    }
}

/// One entry line of `switchboard bridge quarantine list`: `  7  2026-…Z  from supabase  message <ID>  reason`.
private struct QuarantineLine: Equatable {
    /// The entry number.
    let id: Int64
    /// The whole line.
    let text: String

    /// The first entry line of `output`, if any.
    init?(_ output: String) {
        for line in output.split(separator: "\n") where line.hasPrefix("  ") {
            guard let first = line.split(separator: " ").first, let id = Int64(first) else { continue }
            self.id = id
            text = String(line)
            return
        }
        return nil
    }
}

/// The Supabase-like server, a Socket-style server that takes at most 200 bytes of text, a pair `general` between a
/// room and a conversation, and the bridge config (`switchboard bridge` reads its secrets from the environment).
private final class QuarantineServers: Sendable {
    /// The temporary folder of the servers' data, the config and the store.
    let root: URL
    /// The Supabase-like server.
    let supabase: SupabaseServer
    /// Token minting and setup against it.
    let harness: SupabaseHarness
    /// Its base URL.
    let supabaseURL: URL
    /// The Socket-style server.
    let socket: SocketIOServer
    /// Its base URL.
    let socketURL: URL
    /// The Socket-style room.
    let room: ConversationID
    /// The Supabase-like conversation.
    let conversation: ConversationID
    /// The Supabase-like member who sends.
    let carol: UserID
    /// The Socket-style member who reads, and her token.
    let erin: (user: UserID, token: String)
    /// The environment of every `switchboard` child (the bridge's secrets).
    let environment: [String: String]
    /// The config file.
    let configPath: String

    /// Starts both servers, creates the room and the conversation, and writes the config.
    static func start(databaseURL: String) async throws -> QuarantineServers {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-quarantine-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var supabaseConfiguration = SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"),
                                                                jwtSecret: BridgeServers.jwtSecret)
        supabaseConfiguration.databaseURL = databaseURL
        let supabase = SupabaseServer(configuration: supabaseConfiguration)
        var socketConfiguration = SocketIOServerConfiguration(dataDirectory: root.appendingPathComponent("socketio"))
        socketConfiguration.maxTextBytes = 200
        let socket = SocketIOServer(configuration: socketConfiguration)
        do {
            let supabaseURL = URL(string: "http://127.0.0.1:\(try await supabase.start())")!
            let socketURL = URL(string: "http://127.0.0.1:\(try await socket.start())")!
            let suffix = String(UUID().uuidString.prefix(8).lowercased())
            let socketHarness = SocketIOHarness(baseURL: socketURL)
            let erin = UserID("erin-\(suffix)"), bridge = UserID("bridge-\(suffix)"), carol = UserID("carol-\(suffix)")
            let erinToken = try await socketHarness.register(erin), bridgeToken = try await socketHarness.register(bridge)
            let room = ConversationID("quarantine-\(suffix)")
            try await socketHarness.createConversation(room, members: [erin, bridge], token: erinToken)
            let harness = SupabaseHarness(baseURL: supabaseURL, jwtSecret: BridgeServers.jwtSecret)
            let conversation = try await harness.createConversation(title: "quarantine", members: ["bridge", carol])
            let a: JSONValue = .object(["adapter": "socketio", "url": .string(socketURL.absoluteString),
                                        "conversation": .string(room.rawValue), "user": .string(bridge.rawValue),
                                        "token": "env:BRIDGE_TEST_SIO_TOKEN"])
            let b: JSONValue = .object(["adapter": "supabase", "url": .string(supabaseURL.absoluteString),
                                        "conversation": .string(conversation.rawValue), "apiKey": "env:BRIDGE_TEST_SB_ANON",
                                        "accessToken": "env:BRIDGE_TEST_SB_TOKEN", "user": "bridge"])
            let config = bridgeConfig(store: .object(["sqlite": "bridge.sqlite"]), worker: "quarantine", leaseSeconds: 3,
                                      statusEverySeconds: 1, a: a, b: b)
            let environment = ["BRIDGE_TEST_SIO_TOKEN": bridgeToken, "BRIDGE_TEST_SB_ANON": harness.token(role: "anon"),
                               "BRIDGE_TEST_SB_TOKEN": harness.token(role: "authenticated", sub: "bridge")]
            return QuarantineServers(root: root, supabase: supabase, harness: harness, supabaseURL: supabaseURL, socket: socket,
                                     socketURL: socketURL, room: room, conversation: conversation, carol: carol,
                                     erin: (erin, erinToken), environment: environment,
                                     configPath: try writeConfig(config, as: "bridge.json", in: root))
        } catch {
            await socket.stop()
            await supabase.stop()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, supabase: SupabaseServer, harness: SupabaseHarness, supabaseURL: URL, socket: SocketIOServer,
                 socketURL: URL, room: ConversationID, conversation: ConversationID, carol: UserID,
                 erin: (user: UserID, token: String), environment: [String: String], configPath: String) {
        self.root = root
        self.supabase = supabase
        self.harness = harness
        self.supabaseURL = supabaseURL
        self.socket = socket
        self.socketURL = socketURL
        self.room = room
        self.conversation = conversation
        self.carol = carol
        self.erin = erin
        self.environment = environment
        self.configPath = configPath
    }

    /// Stops both servers and removes the folder.
    func stop() async {
        await socket.stop()
        await supabase.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Carol's adapter on the Supabase-like server.
    func carolAdapter() -> SupabaseAdapter {
        SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: supabaseURL, apiKey: harness.token(role: "anon"),
            accessToken: harness.token(role: "authenticated", sub: carol.rawValue), localUser: carol))
    }

    /// Erin's adapter on the Socket-style server.
    func erinAdapter() -> SocketIOAdapter {
        SocketIOAdapter(configuration: SocketIOAdapter.Configuration(baseURL: socketURL, token: erin.token, localUser: erin.user))
    }

    /// Runs `switchboard bridge quarantine` with `arguments` and `--config` of the pair (as `switchboard`).
    func quarantine(_ arguments: [String]) async throws -> ProcessResult {
        try await switchboard(["bridge", "quarantine"] + arguments + ["--config", configPath])
    }

    /// Runs the built `switchboard` with `arguments` and the bridge's secrets in its environment, off the cooperative
    /// pool, for at most a minute.
    func switchboard(_ arguments: [String]) async throws -> ProcessResult {
        try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, arguments, environment: environment,
                                           timeout: .seconds(60))
    }
}
