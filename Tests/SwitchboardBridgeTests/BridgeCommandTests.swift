import Foundation
import SupabaseAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardPostgresStore
import SwitchboardStore
import TestSupport
import Testing
import XMTPAdapter

#if canImport(Glibc)
import Glibc
#endif

/// `switchboard bridge` as a child process between the two reference servers (which share one private cluster
/// with the workers' PostgresStore).
@Suite("switchboard bridge between the reference servers", .serialized, .postgresCluster)
struct BridgeCommandEndToEndTests {
    /// The issue's end-to-end acceptance: a child bridge killed and restarted under load, the node cut twice.
    @Test("1,000+ messages both ways, SIGKILL at random moments and node cuts: each side holds every message once")
    func killsAndCuts() async throws {
        let cluster = try PostgresTestCluster.required()
        let servers = try await BridgeServers.start(databaseURL: try cluster.freshDatabase())
        let children = BridgeChildren()
        try await withCleanup { try await runKillsAndCuts(servers, children: children) } cleanup: {
            await children.killAll()
            await servers.stop()
        }
    }

    /// The body of `killsAndCuts` (the caller stops the servers and the children).
    private func runKillsAndCuts(_ servers: BridgeServers, children: BridgeChildren) async throws {
        let started = ContinuousClock.now
        let store: JSONValue = .object(["sqlite": "bridge.sqlite"])
        let configPath = try servers.write(servers.config(store: store, worker: "e2e", leaseSeconds: 3, statusEverySeconds: 1,
                                                          xmtpDatabase: "bridge-xmtp.sqlite"), as: "bridge.json")
        let log = servers.root.appendingPathComponent("bridge.log")
        let environment = servers.childEnvironment
        /// Starts a bridge child on the config.
        func launch() throws -> BridgeChild {
            try children.launch(arguments: ["--config", configPath], environment: environment, log: log)
        }

        let carol = servers.carolAdapter()
        let dave = try servers.daveAdapter(database: "dave.sqlite")
        let perSide = 520
        async let carolLog = sendMessages(carol, in: servers.supabaseConversation, label: "carol", count: perSide,
                                          pace: .milliseconds(25))
        async let daveLog = sendMessages(dave, in: servers.xmtpConversation, label: "dave", count: perSide,
                                         pace: .milliseconds(25))

        // Kill the bridge at random moments (at least 5 times) and restart it; cut the node twice under it.
        var child = try launch()
        let cut: () async throws -> Void = { try await servers.cutXMTPNode(downFor: .milliseconds(1500)) }
        let kills = try await killAndRestart(&child, rounds: 6, pause: 1200...3000, launch: launch, outages: [2: cut, 4: cut])
        let cuts = 2
        let sent = (carol: try await carolLog, dave: try await daveLog)
        let sendingDone = ContinuousClock.now
        let total = sent.carol.sent.count + sent.dave.sent.count

        // Let the last child catch up, then stop it with SIGTERM: it finishes in-flight work and exits 0.
        // A final catch-up-only run syncs whatever is left and exits 0.
        let supabaseReader = servers.carolAdapter()
        let xmtpReader = try servers.daveAdapter(database: "reader.sqlite")
        try await waitUntilBothHold(total, timeout: .seconds(60),
                                    { try await SideContents.read(supabaseReader, in: servers.supabaseConversation) },
                                    { try await SideContents.read(xmtpReader, in: servers.xmtpConversation) })
        let ending = try await stopAndCatchUp(child, configPath: configPath, environment: environment)

        // Count by key on each backend, through fresh adapters.
        let supabase = try await SideContents.read(servers.carolAdapter(), in: servers.supabaseConversation)
        let xmtp = try await SideContents.read(try servers.daveAdapter(database: "verify.sqlite"), in: servers.xmtpConversation)
        let missing = expectEachOnce(supabase, name: "supabase", sent: sent.carol.sent + sent.dave.sent)
            .union(expectEachOnce(xmtp, name: "xmtp", sent: sent.carol.sent + sent.dave.sent))
        if !missing.isEmpty {
            await diagnoseMissing(missing, root: servers.root,
                            sides: [DiagnosedSide(name: "supabase", backend: "supabase", contents: supabase),
                                    DiagnosedSide(name: "xmtp", backend: "xmtp", contents: xmtp)])
        }
        let carolKeys = Set(sent.carol.sent.map(\.id)), daveKeys = Set(sent.dave.sent.map(\.id))
        #expect(xmtp.messages.filter { $0.idempotencyKey.map(carolKeys.contains) == true }.allSatisfy { $0.sender == servers.bridgeInbox },
                "xmtp: a copy of carol's message is not sent by the bridge")
        #expect(supabase.messages.filter { $0.idempotencyKey.map(daveKeys.contains) == true }.allSatisfy { $0.sender == "bridge" },
                "supabase: a copy of dave's message is not sent by the bridge")
        #expect(supabase.messages.filter { $0.idempotencyKey.map(daveKeys.contains) == true }
                    .allSatisfy { $0.metadata["bridge.sender"] == servers.dave.rawValue },
                "supabase: a copy does not name its original sender")

        // Edits reach the counterpart; reactions land on the counterpart of the message reacted to.
        let edits = sent.carol.edits.merging(sent.dave.edits) { first, _ in first }
        expectEdits(edits, on: [("supabase", supabase), ("xmtp", xmtp)])
        expectBridgedReactions(on: xmtp, of: sent.carol, by: servers.bridgeInbox, side: "xmtp")
        expectBridgedReactions(on: supabase, of: sent.dave, by: "bridge", side: "supabase")

        let duration = ContinuousClock.now - started
        let figures = """
            bridge end-to-end: \(total) messages (\(sent.carol.sent.count) supabase→xmtp, \(sent.dave.sent.count) xmtp→supabase), \
            \(edits.count) edits, \(sent.carol.reacted.count + sent.dave.reacted.count) reactions, \(kills) SIGKILLs, \
            \(cuts) node cuts; sending took \(sendingDone - started), total \(duration); \
            supabase holds \(supabase.messages.count), xmtp holds \(xmtp.messages.count); last status: \
            \(ending.lastLines.joined(separator: " | ")); final: \(ending.final.stdout.split(separator: "\n").last ?? "")
            """
        print(figures)
        #expect(kills >= 5)
    }

    /// Two worker processes on one PostgresStore: the survivor takes the dead holder's pair over.
    @Test("two workers on one PostgresStore: SIGKILL the lease holder, the other takes the pair over; all cross once")
    func workerTakeover() async throws {
        let cluster = try PostgresTestCluster.required()
        let servers = try await BridgeServers.start(databaseURL: try cluster.freshDatabase())
        try await withCleanup { try await runTakeover(servers, storeURL: try cluster.freshDatabase()) } cleanup: {
            await servers.stop()
        }
    }

    /// The body of `workerTakeover` (the caller stops the servers).
    private func runTakeover(_ servers: BridgeServers, storeURL: String) async throws {
        let started = ContinuousClock.now
        // The test's own handle on the shared store (it also creates the schema before the workers race to).
        let store = try PostgresStore(url: storeURL)
        defer { store.close() }
        let lease = BridgeWorker.leaseName("general")
        let leaseSeconds = 3.0
        var paths: [String: String] = [:]
        for worker in ["worker-1", "worker-2"] {
            paths[worker] = try servers.write(servers.config(store: .object(["postgres": "env:BRIDGE_TEST_STORE"]), worker: worker,
                                                             leaseSeconds: leaseSeconds, statusEverySeconds: 1,
                                                             xmtpDatabase: "\(worker)-xmtp.sqlite"), as: "\(worker).json")
        }
        var environment = servers.childEnvironment
        environment["BRIDGE_TEST_STORE"] = storeURL
        /// Starts the child of `worker`.
        func launch(_ worker: String) throws -> BridgeChild {
            try BridgeChild(arguments: ["--config", paths[worker] ?? ""], environment: environment,
                            log: servers.root.appendingPathComponent("\(worker).log"))
        }
        /// The lease's current owner.
        func owner() async -> String? { try? await store.leaseOwner(lease, now: Date()) }
        /// Waits until the owner satisfies `predicate` (or the timeout passes); returns the owner.
        func waitForOwner(_ predicate: (String?) -> Bool, timeout: Duration) async throws -> String? {
            let deadline = TestTime.deadline(after: timeout)
            while ContinuousClock.now < deadline {
                let current = await owner()
                if predicate(current) { return current }
                try await Task.sleep(for: .milliseconds(50))
            }
            return await owner()
        }

        var children = ["worker-1": try launch("worker-1")]
        let first = try await waitForOwner({ $0 == "worker-1" }, timeout: .seconds(20))
        #expect(first == "worker-1", "worker-1 did not take the lease (owner \(first ?? "none"))")
        children["worker-2"] = try launch("worker-2")

        let carol = servers.carolAdapter()
        let dave = try servers.daveAdapter(database: "dave.sqlite")
        var sent: [SentMessage] = []
        /// 60 messages from each side.
        func burst(_ label: String) async throws {
            async let left = sendMessages(carol, in: servers.supabaseConversation, label: "carol \(label)", count: 60, pace: .milliseconds(10))
            async let right = sendMessages(dave, in: servers.xmtpConversation, label: "dave \(label)", count: 60, pace: .milliseconds(10))
            sent += try await left.sent + right.sent
        }
        try await burst("before")
        try await Task.sleep(for: .milliseconds(500))
        let holder = try #require(await owner(), "nobody holds the lease")
        let survivor = holder == "worker-1" ? "worker-2" : "worker-1"
        await children[holder]?.killHard()
        let killedAt = ContinuousClock.now
        try await burst("during")
        let taken = try await waitForOwner({ $0 == survivor }, timeout: .seconds(30))
        let takeover = ContinuousClock.now - killedAt
        #expect(taken == survivor, "\(survivor) did not take the lease over (owner \(taken ?? "none"))")
        try await burst("after")

        let total = sent.count
        let supabaseReader = servers.carolAdapter()
        let xmtpReader = try servers.daveAdapter(database: "reader.sqlite")
        let deadline = TestTime.deadline(after: .seconds(60))
        var supabase = SideContents(), xmtp = SideContents()
        while ContinuousClock.now < deadline {
            supabase = try await SideContents.read(supabaseReader, in: servers.supabaseConversation)
            xmtp = try await SideContents.read(xmtpReader, in: servers.xmtpConversation)
            if supabase.copiesByKey.count >= total && xmtp.copiesByKey.count >= total { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        let survivorChild = try #require(children[survivor])
        survivorChild.send(SIGTERM)
        let status = await survivorChild.waitForExit(timeout: .seconds(30))
        #expect(status == 0, "SIGTERM: \(survivor) exited with \(status.map(String.init) ?? "nothing")")
        if status == nil { await survivorChild.killHard() }
        let ownerAfter = await owner()
        #expect(ownerAfter == nil, "the lease was not released on SIGTERM (owner \(ownerAfter ?? "none"))")

        supabase = try await SideContents.read(servers.carolAdapter(), in: servers.supabaseConversation)
        xmtp = try await SideContents.read(try servers.daveAdapter(database: "verify.sqlite"), in: servers.xmtpConversation)
        for (name, contents) in [("supabase", supabase), ("xmtp", xmtp)] {
            let copies = contents.copiesByKey
            let expected = Set(sent.map(\.id))
            #expect(copies.filter { $0.value.count > 1 }.isEmpty, "\(name): keys on several messages")
            #expect(Set(copies.keys) == expected, "\(name): holds \(copies.count) keys, expected \(expected.count)")
            #expect(Set(contents.messages.map(\.remoteID)).count == expected.count, "\(name): \(contents.messages.count) messages")
        }
        print("""
            bridge takeover: \(total) messages (before, during and after), \(holder) SIGKILLed, \(survivor) took over \
            after \(takeover) (lease \(Int(leaseSeconds)) s); total \(ContinuousClock.now - started)
            """)
    }
}

/// Bad configs exit with status 2 and name the field.
@Suite("switchboard bridge config errors")
struct BridgeConfigErrorTests {
    /// A valid config to break.
    private static let valid: [String: JSONValue] = [
        "store": .object(["sqlite": "bridge.sqlite"]),
        "pairs": [.object([
            "name": "general",
            "a": .object(["adapter": "supabase", "url": "http://127.0.0.1:1", "conversation": "6f1c1c52-55a7-4f6e-9d0b-0d7f1f6e8a10",
                          "apiKey": "anon", "accessToken": "token", "user": "bridge"]),
            "b": .object(["adapter": "xmtp", "url": "http://127.0.0.1:2", "conversation": "00112233445566778899aabbccddeeff",
                          "inbox": "bridge", "token": "t", "groupSecret": .string(String(repeating: "ab", count: 32)),
                          "database": "x.sqlite"]),
        ])],
    ]

    /// The valid config with pair 0's side `side` field `key` set to `value`.
    private static func pairField(_ side: String, _ key: String, _ value: JSONValue) -> JSONValue {
        var config = valid
        guard var pair = config["pairs"]?.arrayValue?.first?.objectValue, var endpoint = pair[side]?.objectValue else { return .null }
        endpoint[key] = value
        pair[side] = .object(endpoint)
        config["pairs"] = [.object(pair)]
        return .object(config)
    }

    /// One broken config and the message it must produce.
    struct BadConfig: Sendable, CustomTestStringConvertible {
        /// What is broken.
        var label: String
        /// The expected part of standard error.
        var expected: String
        /// The file's text.
        var text: String
        /// The label.
        var testDescription: String { label }
    }

    /// The broken configs.
    static let badConfigs: [BadConfig] = {
        /// The valid config after `change`, as text.
        func with(_ change: (inout [String: JSONValue]) -> Void) -> String {
            var config = valid
            change(&config)
            return JSONValue.object(config).serialized
        }
        let sameBackend: String = {
            var config = valid
            guard var pair = config["pairs"]?.arrayValue?.first?.objectValue else { return "" }
            pair["b"] = pair["a"]
            config["pairs"] = [.object(pair)]
            return JSONValue.object(config).serialized
        }()
        return [
            BadConfig(label: "not JSON", expected: "config: is not valid JSON", text: "{\"store\": "),
            BadConfig(label: "no store", expected: "store: is required", text: with { $0["store"] = nil }),
            BadConfig(label: "bad URL", expected: "pairs[0].b.url: must be an http(s) URL",
                      text: pairField("b", "url", "ftp://example.com").serialized),
            BadConfig(label: "lease not a number", expected: "leaseSeconds: must be a number", text: with { $0["leaseSeconds"] = "soon" }),
            BadConfig(label: "unset env", expected: "pairs[0].a.accessToken: names environment variable BRIDGE_TEST_NOT_SET",
                      text: pairField("a", "accessToken", "env:BRIDGE_TEST_NOT_SET").serialized),
            BadConfig(label: "short secret", expected: "pairs[0].b.groupSecret: must be 64 hex digits",
                      text: pairField("b", "groupSecret", "abcd").serialized),
            BadConfig(label: "same backend", expected: "pairs[0].b.backend: both sides use backend ID", text: sameBackend),
            BadConfig(label: "unknown field", expected: "pair: unknown field", text: with { $0["pair"] = "general" }),
            BadConfig(label: "no pairs", expected: "pairs: must be a non-empty array", text: with { $0["pairs"] = .array([]) }),
            BadConfig(label: "duplicate names", expected: "pairs[1].name: 'general' names another pair too",
                      text: with { $0["pairs"] = .array(($0["pairs"]?.arrayValue ?? []) + ($0["pairs"]?.arrayValue ?? [])) }),
            BadConfig(label: "store both", expected: "store: give either sqlite or postgres",
                      text: with { $0["store"] = .object(["sqlite": "a.sqlite", "postgres": "postgres://x@127.0.0.1/db"]) }),
        ]
    }()

    /// Every broken config exits 2 naming its field, and opens no store.
    @Test("each mistake exits 2 and names its field", arguments: badConfigs)
    func badConfig(_ bad: BadConfig) async throws {
        let label = bad.label, expected = bad.expected
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("bridge-config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bridge.json").path
        try Data(bad.text.utf8).write(to: URL(fileURLWithPath: path))
        let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, ["bridge", "--config", path],
                                                        timeout: .seconds(30))
        #expect(result.status == 2, "\(label): exit \(result.status), stderr \(result.stderr)")
        #expect(result.stderr.contains(expected), "\(label): stderr was \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("bridge.sqlite").path),
                "\(label): the store was created despite the error")
    }

    /// A missing --config is a usage error.
    @Test("no --config is a usage error (exit 2)")
    func missingConfig() async throws {
        let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, ["bridge"], timeout: .seconds(30))
        #expect(result.status == 2)
        #expect(result.stderr.contains("--config"))
    }
}
