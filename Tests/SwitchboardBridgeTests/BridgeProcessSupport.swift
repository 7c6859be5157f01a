import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardCore
import Synchronization
import TestSupport
import XMTPAdapter
import XMTPConformance
import XMTPCrypto
import XMTPNode

#if canImport(Glibc)
import Glibc
#endif

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
    /// The XMTP-like node (replaced when it is cut and restarted).
    let node: Mutex<XMTPNodeServer>
    /// Its configuration, with the port fixed after the first start so a restart comes back at the same URL.
    let nodeConfiguration: XMTPNodeConfiguration
    /// Its base URL.
    let nodeURL: URL
    /// The Supabase conversation.
    let supabaseConversation: ConversationID
    /// The XMTP group (32 hex digits).
    let xmtpConversation: ConversationID
    /// The Supabase user who sends.
    let carol: UserID
    /// The XMTP user who sends.
    let dave: UserID
    /// The bridge's XMTP inbox.
    let bridgeInbox: UserID
    /// Bearer tokens of the XMTP inboxes.
    let xmtpTokens: [UserID: String]
    /// The group secret.
    let secret: [UInt8]

    /// Starts both servers (the Supabase one on `databaseURL`, else on a private cluster) and creates the pair.
    static func start(databaseURL: String?) async throws -> BridgeServers {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-bridge-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var supabaseConfiguration = SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"),
                                                                jwtSecret: jwtSecret)
        supabaseConfiguration.databaseURL = databaseURL
        let supabase = SupabaseServer(configuration: supabaseConfiguration)
        let supabasePort = try await supabase.start()
        var nodeConfiguration = XMTPNodeConfiguration(dataDirectory: root.appendingPathComponent("xmtp-node"))
        let node = XMTPNodeServer(configuration: nodeConfiguration)
        let nodePort: Int
        do {
            nodePort = try await node.start()
        } catch {
            await supabase.stop()
            throw error
        }
        nodeConfiguration.port = nodePort
        let supabaseURL = URL(string: "http://127.0.0.1:\(supabasePort)")!
        let nodeURL = URL(string: "http://127.0.0.1:\(nodePort)")!
        do {
            let harness = SupabaseHarness(baseURL: supabaseURL, jwtSecret: jwtSecret)
            let suffix = UUID().uuidString.prefix(8).lowercased()
            let carol = UserID("carol-\(suffix)")
            try await harness.ensureBucket("attachments")
            let supabaseConversation = try await harness.createConversation(title: "bridged", members: ["bridge", carol])
            let xmtp = XMTPHarness(baseURL: nodeURL)
            let dave = UserID("dave-\(suffix)"), bridgeInbox = UserID("bridge-\(suffix)")
            let daveToken = try await xmtp.register(dave)
            let bridgeToken = try await xmtp.register(bridgeInbox)
            let groupID = try SecureRandom.bytes(16)
            try await xmtp.createGroup(groupID, members: [bridgeInbox], token: daveToken)
            return BridgeServers(root: root, supabase: supabase, supabaseURL: supabaseURL, harness: harness,
                                 node: node, nodeConfiguration: nodeConfiguration, nodeURL: nodeURL,
                                 supabaseConversation: supabaseConversation,
                                 xmtpConversation: ConversationID(Digest.hex(groupID)), carol: carol, dave: dave,
                                 bridgeInbox: bridgeInbox, xmtpTokens: [dave: daveToken, bridgeInbox: bridgeToken],
                                 secret: try SecureRandom.bytes(32))
        } catch {
            await node.stop()
            await supabase.stop()
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, supabase: SupabaseServer, supabaseURL: URL, harness: SupabaseHarness, node: XMTPNodeServer,
                 nodeConfiguration: XMTPNodeConfiguration, nodeURL: URL, supabaseConversation: ConversationID,
                 xmtpConversation: ConversationID, carol: UserID, dave: UserID, bridgeInbox: UserID,
                 xmtpTokens: [UserID: String], secret: [UInt8]) {
        self.root = root
        self.supabase = supabase
        self.supabaseURL = supabaseURL
        self.harness = harness
        self.node = Mutex(node)
        self.nodeConfiguration = nodeConfiguration
        self.nodeURL = nodeURL
        self.supabaseConversation = supabaseConversation
        self.xmtpConversation = xmtpConversation
        self.carol = carol
        self.dave = dave
        self.bridgeInbox = bridgeInbox
        self.xmtpTokens = xmtpTokens
        self.secret = secret
    }

    /// Stops both servers and removes the folder.
    func stop() async {
        let current = node.withLock { $0 }
        await current.stop()
        await supabase.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// Cuts every connection to the XMTP node: stops it, waits `downFor`, starts it again on the same port.
    func cutXMTPNode(downFor: Duration) async throws {
        let current = node.withLock { $0 }
        await current.stop()
        try await Task.sleep(for: downFor)
        let deadline = ContinuousClock.now + .seconds(15)
        while true {
            let fresh = XMTPNodeServer(configuration: nodeConfiguration)
            do {
                try await fresh.start()
                node.withLock { $0 = fresh }
                return
            } catch {
                if ContinuousClock.now > deadline { throw error }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    /// The environment a bridge child reads its secrets from (`env:` values in the config).
    var childEnvironment: [String: String] {
        ["BRIDGE_TEST_SB_ANON": harness.token(role: "anon"),
         "BRIDGE_TEST_SB_TOKEN": harness.token(role: "authenticated", sub: "bridge"),
         "BRIDGE_TEST_XMTP_TOKEN": xmtpTokens[bridgeInbox] ?? "",
         "BRIDGE_TEST_XMTP_SECRET": Digest.hex(secret)]
    }

    /// The config JSON for a worker: `store` as given, the pair `general` (a: Supabase, b: XMTP).
    func config(store: JSONValue, worker: String?, leaseSeconds: Double, statusEverySeconds: Double,
                xmtpDatabase: String) -> JSONValue {
        let a: JSONValue = .object(["adapter": "supabase", "url": .string(supabaseURL.absoluteString),
                                    "conversation": .string(supabaseConversation.rawValue), "apiKey": "env:BRIDGE_TEST_SB_ANON",
                                    "accessToken": "env:BRIDGE_TEST_SB_TOKEN", "user": "bridge"])
        let b: JSONValue = .object(["adapter": "xmtp", "url": .string(nodeURL.absoluteString),
                                    "conversation": .string(xmtpConversation.rawValue), "inbox": .string(bridgeInbox.rawValue),
                                    "token": "env:BRIDGE_TEST_XMTP_TOKEN", "groupSecret": "env:BRIDGE_TEST_XMTP_SECRET",
                                    "database": .string(xmtpDatabase)])
        var members: [String: JSONValue] = ["store": store, "leaseSeconds": .double(leaseSeconds),
                                            "statusEverySeconds": .double(statusEverySeconds),
                                            "pairs": [.object(["name": "general", "a": a, "b": b])]]
        if let worker { members["worker"] = .string(worker) }
        return .object(members)
    }

    /// Writes `config` as `name` in the root folder; returns its path.
    func write(_ config: JSONValue, as name: String) throws -> String {
        let url = root.appendingPathComponent(name)
        try Data(config.serialized.utf8).write(to: url)
        return url.path
    }

    /// Carol's adapter on the Supabase-like server.
    func carolAdapter() -> SupabaseAdapter {
        SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: supabaseURL, apiKey: harness.token(role: "anon"),
            accessToken: harness.token(role: "authenticated", sub: carol.rawValue), localUser: carol))
    }

    /// Dave's adapter on the node, on the local database `database` in the root folder.
    func daveAdapter(database: String) throws -> XMTPAdapter {
        let secret = self.secret
        return try XMTPAdapter(configuration: XMTPAdapter.Configuration(
            baseURL: nodeURL, inboxID: dave, token: xmtpTokens[dave] ?? "",
            databasePath: root.appendingPathComponent(database).path, groupSecret: { _ in secret }))
    }
}

/// A running `switchboard bridge` child: its output lines, and signals.
final class BridgeChild: @unchecked Sendable {
    /// The process.
    let process: Process
    /// Its standard output, line by line.
    let output: OutputLines
    /// Keeps the stdout pipe alive.
    private let pipe: Pipe

    /// Starts `switchboard bridge` with `arguments`, standard error appended to `log`.
    init(arguments: [String], environment: [String: String], log: URL) throws {
        let executable = try SwitchboardExecutable.locate()
        process = Process()
        process.executableURL = executable
        process.arguments = ["bridge"] + arguments
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
        let deadline = ContinuousClock.now + timeout
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
