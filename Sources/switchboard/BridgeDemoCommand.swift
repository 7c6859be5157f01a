import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardCore
import SwitchboardEngine
import SwitchboardNet
import SwitchboardStore
import XMTPAdapter
import XMTPConformance
import XMTPNode

#if canImport(Glibc)
import Glibc
#endif

/// `switchboard demo`: both reference servers on loopback, a bridge between them as a child process that is
/// SIGKILLed mid-burst and restarted, then both timelines side by side, the ID map and a summary counted by
/// querying both backends.
enum BridgeDemoCommand {
    /// Runs the demo; `--data-dir` keeps its files (default: a temporary folder, removed afterwards), and so does
    /// `--keep`, which also prints the bridge config the demo used.
    static func run(_ options: Arguments) async throws -> Int32 {
        let keep = options.value("data-dir") != nil || options.has("keep")
        let root = URL(fileURLWithPath: options.value("data-dir")
            ?? "/tmp/switchboard-demo-\(UUID().uuidString.prefix(8).lowercased())")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let started = Date()
        writeLine("Switchboard demo — an XMTP-like node and a Supabase-like server, bridged (files: \(root.path))")

        // 1. Both reference servers, in this process, on loopback.
        let secret = Digest.hex(try randomBytes(32))
        let supabase = SupabaseServer(configuration: SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"),
                                                                                 jwtSecret: secret))
        let node = XMTPNodeServer(configuration: XMTPNodeConfiguration(dataDirectory: root.appendingPathComponent("xmtp")))
        let supabasePort = try await supabase.start()
        let nodePort = try await node.start()
        let supabaseURL = URL(string: "http://127.0.0.1:\(supabasePort)")!
        let nodeURL = URL(string: "http://127.0.0.1:\(nodePort)")!
        var bridge: Process?
        defer {
            if let bridge, bridge.isRunning { kill(bridge.processIdentifier, SIGKILL) }
        }
        do {
            let exit = try await demo(root: root, supabaseURL: supabaseURL, nodeURL: nodeURL, jwtSecret: secret, bridge: &bridge)
            if let bridge, bridge.isRunning { bridge.terminate(); bridge.waitUntilExit() }
            await supabase.stop()
            await node.stop()
            if !keep { try? FileManager.default.removeItem(at: root) }
            if options.has("keep") { printKeptFiles(root) }
            writeLine(String(format: "\ndone in %.1f s", Date().timeIntervalSince(started)))
            return exit
        } catch {
            await supabase.stop()
            await node.stop()
            throw error
        }
    }

    private static func demo(root: URL, supabaseURL: URL, nodeURL: URL, jwtSecret: String, bridge: inout Process?) async throws -> Int32 {
        let http = HTTPClient()
        // 2. A conversation on each side: alice and the bridge on Supabase, bob and the bridge on XMTP.
        let supabaseHarness = SupabaseHarness(baseURL: supabaseURL, jwtSecret: jwtSecret, http: http)
        try await supabaseHarness.ensureBucket("attachments")
        let room = try await supabaseHarness.createConversation(title: "demo", members: ["alice", "bridge"])
        let xmtpHarness = XMTPHarness(baseURL: nodeURL, http: http)
        let bobToken = try await xmtpHarness.register("bob")
        let bridgeToken = try await xmtpHarness.register("bridge")
        let groupID = try randomBytes(16)
        let groupSecret = try randomBytes(32)
        try await xmtpHarness.createGroup(groupID, members: ["bob", "bridge"], token: bobToken)
        let group = ConversationID(Digest.hex(groupID))
        writeLine("supabase-like: http://127.0.0.1:\(supabaseURL.port ?? 0)  conversation \(room)")
        writeLine("xmtp-like:     http://127.0.0.1:\(nodeURL.port ?? 0)  group \(group)")

        // 3. The bridge's config: secrets come from the environment, not the file.
        let config: JSONValue = [
            "store": ["sqlite": .string(root.appendingPathComponent("bridge.sqlite").path)],
            "statusEverySeconds": 2,
            "pairs": [["name": "demo",
                       "a": ["adapter": "xmtp", "url": .string(nodeURL.absoluteString), "conversation": .string(group.rawValue),
                             "inbox": "bridge", "token": "env:DEMO_XMTP_TOKEN", "groupSecret": "env:DEMO_GROUP_SECRET",
                             "database": .string(root.appendingPathComponent("bridge-xmtp.sqlite").path)],
                       "b": ["adapter": "supabase", "url": .string(supabaseURL.absoluteString), "conversation": .string(room.rawValue),
                             "user": "bridge", "apiKey": "env:DEMO_SUPABASE_ANON", "accessToken": "env:DEMO_SUPABASE_TOKEN"]]],
        ]
        let configURL = root.appendingPathComponent("bridge.json")
        try Data(config.serialized.utf8).write(to: configURL)
        var environment = ProcessInfo.processInfo.environment
        environment["DEMO_XMTP_TOKEN"] = bridgeToken
        environment["DEMO_GROUP_SECRET"] = Digest.hex(groupSecret)
        environment["DEMO_SUPABASE_ANON"] = supabaseHarness.token(role: "anon")
        environment["DEMO_SUPABASE_TOKEN"] = supabaseHarness.token(role: "authenticated", sub: "bridge")
        let bridgeLog = root.appendingPathComponent("bridge.log")
        func startBridge() throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
            if !(process.executableURL.map { FileManager.default.isExecutableFile(atPath: $0.path) } ?? false) {
                process.executableURL = Bundle.main.executableURL
            }
            process.arguments = ["bridge", "--config", configURL.path]
            process.environment = environment
            if !FileManager.default.fileExists(atPath: bridgeLog.path) { _ = FileManager.default.createFile(atPath: bridgeLog.path, contents: nil) }
            let log = try FileHandle(forWritingTo: bridgeLog)
            log.seekToEndOfFile()
            process.standardOutput = log
            process.standardError = log
            try process.run()
            return process
        }

        // 4. The people: alice on Supabase, bob on XMTP, each with the engine over their adapter.
        let alice = ChatClient(adapter: SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
                                   baseURL: supabaseURL, apiKey: supabaseHarness.token(role: "anon"),
                                   accessToken: supabaseHarness.token(role: "authenticated", sub: "alice"), localUser: "alice"), http: http),
                               store: try SQLiteStore(path: root.appendingPathComponent("alice.sqlite").path),
                               configuration: EngineConfiguration(stagingDirectory: root.appendingPathComponent("staging-alice")))
        let secretForGroup = groupSecret
        let bob = ChatClient(adapter: try XMTPAdapter(configuration: XMTPAdapter.Configuration(
                                 baseURL: nodeURL, inboxID: "bob", token: bobToken,
                                 databasePath: root.appendingPathComponent("bob-xmtp.sqlite").path,
                                 groupSecret: { _ in secretForGroup }), http: http),
                             store: try SQLiteStore(path: root.appendingPathComponent("bob.sqlite").path),
                             configuration: EngineConfiguration(stagingDirectory: root.appendingPathComponent("staging-bob")))
        try await alice.start()
        try await bob.start()
        _ = try await alice.open(room)
        _ = try await bob.open(group)

        bridge = try startBridge()
        writeLine("\nbridge started (pid \(bridge?.processIdentifier ?? 0)); sending from both sides")
        let hello = try await alice.send("Hi from the Supabase side", in: room)
        let wave = try await bob.send("Hello from XMTP 👋", in: group)
        let bobsCopyOfHello = try await waitForCopy(of: hello.id, in: bob, conversation: group)
        _ = try await bob.send("Replying to alice across the bridge", in: group, replyTo: bobsCopyOfHello)
        let alicesCopyOfWave = try await waitForCopy(of: wave.id, in: alice, conversation: room)
        try await alice.react(alicesCopyOfWave, symbol: "👍")
        try await alice.edit(hello.id, text: "Hi from the Supabase side (edited)")
        let oops = try await bob.send("this one will be deleted", in: group)
        _ = try await waitForCopy(of: oops.id, in: alice, conversation: room)
        try await bob.delete(oops.id)
        let picture = Data((0..<2048).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        _ = try await alice.send("a file for bob", in: room,
                                 attachments: [.data(picture, filename: "pattern.bin", mimeType: "application/octet-stream")])

        // 5. A burst from both sides; the bridge is SIGKILLed in the middle of it and restarted.
        let burst = 30
        for index in 0..<burst {
            _ = try await alice.send("burst alice \(index)", in: room)
            _ = try await bob.send("burst bob \(index)", in: group)
            if index == burst / 2, let running = bridge {
                kill(running.processIdentifier, SIGKILL)
                running.waitUntilExit()
                writeLine("bridge SIGKILLed mid-burst after \(index + 1) pairs; restarting it")
                bridge = try startBridge()
            }
        }
        let expected = 2 + 1 + 1 + 1 + 2 * burst   // hello, wave, reply, deleted one, file, burst
        // Observers read each backend back: the service role on Supabase, a fresh local database on XMTP.
        let supabaseObserver = SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: supabaseURL, apiKey: supabaseHarness.token(role: "anon"),
            accessToken: supabaseHarness.token(role: "service_role"), localUser: "observer"), http: http)
        let xmtpObserver = try observerAdapter(nodeURL: nodeURL, token: bobToken, root: root, secret: groupSecret, http: http)
        let settled = try await waitUntil(seconds: 60) {
            let left = try await supabaseObserver.allMessages(in: room)
            let right = try await xmtpObserver.allMessages(in: group)
            return left.count >= expected && right.count >= expected && bridgeSettled(left, right)
        }
        if !settled { writeLine("warning: the two sides did not settle within 60 s") }

        // 6. Both timelines, the ID map and a summary, all read back from the backends.
        let left = try await supabaseObserver.allMessages(in: room)
        let right = try await xmtpObserver.allMessages(in: group)
        printSideBySide(left: left, right: right)
        try await printIDMap(root: root, keys: left.compactMap(\.idempotencyKey).prefix(8))
        let exit = summary(left: left, right: right, expected: expected)
        await alice.stop()
        await bob.stop()
        return exit
    }

    /// Where the kept files are and the bridge config the demo ran with (its secrets came from the environment).
    private static func printKeptFiles(_ root: URL) {
        let configURL = root.appendingPathComponent("bridge.json")
        writeLine("\nkept \(root.path) (the bridge's store, log and local databases, both servers' data)")
        guard let data = try? Data(contentsOf: configURL), let object = try? JSONSerialization.jsonObject(with: data),
              let pretty = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys,
                                                                                        .withoutEscapingSlashes]) else {
            writeLine("the bridge config \(configURL.path) could not be read back")
            return
        }
        writeLine("the bridge config it used, \(configURL.path):")
        writeLine(String(decoding: pretty, as: UTF8.self))
        writeLine("Its env: values (DEMO_XMTP_TOKEN, DEMO_GROUP_SECRET, DEMO_SUPABASE_ANON, DEMO_SUPABASE_TOKEN) were handed to "
                  + "the bridge in its environment and are not stored; the servers stopped with the demo.")
    }

    /// Cryptographically random bytes.
    static func randomBytes(_ count: Int) throws -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    /// A fresh XMTP adapter signed in as bob, on its own database, to read the group back.
    private static func observerAdapter(nodeURL: URL, token: String, root: URL, secret: [UInt8], http: HTTPClient) throws -> XMTPAdapter {
        try XMTPAdapter(configuration: XMTPAdapter.Configuration(
            baseURL: nodeURL, inboxID: "bob", token: token,
            databasePath: root.appendingPathComponent("observer-\(UUID().uuidString.prefix(6)).sqlite").path,
            groupSecret: { _ in secret }), http: http)
    }

    /// Waits until `client` holds the bridged copy of `id` (same key) and returns the copy's local ID.
    private static func waitForCopy(of id: MessageID, in client: ChatClient, conversation: ConversationID) async throws -> MessageID {
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let message = try await client.message(id) { return message.id }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw SwitchboardError(.notFound, "the bridged copy of \(id) did not arrive within 30 s")
    }

    /// Polls `condition` until it holds or `seconds` pass.
    private static func waitUntil(seconds: TimeInterval, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if (try? await condition()) == true { return true }
            try await Task.sleep(for: .milliseconds(250))
        }
        return false
    }

    /// Whether every message on each side has its counterpart (by key) with the same text and deletion.
    private static func bridgeSettled(_ left: [RemoteMessage], _ right: [RemoteMessage]) -> Bool {
        let rightByKey = Dictionary(right.compactMap { m in m.idempotencyKey.map { ($0, m) } }, uniquingKeysWith: { a, _ in a })
        return left.allSatisfy { message in
            guard let key = message.idempotencyKey, let other = rightByKey[key] else { return false }
            if message.deletedAt != nil || other.deletedAt != nil { return (other.deletedAt == nil) == (message.deletedAt == nil) }
            return other.text == message.text
        }
    }

    private static func line(_ message: RemoteMessage?) -> String {
        guard let message else { return "—" }
        let who = message.metadata["bridge.sender"] ?? message.sender.rawValue
        var text = message.deletedAt != nil ? "(deleted)" : message.text
        if message.editedAt != nil, message.deletedAt == nil { text += " ✎" }
        if !message.attachments.isEmpty { text += " 📎" + message.attachments.map(\.filename).joined(separator: ",") }
        if message.replyTo != nil { text = "↪ " + text }
        let shown = "\(who): \(text)"
        return shown.count > 44 ? String(shown.prefix(43)) + "…" : shown
    }

    private static func printSideBySide(left: [RemoteMessage], right: [RemoteMessage]) {
        writeLine("\n\("Supabase-like (alice's side)".padding(toLength: 46, withPad: " ", startingAt: 0))XMTP-like (bob's side)")
        writeLine(String(repeating: "─", count: 92))
        let rightByKey = Dictionary(right.compactMap { m in m.idempotencyKey.map { ($0, m) } }, uniquingKeysWith: { a, _ in a })
        for message in left {
            let other = message.idempotencyKey.flatMap { rightByKey[$0] }
            writeLine("\(line(message).padding(toLength: 46, withPad: " ", startingAt: 0))\(line(other))")
        }
    }

    private static func printIDMap(root: URL, keys: ArraySlice<MessageID>) async throws {
        let store = try SQLiteStore(path: root.appendingPathComponent("bridge.sqlite").path)
        defer { store.close() }
        writeLine("\nID map (first \(keys.count) messages; the bridge's store):")
        writeLine("  \("MessageID".padding(toLength: 38, withPad: " ", startingAt: 0))\("xmtp (content-derived)".padding(toLength: 26, withPad: " ", startingAt: 0))supabase (row id)")
        for key in keys {
            let mappings = try await store.read { try $0.mappings(of: key) }
            let xmtp = mappings.first { $0.backend == "xmtp" }?.remoteID.rawValue.prefix(22) ?? "—"
            let supabase = mappings.first { $0.backend == "supabase" }?.remoteID.rawValue ?? "—"
            writeLine("  \(key.rawValue.padding(toLength: 38, withPad: " ", startingAt: 0))\(String(xmtp).padding(toLength: 26, withPad: " ", startingAt: 0))\(supabase)")
        }
    }

    private static func summary(left: [RemoteMessage], right: [RemoteMessage], expected: Int) -> Int32 {
        let leftKeys = left.compactMap(\.idempotencyKey), rightKeys = right.compactMap(\.idempotencyKey)
        let duplicatesLeft = leftKeys.count - Set(leftKeys).count, duplicatesRight = rightKeys.count - Set(rightKeys).count
        let matched = Set(leftKeys).intersection(rightKeys).count
        let edited = left.filter { $0.editedAt != nil && $0.deletedAt == nil }.count
        let deletedLeft = left.filter { $0.deletedAt != nil }.count, deletedRight = right.filter { $0.deletedAt != nil }.count
        writeLine("\nSummary (counted by querying both backends):")
        writeLine("  messages: supabase-like \(left.count), xmtp-like \(right.count) (sent: \(expected))")
        writeLine("  matched across the bridge by key: \(matched); duplicates: \(duplicatesLeft) + \(duplicatesRight)")
        writeLine("  edited: \(edited); deleted: supabase-like \(deletedLeft), xmtp-like \(deletedRight)")
        let ok = left.count == expected && right.count == expected && matched == expected && duplicatesLeft == 0 && duplicatesRight == 0
        writeLine(ok ? "  every message is on both sides exactly once ✔" : "  MISMATCH ✘")
        return ok ? 0 : 1
    }
}
