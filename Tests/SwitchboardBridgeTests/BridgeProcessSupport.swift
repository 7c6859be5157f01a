import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardCore
import SwitchboardStore
import TestSupport
import Testing
import XMTPAdapter
import XMTPConformance
import XMTPCrypto
import XMTPNode

#if canImport(Glibc)
import Glibc
#endif

/// The XMTP-like node in-process (restartable on its port) with a group of one user, dave, and the bridge's inbox:
/// the XMTP side of the end-to-end bridge tests.
final class XMTPBridgeSide: Sendable {
    /// The folder the node's data and the adapters' databases live in.
    let root: URL
    /// The node (replaced when it is cut and restarted).
    let node: Locked<XMTPNodeServer>
    /// Its configuration, with the port fixed after the first start so a restart comes back at the same URL.
    let nodeConfiguration: XMTPNodeConfiguration
    /// Its base URL.
    let nodeURL: URL
    /// The group (32 hex digits).
    let conversation: ConversationID
    /// The XMTP user who sends.
    let dave: UserID
    /// The bridge's inbox.
    let bridgeInbox: UserID
    /// Bearer tokens of the inboxes.
    let tokens: [UserID: String]
    /// The group secret.
    let secret: [UInt8]

    /// Starts a node with its data under `root`, registers dave and the bridge (names ending in `suffix`) and has
    /// dave create the group with the bridge in it; stops the node again when that fails.
    static func start(root: URL, suffix: String) async throws -> XMTPBridgeSide {
        var configuration = XMTPNodeConfiguration(dataDirectory: root.appendingPathComponent("xmtp-node"))
        let node = XMTPNodeServer(configuration: configuration)
        let port = try await node.start()
        configuration.port = port
        let url = URL(string: "http://127.0.0.1:\(port)")!
        do {
            let harness = XMTPHarness(baseURL: url)
            let dave = UserID("dave-\(suffix)"), bridgeInbox = UserID("bridge-\(suffix)")
            let daveToken = try await harness.register(dave)
            let bridgeToken = try await harness.register(bridgeInbox)
            let groupID = try SecureRandom.bytes(16)
            try await harness.createGroup(groupID, members: [bridgeInbox], token: daveToken)
            return XMTPBridgeSide(root: root, node: node, nodeConfiguration: configuration, nodeURL: url,
                                  conversation: ConversationID(Digest.hex(groupID)), dave: dave, bridgeInbox: bridgeInbox,
                                  tokens: [dave: daveToken, bridgeInbox: bridgeToken], secret: try SecureRandom.bytes(32))
        } catch {
            await node.stop()
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, node: XMTPNodeServer, nodeConfiguration: XMTPNodeConfiguration, nodeURL: URL,
                 conversation: ConversationID, dave: UserID, bridgeInbox: UserID, tokens: [UserID: String], secret: [UInt8]) {
        self.root = root
        self.node = Locked(node)
        self.nodeConfiguration = nodeConfiguration
        self.nodeURL = nodeURL
        self.conversation = conversation
        self.dave = dave
        self.bridgeInbox = bridgeInbox
        self.tokens = tokens
        self.secret = secret
    }

    /// Stops the node (whichever instance runs now).
    func stop() async {
        let current = node.withLock { $0 }
        await current.stop()
    }

    /// Cuts every connection to the node: stops it, waits `downFor`, starts it again on the same port.
    func cut(downFor: Duration) async throws {
        await stop()
        try await Task.sleep(for: downFor)
        let configuration = nodeConfiguration
        let fresh = try await restartOnSamePort { () async throws -> XMTPNodeServer in
            let server = XMTPNodeServer(configuration: configuration)
            try await server.start()
            return server
        }
        node.withLock { $0 = fresh }
    }

    /// The environment entries a bridge child reads this side's secrets from.
    var childEnvironment: [String: String] {
        ["BRIDGE_TEST_XMTP_TOKEN": tokens[bridgeInbox] ?? "", "BRIDGE_TEST_XMTP_SECRET": Digest.hex(secret)]
    }

    /// The bridge's endpoint object for this side, its local database `database` (relative to the config).
    func endpoint(database: String) -> JSONValue {
        .object(["adapter": "xmtp", "url": .string(nodeURL.absoluteString), "conversation": .string(conversation.rawValue),
                 "inbox": .string(bridgeInbox.rawValue), "token": "env:BRIDGE_TEST_XMTP_TOKEN",
                 "groupSecret": "env:BRIDGE_TEST_XMTP_SECRET", "database": .string(database)])
    }

    /// Dave's adapter on the node, on the local database `database` in the root folder.
    func daveAdapter(database: String) throws -> XMTPAdapter {
        let secret = self.secret
        return try XMTPAdapter(configuration: XMTPAdapter.Configuration(
            baseURL: nodeURL, inboxID: dave, token: tokens[dave] ?? "",
            databasePath: root.appendingPathComponent(database).path, groupSecret: { _ in secret }))
    }
}

/// Runs `start` until it succeeds (the port of a just-stopped server may take a moment to free), for up to 15 s.
func restartOnSamePort<Server: Sendable>(_ start: () async throws -> Server) async throws -> Server {
    let deadline = TestTime.deadline(after: .seconds(15))
    while true {
        do {
            return try await start()
        } catch {
            if ContinuousClock.now > deadline { throw error }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

/// Both reference servers in-process, a conversation on each (the bridge's account and one user), and the
/// secrets a `switchboard bridge` child needs, handed over through its environment.
final class BridgeServers: Sendable {
    /// The secret the Supabase-like server signs tokens with.
    static let jwtSecret = "switchboard-bridge-test-secret-0123456789"

    /// The temporary folder holding the servers' data, configs, stores and logs.
    let root: URL
    /// The Supabase-like server.
    let supabase: SupabaseServer
    /// Its base URL.
    let supabaseURL: URL
    /// Token minting and setup against it.
    let harness: SupabaseHarness
    /// The XMTP-like node with its group, users and secrets.
    let xmtp: XMTPBridgeSide
    /// The Supabase conversation.
    let supabaseConversation: ConversationID
    /// The Supabase user who sends.
    let carol: UserID

    /// The XMTP group (32 hex digits).
    var xmtpConversation: ConversationID { xmtp.conversation }
    /// The XMTP user who sends.
    var dave: UserID { xmtp.dave }
    /// The bridge's XMTP inbox.
    var bridgeInbox: UserID { xmtp.bridgeInbox }

    /// Starts both servers (the Supabase one on `databaseURL`, else on a private cluster) and creates the pair.
    static func start(databaseURL: String?) async throws -> BridgeServers {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-bridge-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var supabaseConfiguration = SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"),
                                                                jwtSecret: jwtSecret)
        supabaseConfiguration.databaseURL = databaseURL
        let supabase = SupabaseServer(configuration: supabaseConfiguration)
        let supabasePort = try await supabase.start()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let xmtp: XMTPBridgeSide
        do {
            xmtp = try await XMTPBridgeSide.start(root: root, suffix: suffix)
        } catch {
            await supabase.stop()
            throw error
        }
        let supabaseURL = URL(string: "http://127.0.0.1:\(supabasePort)")!
        do {
            let harness = SupabaseHarness(baseURL: supabaseURL, jwtSecret: jwtSecret)
            let carol = UserID("carol-\(suffix)")
            try await harness.ensureBucket("attachments")
            let supabaseConversation = try await harness.createConversation(title: "bridged", members: ["bridge", carol])
            return BridgeServers(root: root, supabase: supabase, supabaseURL: supabaseURL, harness: harness, xmtp: xmtp,
                                 supabaseConversation: supabaseConversation, carol: carol)
        } catch {
            await xmtp.stop()
            await supabase.stop()
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, supabase: SupabaseServer, supabaseURL: URL, harness: SupabaseHarness, xmtp: XMTPBridgeSide,
                 supabaseConversation: ConversationID, carol: UserID) {
        self.root = root
        self.supabase = supabase
        self.supabaseURL = supabaseURL
        self.harness = harness
        self.xmtp = xmtp
        self.supabaseConversation = supabaseConversation
        self.carol = carol
    }

    /// Stops both servers and removes the folder.
    func stop() async {
        await xmtp.stop()
        await supabase.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Cuts every connection to the XMTP node: stops it, waits `downFor`, starts it again on the same port.
    func cutXMTPNode(downFor: Duration) async throws {
        try await xmtp.cut(downFor: downFor)
    }

    /// The environment a bridge child reads its secrets from (`env:` values in the config).
    var childEnvironment: [String: String] {
        xmtp.childEnvironment.merging(["BRIDGE_TEST_SB_ANON": harness.token(role: "anon"),
                                       "BRIDGE_TEST_SB_TOKEN": harness.token(role: "authenticated", sub: "bridge")]) { _, new in new }
    }

    /// The config JSON for a worker: `store` as given, the pair `general` (a: Supabase, b: XMTP).
    func config(store: JSONValue, worker: String?, leaseSeconds: Double, statusEverySeconds: Double,
                xmtpDatabase: String) -> JSONValue {
        let a: JSONValue = .object(["adapter": "supabase", "url": .string(supabaseURL.absoluteString),
                                    "conversation": .string(supabaseConversation.rawValue), "apiKey": "env:BRIDGE_TEST_SB_ANON",
                                    "accessToken": "env:BRIDGE_TEST_SB_TOKEN", "user": "bridge"])
        return bridgeConfig(store: store, worker: worker, leaseSeconds: leaseSeconds, statusEverySeconds: statusEverySeconds,
                            a: a, b: xmtp.endpoint(database: xmtpDatabase))
    }

    /// Writes `config` as `name` in the root folder; returns its path.
    func write(_ config: JSONValue, as name: String) throws -> String {
        try writeConfig(config, as: name, in: root)
    }

    /// Carol's adapter on the Supabase-like server.
    func carolAdapter() -> SupabaseAdapter {
        SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: supabaseURL, apiKey: harness.token(role: "anon"),
            accessToken: harness.token(role: "authenticated", sub: carol.rawValue), localUser: carol))
    }

    /// Dave's adapter on the node, on the local database `database` in the root folder.
    func daveAdapter(database: String) throws -> XMTPAdapter {
        try xmtp.daveAdapter(database: database)
    }
}

/// A bridge config of one pair `general` between endpoints `a` and `b`, on `store`.
func bridgeConfig(store: JSONValue, worker: String?, leaseSeconds: Double, statusEverySeconds: Double,
                  a: JSONValue, b: JSONValue) -> JSONValue {
    var members: [String: JSONValue] = ["store": store, "leaseSeconds": .double(leaseSeconds),
                                        "statusEverySeconds": .double(statusEverySeconds),
                                        "pairs": [.object(["name": "general", "a": a, "b": b])]]
    if let worker { members["worker"] = .string(worker) }
    return .object(members)
}

/// Writes `config` as `name` in `folder`; returns its path.
func writeConfig(_ config: JSONValue, as name: String, in folder: URL) throws -> String {
    let url = folder.appendingPathComponent(name)
    try Data(config.serialized.utf8).write(to: url)
    return url.path
}

/// A running `switchboard bridge` child: its output lines, and signals.
final class BridgeChild: @unchecked Sendable {
    /// The process.
    let process: Process
    /// Its standard output, line by line.
    let output: OutputLines
    /// Keeps the stdout pipe alive.
    private let pipe: Pipe

    /// Starts `switchboard <command>` (`bridge` unless told) with `arguments`, standard error appended to `log`.
    init(command: String = "bridge", arguments: [String], environment: [String: String], log: URL) throws {
        let executable = try SwitchboardExecutable.locate()
        process = Process()
        process.executableURL = executable
        process.arguments = [command] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        if !FileManager.default.fileExists(atPath: log.path) {
            _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        }
        let errors = try FileHandle(forWritingTo: log)
        errors.seekToEndOfFile()
        pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        output = OutputLines(pipe.fileHandleForReading)
        try process.run()
        try? errors.close()
    }

    /// Sends `signal` to the child.
    func send(_ signal: Int32) {
        if process.isRunning { kill(process.processIdentifier, signal) }
    }

    /// Waits up to `timeout` for the child to exit; returns its status (the signal when killed), nil on timeout.
    func waitForExit(timeout: Duration) async -> Int32? {
        let deadline = TestTime.deadline(after: timeout)
        while process.isRunning {
            if ContinuousClock.now > deadline { return nil }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return process.terminationStatus
    }

    /// SIGKILLs the child and waits for it.
    func killHard() async {
        send(SIGKILL)
        _ = await waitForExit(timeout: .seconds(10))
    }
}

/// One message a test user sent.
struct SentMessage: Sendable {
    /// Its key (the `MessageID` every side carries).
    var id: MessageID
    /// Its ID on the side it was sent to.
    var remote: RemoteID
    /// Its text as sent.
    var text: String
}

/// What a sending user did.
struct SendLog: Sendable {
    /// Every message, in order.
    var sent: [SentMessage] = []
    /// The final text of each edited message.
    var edits: [MessageID: String] = [:]
    /// Messages the sender put a 👍 on.
    var reacted: Set<MessageID> = []
}

/// Sends `count` messages as the adapter's user (prepare + publish, retried through outages), editing one in
/// 50 and reacting to one in 40; sleeps `pace` between messages.
func sendMessages(_ adapter: any EditingAdapter & ReactingAdapter, in conversation: ConversationID, label: String,
                  count: Int, pace: Duration) async throws -> SendLog {
    var log = SendLog()
    for index in 0..<count {
        let id = MessageID.make()
        let text = "\(label) \(index)"
        let outgoing = OutgoingMessage(id: id, conversation: conversation, sender: adapter.localUser, text: text, createdAt: Date())
        let prepared = try await retrying { try await adapter.prepare(outgoing, noSend: false) }
        let receipt = try await retrying { try await adapter.publish(prepared) }
        guard let remote = receipt.remoteID ?? prepared.remoteID else {
            throw TestSetupError("\(label) \(index) was published without a remote ID")
        }
        log.sent.append(SentMessage(id: id, remote: remote, text: text))
        if index % 50 == 25 {
            let target = log.sent[index - 5]
            let edited = "\(target.text) (edited)"
            try await retrying { try await adapter.edit(target.remote, in: conversation, text: edited) }
            log.edits[target.id] = edited
        }
        if index % 40 == 20 {
            let target = log.sent[index - 3]
            try await retrying { try await adapter.setReaction("👍", isActive: true, on: target.remote, in: conversation) }
            log.reacted.insert(target.id)
        }
        if pace > .zero { try await Task.sleep(for: pace) }
    }
    return log
}

/// Runs `body` until it succeeds, up to 150 tries 100 ms apart (a server may be down for a moment).
func retrying<T: Sendable>(_ body: () async throws -> T) async throws -> T {
    var attempt = 0
    while true {
        do {
            return try await body()
        } catch {
            attempt += 1
            if attempt >= 150 { throw error }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// One side's messages and reactions, read back through a fresh adapter's history.
struct SideContents: Sendable {
    /// Every message, oldest first (as the history pages return them).
    var messages: [RemoteMessage] = []
    /// Every standing reaction.
    var reactions: [RemoteReaction] = []

    /// Message IDs (keys) with how many distinct remote messages carry each.
    var copiesByKey: [MessageID: Set<RemoteID>] {
        var result: [MessageID: Set<RemoteID>] = [:]
        for message in messages {
            guard let key = message.idempotencyKey else { continue }
            result[key, default: []].insert(message.remoteID)
        }
        return result
    }

    /// Messages without a key (never expected here).
    var unkeyed: [RemoteMessage] { messages.filter { $0.idempotencyKey == nil } }

    /// Reads every page of `conversation` through `adapter`.
    static func read(_ adapter: any ChatAdapter, in conversation: ConversationID) async throws -> SideContents {
        var contents = SideContents()
        var cursor: Cursor?
        repeat {
            let page = try await retrying { try await adapter.history(in: conversation, before: cursor, limit: 100) }
            contents.messages = page.messages + contents.messages
            contents.reactions += page.reactions
            cursor = page.olderCursor
        } while cursor != nil
        return contents
    }
}

/// Every bridge child a test started, so that all of them die even when the test fails half-way.
final class BridgeChildren: Sendable {
    /// The children, oldest first.
    private let children = Locked<[BridgeChild]>([])

    /// Starts a `switchboard <command>` child (`bridge` unless told; as `BridgeChild.init`) and remembers it.
    func launch(command: String = "bridge", arguments: [String], environment: [String: String], log: URL) throws -> BridgeChild {
        let child = try BridgeChild(command: command, arguments: arguments, environment: environment, log: log)
        children.withLock { $0.append(child) }
        return child
    }

    /// SIGKILLs every child still running and waits for each.
    func killAll() async {
        for child in children.withLock({ $0 }) where child.process.isRunning {
            await child.killHard()
        }
    }
}

/// `rounds` times: waits a random number of milliseconds in `pause`, SIGKILLs `child` and starts a fresh one with
/// `launch`; after the restart of round `r` it waits 0.5–1.5 s and runs `outages[r]` when there is one.
/// Returns how many SIGKILLs were sent; `child` is the running one afterwards.
func killAndRestart(_ child: inout BridgeChild, rounds: Int, pause: ClosedRange<Int>, launch: () throws -> BridgeChild,
                    outages: [Int: () async throws -> Void]) async throws -> Int {
    var kills = 0
    for round in 1...rounds {
        try await Task.sleep(for: .milliseconds(Int.random(in: pause)))
        await child.killHard()
        kills += 1
        child = try launch()
        if let outage = outages[round] {
            try await Task.sleep(for: .milliseconds(Int.random(in: 500...1500)))
            try await outage()
        }
    }
    return kills
}

/// Reads both sides every second until each holds `total` keys or `timeout` passes.
func waitUntilBothHold(_ total: Int, timeout: Duration, _ readA: () async throws -> SideContents,
                       _ readB: () async throws -> SideContents) async throws {
    let deadline = TestTime.deadline(after: timeout)
    while ContinuousClock.now < deadline {
        let left = try await readA().copiesByKey.count
        let right = try await readB().copiesByKey.count
        if left >= total && right >= total { break }
        try await Task.sleep(for: .seconds(1))
    }
}

/// How a bridge run ended: the last status lines of the SIGTERMed child and the final catch-up-only run.
struct BridgeEnding: Sendable {
    /// The last two status lines the child printed.
    var lastLines: [String]
    /// The catch-up-only run.
    var final: ProcessResult
}

/// Stops `child` with SIGTERM (it finishes in-flight work and must exit 0; SIGKILLed after 40 s), then runs
/// `switchboard bridge --config configPath --catch-up-only`, which syncs whatever is left and must exit 0.
func stopAndCatchUp(_ child: BridgeChild, configPath: String, environment: [String: String]) async throws -> BridgeEnding {
    child.send(SIGTERM)
    let termStatus = await child.waitForExit(timeout: .seconds(40))
    let lastLines = Array(child.output.allLines().suffix(2))
    #expect(termStatus == 0, "SIGTERM: the bridge exited with \(termStatus.map(String.init) ?? "nothing (still running)")")
    if termStatus == nil { await child.killHard() }

    let executable = try SwitchboardExecutable.locate().path
    let final = try await ChildProcess.runDetached(executable, ["bridge", "--config", configPath, "--catch-up-only"],
                                                   environment: environment, timeout: .seconds(90))
    #expect(final.status == 0, "catch-up-only exited \(final.status): \(final.stderr.suffix(2000))")
    #expect(final.stdout.contains("pair general: a→b"), "no status line: \(final.stdout)")
    return BridgeEnding(lastLines: lastLines, final: final)
}

/// Every sent key exactly once on the side, nothing else; returns the missing keys.
@discardableResult
func expectEachOnce(_ contents: SideContents, name: String, sent: [SentMessage]) -> Set<MessageID> {
    let copies = contents.copiesByKey
    let expected = Set(sent.map(\.id))
    let doubled = copies.filter { $0.value.count > 1 }
    let missing = expected.subtracting(copies.keys)
    let extra = Set(copies.keys).subtracting(expected)
    #expect(doubled.isEmpty, "\(name): \(doubled.count) keys on several messages, e.g. \(doubled.first.map { "\($0.key)" } ?? "")")
    #expect(missing.isEmpty, "\(name): \(missing.count) of \(expected.count) messages missing, e.g. \(missing.first.map { "\($0)" } ?? "")")
    #expect(extra.isEmpty, "\(name): \(extra.count) unexpected messages")
    #expect(contents.unkeyed.isEmpty, "\(name): \(contents.unkeyed.count) messages without a key")
    let remoteIDs = contents.messages.map(\.remoteID)
    #expect(Set(remoteIDs).count == expected.count, "\(name): \(Set(remoteIDs).count) distinct messages, expected \(expected.count)")
    return missing
}

/// Each edited message reads its final text on every side, and no edited message still reads an older text.
func expectEdits(_ edits: [MessageID: String], on sides: [(name: String, contents: SideContents)]) {
    for (side, contents) in sides {
        let byKey = Dictionary(contents.messages.compactMap { message in message.idempotencyKey.map { ($0, message) } },
                               uniquingKeysWith: { first, _ in first })
        for (id, text) in edits {
            #expect(byKey[id]?.text == text, "\(side): \(id) reads '\(byKey[id]?.text ?? "(missing)")', expected '\(text)'")
        }
        for message in contents.messages where !message.text.hasSuffix("(edited)") {
            if let key = message.idempotencyKey, edits[key] != nil {
                Issue.record("\(side): edited message \(key) still reads '\(message.text)'")
            }
        }
    }
}

/// Each message `log`'s sender reacted to has the bridge's 👍 on its counterpart in `contents`.
func expectBridgedReactions(on contents: SideContents, of log: SendLog, by bridge: UserID, side: String) {
    let remoteByKey = Dictionary(contents.messages.compactMap { message in message.idempotencyKey.map { ($0, message.remoteID) } },
                                 uniquingKeysWith: { first, _ in first })
    for id in log.reacted {
        let target = remoteByKey[id]
        let found = contents.reactions.contains { $0.target == target && $0.symbol == "👍" && $0.user == bridge && $0.isActive }
        #expect(found, "\(side): no 👍 by \(bridge) on the counterpart of \(id)")
    }
    let bridged = contents.reactions.filter { $0.user == bridge }
    #expect(bridged.count == log.reacted.count, "\(side): \(bridged.count) bridged reactions, expected \(log.reacted.count)")
}

/// One side as `diagnoseMissing` reports it: its name, its backend ID in the bridge's ID map, what it holds.
struct DiagnosedSide {
    /// The name in messages.
    var name: String
    /// The backend ID the bridge maps message IDs under.
    var backend: BackendID
    /// What the side holds.
    var contents: SideContents
}

/// Prints what the bridge's store (`bridge.sqlite` in `root`) and each side know of `keys`, and keeps the store,
/// the log and the bridge's XMTP database in a fresh folder under `/tmp` for a look.
func diagnoseMissing(_ keys: Set<MessageID>, root: URL, sides: [DiagnosedSide]) async {
    let keep = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-bridge-failure-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: keep, withIntermediateDirectories: true)
    for file in ["bridge.sqlite", "bridge.log", "bridge-xmtp.sqlite"] {
        try? FileManager.default.copyItem(at: root.appendingPathComponent(file), to: keep.appendingPathComponent(file))
    }
    guard let store = try? SQLiteStore(path: root.appendingPathComponent("bridge.sqlite").path) else { return }
    defer { store.close() }
    for id in keys {
        let known = try? await store.read { tx in
            (try sides.map { try tx.remoteID(of: id, backend: $0.backend, part: 0) }, try tx.bridgeCopy(id))
        }
        let maps = sides.indices.map { index in
            "\(sides[index].name) \(known?.0[index].map { "\($0)" } ?? "-")"
        }
        let copies = sides.map { side in
            let found = side.contents.messages.filter { $0.idempotencyKey == id }.map { "\($0.remoteID) '\($0.text)'" }
            return "on \(side.name) \(found.isEmpty ? "-" : found.joined(separator: ", "))"
        }
        print("missing \(id): map \(maps.joined(separator: ", ")), remembered \(known?.1.map { "in \($0.pair)\($0.pendingTowards.map { ", pending towards \($0)" } ?? "")" } ?? "no"); \(copies.joined(separator: "; ")); kept \(keep.path)")
    }
}
