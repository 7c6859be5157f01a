import Foundation
import SocketIOAdapter
import SocketIOConformance
import SocketIOServer
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// One Socket-style server in-process with `count` conversations `room-<i>` (erin and the bridge's account in each),
/// paired up by the configs of a `switchboard bridge` child.
final class SocketRooms: Sendable {
    /// The temporary folder holding the server's data, the configs, the store and the log.
    let root: URL
    /// The server.
    let server: SocketIOServer
    /// Its base URL.
    let url: URL
    /// The conversations.
    let rooms: [ConversationID]
    /// The user who sends.
    let erin: UserID
    /// Erin's bearer token.
    let erinToken: String
    /// The bridge's account.
    let bridge: UserID
    /// The bridge's bearer token (handed to the child through its environment).
    let bridgeToken: String

    /// Starts the server and creates the conversations.
    static func start(count: Int) async throws -> SocketRooms {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-signal-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let server = SocketIOServer(configuration: SocketIOServerConfiguration(dataDirectory: root.appendingPathComponent("socketio")))
        do {
            let url = URL(string: "http://127.0.0.1:\(try await server.start())")!
            let harness = SocketIOHarness(baseURL: url)
            let suffix = String(UUID().uuidString.prefix(8).lowercased())
            let erin = UserID("erin-\(suffix)"), bridge = UserID("bridge-\(suffix)")
            let erinToken = try await harness.register(erin), bridgeToken = try await harness.register(bridge)
            let rooms = (0..<count).map { ConversationID("room-\($0)-\(suffix)") }
            for room in rooms { try await harness.createConversation(room, members: [erin, bridge], token: erinToken) }
            return SocketRooms(root: root, server: server, url: url, rooms: rooms, erin: erin, erinToken: erinToken,
                               bridge: bridge, bridgeToken: bridgeToken)
        } catch {
            await server.stop()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, server: SocketIOServer, url: URL, rooms: [ConversationID], erin: UserID, erinToken: String,
                 bridge: UserID, bridgeToken: String) {
        self.root = root
        self.server = server
        self.url = url
        self.rooms = rooms
        self.erin = erin
        self.erinToken = erinToken
        self.bridge = bridge
        self.bridgeToken = bridgeToken
    }

    /// Stops the server and removes the folder.
    func stop() async {
        await server.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// The environment the child reads the bridge's token from.
    var childEnvironment: [String: String] { ["BRIDGE_TEST_SIO_TOKEN": bridgeToken] }

    /// The pair `name` bridging room `left` (side a, with `"backend"` set to `leftBackend` when given) with room
    /// `right` (side b, under backend ID `socketio-b`); `url` replaces side b's URL.
    func pair(_ name: String, _ left: Int, _ right: Int, leftBackend: String? = nil, url: String? = nil) -> JSONValue {
        /// One side's endpoint.
        func side(_ room: Int, backend: String?, url: String) -> JSONValue {
            var fields: [String: JSONValue] = ["adapter": "socketio", "url": .string(url), "conversation": .string(rooms[room].rawValue),
                                               "user": .string(bridge.rawValue), "token": "env:BRIDGE_TEST_SIO_TOKEN"]
            if let backend { fields["backend"] = .string(backend) }
            return .object(fields)
        }
        return .object(["name": .string(name), "a": side(left, backend: leftBackend, url: self.url.absoluteString),
                        "b": side(right, backend: "socketio-b", url: url ?? self.url.absoluteString)])
    }

    /// Writes the config of `pairs` (SQLite store `bridge.sqlite`, worker `signals`) as `bridge.json`; returns its path.
    @discardableResult
    func writeBridgeConfig(_ pairs: [JSONValue]) throws -> String {
        let config: JSONValue = .object(["store": .object(["sqlite": "bridge.sqlite"]), "worker": "signals",
                                         "leaseSeconds": .double(3), "statusEverySeconds": .double(0.5), "pairs": .array(pairs)])
        return try writeConfig(config, as: "bridge.json", in: root)
    }

    /// Erin's adapter.
    func erinAdapter() -> SocketIOAdapter {
        SocketIOAdapter(configuration: SocketIOAdapter.Configuration(baseURL: url, token: erinToken, localUser: erin))
    }

    /// Erin sends `text` in room `room`.
    func send(_ text: String, in room: Int) async throws {
        let adapter = erinAdapter()
        let prepared = try await adapter.prepare(OutgoingMessage(id: .make(), conversation: rooms[room], sender: erin, text: text,
                                                                 createdAt: Date()), noSend: false)
        _ = try await adapter.publish(prepared)
    }

    /// Waits (up to 30 s) until room `room` holds a message reading `text`; returns whether it did.
    func waitFor(_ text: String, in room: Int) async throws -> Bool {
        let adapter = erinAdapter()
        let deadline = TestTime.deadline(after: .seconds(30))
        while ContinuousClock.now < deadline {
            if try await adapter.allMessages(in: rooms[room]).contains(where: { $0.text == text }) { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}

/// The lines of a growing log file.
struct LogFile: Sendable {
    /// The file.
    let url: URL

    /// Every complete line so far.
    func lines() -> [String] {
        let text = (try? String(contentsOf: url, encoding: .utf8)) ?? ""
        var lines = text.components(separatedBy: "\n")
        lines.removeLast()
        return lines
    }

    /// Waits (up to 30 s) for a line after the first `skip` lines that contains every one of `parts`; returns it.
    func waitForLine(after skip: Int = 0, containing parts: String...) async throws -> String {
        let deadline = TestTime.deadline(after: .seconds(30))
        while ContinuousClock.now < deadline {
            if let line = lines().dropFirst(skip).first(where: { line in parts.allSatisfy(line.contains) }) { return line }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("no log line with \(parts) within 30 s; the log:\n\(lines().suffix(40).joined(separator: "\n"))")
    }
}

/// `switchboard bridge` as a child process, sent SIGHUP with changed configs.
@Suite("switchboard bridge signals and log lines", .serialized)
struct BridgeSignalCommandTests {
    /// Whether `line` starts like `2026-11-30T10:00:00.123Z info `, as every line must.
    static func isStamped(_ line: String) -> Bool {
        line.range(of: #"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (trace|debug|info|warning|error) "#,
                   options: .regularExpression) != nil
    }

    /// Finding 4 of issue 28, and the reload it asks for.
    @Test("SIGHUP reloads the config: pairs added, removed and changed; an invalid config is refused; SIGTERM exits 0")
    func reloadOnSIGHUP() async throws {
        let rooms = try await SocketRooms.start(count: 8)
        let children = BridgeChildren()
        try await withCleanup { try await runReload(rooms, children: children) } cleanup: {
            await children.killAll()
            await rooms.stop()
        }
    }

    /// The body of `reloadOnSIGHUP` (the caller stops the server and the child).
    private func runReload(_ rooms: SocketRooms, children: BridgeChildren) async throws {
        let path = try rooms.writeBridgeConfig([rooms.pair("general", 0, 1), rooms.pair("old", 2, 3)])
        let log = LogFile(url: rooms.root.appendingPathComponent("bridge.log"))
        let child = try children.launch(arguments: ["--config", path], environment: rooms.childEnvironment, log: log.url)
        for name in ["general", "old"] { _ = try await log.waitForLine(containing: " info pair \(name): took the lease as signals") }
        let sides = try await log.waitForLine(containing: " info pair general: side a: socketio at ")
        #expect(sides.contains("side b: socketio at \(rooms.url.absoluteString)"), "\(sides)")
        #expect(!sides.contains(rooms.bridgeToken), "a secret was logged")
        try await rooms.send("general before", in: 0)
        try await rooms.send("old before", in: 2)
        #expect(try await rooms.waitFor("general before", in: 1))
        #expect(try await rooms.waitFor("old before", in: 3))

        // Reload: general stays, old goes, new comes.
        var mark = log.lines().count
        try rooms.writeBridgeConfig([rooms.pair("general", 0, 1), rooms.pair("new", 4, 5)])
        child.send(SIGHUP)
        _ = try await log.waitForLine(after: mark, containing: " info config: reloaded \(path): added new; removed old; unchanged general")
        _ = try await log.waitForLine(after: mark, containing: " info pair old: stopped; lease released")
        _ = try await log.waitForLine(after: mark, containing: " info pair new: took the lease as signals")
        let store = try SQLiteStore(path: rooms.root.appendingPathComponent("bridge.sqlite").path)
        defer { store.close() }
        let oldLease = BridgeWorker.leaseName("old")
        #expect(try await store.leaseOwner(oldLease, now: Date()) == nil, "the removed pair's lease is still held")
        #expect(try await store.acquireLease(oldLease, owner: "another-worker", ttl: 60, now: Date()), "another worker cannot take it")
        try await store.releaseLease(oldLease, owner: "another-worker")
        try await rooms.send("general after", in: 0)
        try await rooms.send("new after", in: 4)
        #expect(try await rooms.waitFor("general after", in: 1), "the unchanged pair stopped bridging")
        #expect(try await rooms.waitFor("new after", in: 5), "the added pair does not bridge")
        #expect(child.process.isRunning, "SIGHUP ended the bridge")
        #expect(log.lines().dropFirst(mark).allSatisfy { !$0.contains("pair general: took the lease") }, "general was restarted")

        // An invalid config is refused, naming the file and the field; the running pairs go on.
        mark = log.lines().count
        try rooms.writeBridgeConfig([rooms.pair("general", 0, 1), rooms.pair("new", 4, 5, url: "ftp://127.0.0.1:1")])
        child.send(SIGHUP)
        let refusal = try await log.waitForLine(after: mark, containing: " error config: reload refused: \(path): ")
        #expect(refusal.contains("pairs[1].b.url: must be an http(s) URL") && refusal.contains("the running config stays"), "\(refusal)")
        try await rooms.send("general still", in: 0)
        try await rooms.send("new still", in: 4)
        #expect(try await rooms.waitFor("general still", in: 1))
        #expect(try await rooms.waitFor("new still", in: 5))
        #expect(child.process.isRunning)

        // A changed pair (here side a names its default backend ID: the same bridge, another definition) restarts
        // and goes on where it was; a pair whose side b cannot be reached says so.
        mark = log.lines().count
        try rooms.writeBridgeConfig([rooms.pair("general", 0, 1), rooms.pair("new", 4, 5, leftBackend: "socketio"),
                                     rooms.pair("broken", 6, 7, url: "http://127.0.0.1:1")])
        child.send(SIGHUP)
        _ = try await log.waitForLine(after: mark, containing: " info config: reloaded \(path): added broken; restarted new (changed); unchanged general")
        _ = try await log.waitForLine(after: mark, containing: " info pair new: stopped; lease released")
        _ = try await log.waitForLine(after: mark, containing: " info pair new: took the lease as signals")
        try await rooms.send("new changed", in: 4)
        #expect(try await rooms.waitFor("new changed", in: 5), "the changed pair does not bridge after its restart")
        let broken = try await log.waitForLine(after: mark, containing: " warning pair broken: ", "side b")
        #expect(broken.contains("failed"), "\(broken)")

        // Status lines name their pair; every line carries its time and level.
        let statusDeadline = TestTime.deadline(after: .seconds(30))
        while ContinuousClock.now < statusDeadline, !child.output.allLines().contains(where: { $0.contains(" info pair broken: a→b ") }) {
            try await Task.sleep(for: .milliseconds(50))
        }
        let output = child.output.allLines()
        #expect(output.contains { $0.contains(" info pair general: a→b ") } && output.contains { $0.contains(" info pair broken: a→b ") },
                "\(output.suffix(6))")
        child.send(SIGTERM)
        let status = await child.waitForExit(timeout: .seconds(40))
        #expect(status == 0, "SIGTERM: exit \(status.map(String.init) ?? "none (still running)")")
        for name in ["general", "new", "broken"] {
            #expect(try await store.leaseOwner(BridgeWorker.leaseName(name), now: Date()) == nil, "\(name)'s lease was not released")
        }
        let all = child.output.allLines() + log.lines()
        let unstamped = all.filter { !Self.isStamped($0) }
        #expect(unstamped.isEmpty, "lines without a time and level: \(unstamped.prefix(5))")
        #expect(log.lines().contains { $0.contains(" info worker signals: SIGTERM: finishing the changes in flight") })
    }
}

/// `switchboard bridge` on a PostgreSQL store: the server's notices are debug lines, not raw standard error.
@Suite("switchboard bridge and PostgreSQL notices", .serialized, .postgresCluster)
struct BridgePostgresNoticeTests {
    /// Issue 28's "PostgreSQL NOTICEs leak into the bridge's stderr".
    @Test("PostgreSQL notices stay off standard error; --verbose shows them as timestamped debug lines")
    func notices() async throws {
        let cluster = try PostgresTestCluster.required()
        let rooms = try await SocketRooms.start(count: 2)
        try await withCleanup { try await runNotices(rooms, storeURL: try cluster.freshDatabase()) } cleanup: {
            await rooms.stop()
        }
    }

    /// The body of `notices` (the caller stops the server).
    private func runNotices(_ rooms: SocketRooms, storeURL: String) async throws {
        let config: JSONValue = .object(["store": .object(["postgres": "env:BRIDGE_TEST_STORE"]), "worker": "notices",
                                         "leaseSeconds": .double(3), "pairs": .array([rooms.pair("general", 0, 1)])])
        let path = try writeConfig(config, as: "bridge-postgres.json", in: rooms.root)
        let environment = rooms.childEnvironment.merging(["BRIDGE_TEST_STORE": storeURL]) { _, new in new }
        let executable = try SwitchboardExecutable.locate().path
        /// One catch-up run with `extra` options.
        func catchUp(_ extra: [String]) async throws -> ProcessResult {
            let result = try await ChildProcess.runDetached(executable, ["bridge", "--config", path, "--catch-up-only"] + extra,
                                                            environment: environment, timeout: .seconds(60))
            #expect(result.status == 0, "catch-up-only exited \(result.status): \(result.stderr.suffix(2000))")
            return result
        }
        _ = try await catchUp([])
        // The schema exists now, so opening the store again makes the server say so (CREATE … IF NOT EXISTS).
        let quiet = try await catchUp([])
        #expect(!quiet.stderr.contains("NOTICE") && !quiet.stderr.contains("already exists"), "\(quiet.stderr)")
        let verbose = try await catchUp(["--verbose"])
        let notice = verbose.stderr.split(separator: "\n").first { $0.contains(" debug postgres: NOTICE:") }
        #expect(notice?.contains("already exists, skipping") == true, "no notice line in: \(verbose.stderr)")
        let lines = (quiet.stderr + verbose.stderr + quiet.stdout + verbose.stdout).split(separator: "\n").map(String.init)
        let unstamped = lines.filter { !BridgeSignalCommandTests.isStamped($0) }
        #expect(unstamped.isEmpty, "lines without a time and level: \(unstamped.prefix(5))")
        #expect(!verbose.stdout.contains("signal"), "a signal line after a catch-up: \(verbose.stdout)\(verbose.stderr)")
        #expect(!verbose.stderr.contains("signal"), "a signal line after a catch-up: \(verbose.stderr)")
    }
}
