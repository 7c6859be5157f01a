import Foundation
import SocketIOAdapter
import SocketIOConformance
import SocketIOServer
import SwitchboardCore
import TestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The Socket-style server and the XMTP-like node in-process, a conversation on each (the bridge's account and
/// one user), and the secrets a `switchboard bridge` child needs, handed over through its environment.
final class SocketBridgeServers: Sendable {
    /// The temporary folder holding the servers' data, configs, stores and logs.
    let root: URL
    /// The Socket-style server (replaced when it is stopped and started again).
    let socket: Locked<SocketIOServer>
    /// Its configuration, with the port fixed after the first start so a restart comes back at the same URL.
    let socketConfiguration: SocketIOServerConfiguration
    /// Its base URL.
    let socketURL: URL
    /// The Socket-style conversation.
    let socketConversation: ConversationID
    /// The Socket-style user who sends.
    let erin: UserID
    /// The bridge's Socket-style account.
    let socketBridge: UserID
    /// Bearer tokens of the Socket-style users.
    let socketTokens: [UserID: String]
    /// The XMTP-like node with its group, users and secrets.
    let xmtp: XMTPBridgeSide

    /// Starts both servers and creates the pair: erin and the bridge on the Socket-style server, dave and the
    /// bridge's inbox on the node.
    static func start() async throws -> SocketBridgeServers {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-socket-bridge-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var configuration = SocketIOServerConfiguration(dataDirectory: root.appendingPathComponent("socketio"))
        let socket = SocketIOServer(configuration: configuration)
        let port = try await socket.start()
        configuration.port = port
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let xmtp: XMTPBridgeSide
        do {
            xmtp = try await XMTPBridgeSide.start(root: root, suffix: suffix)
        } catch {
            await socket.stop()
            throw error
        }
        let url = URL(string: "http://127.0.0.1:\(port)")!
        do {
            let harness = SocketIOHarness(baseURL: url)
            let erin = UserID("erin-\(suffix)"), bridge = UserID("bridge-\(suffix)")
            let tokens = [erin: try await harness.register(erin), bridge: try await harness.register(bridge)]
            let conversation = ConversationID("bridged-\(suffix)")
            try await harness.createConversation(conversation, members: [erin, bridge], token: tokens[erin] ?? "")
            return SocketBridgeServers(root: root, socket: socket, socketConfiguration: configuration, socketURL: url,
                                       socketConversation: conversation, erin: erin, socketBridge: bridge,
                                       socketTokens: tokens, xmtp: xmtp)
        } catch {
            await xmtp.stop()
            await socket.stop()
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, socket: SocketIOServer, socketConfiguration: SocketIOServerConfiguration, socketURL: URL,
                 socketConversation: ConversationID, erin: UserID, socketBridge: UserID, socketTokens: [UserID: String],
                 xmtp: XMTPBridgeSide) {
        self.root = root
        self.socket = Locked(socket)
        self.socketConfiguration = socketConfiguration
        self.socketURL = socketURL
        self.socketConversation = socketConversation
        self.erin = erin
        self.socketBridge = socketBridge
        self.socketTokens = socketTokens
        self.xmtp = xmtp
    }

    /// Stops both servers and removes the folder.
    func stop() async {
        await xmtp.stop()
        let current = socket.withLock { $0 }
        await current.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// A Socket-side outage: stops the server (closing every socket and the store), waits `downFor`, starts a new
    /// one on the same data directory and port.
    func restartSocketServer(downFor: Duration) async throws {
        let current = socket.withLock { $0 }
        await current.stop()
        try await Task.sleep(for: downFor)
        let configuration = socketConfiguration
        let fresh = try await restartOnSamePort { () async throws -> SocketIOServer in
            let server = SocketIOServer(configuration: configuration)
            try await server.start()
            return server
        }
        socket.withLock { $0 = fresh }
    }

    /// The environment a bridge child reads its secrets from (`env:` values in the config).
    var childEnvironment: [String: String] {
        xmtp.childEnvironment.merging(["BRIDGE_TEST_SIO_TOKEN": socketTokens[socketBridge] ?? ""]) { _, new in new }
    }

    /// The config JSON: a SQLite store, the pair `general` (a: Socket-style, b: XMTP-like).
    func config() -> JSONValue {
        let a: JSONValue = .object(["adapter": "socketio", "url": .string(socketURL.absoluteString),
                                    "conversation": .string(socketConversation.rawValue), "user": .string(socketBridge.rawValue),
                                    "token": "env:BRIDGE_TEST_SIO_TOKEN"])
        return bridgeConfig(store: .object(["sqlite": "bridge.sqlite"]), worker: "e2e-socket", leaseSeconds: 3,
                            statusEverySeconds: 1, a: a, b: xmtp.endpoint(database: "bridge-xmtp.sqlite"))
    }

    /// Erin's adapter on the Socket-style server.
    func erinAdapter() -> SocketIOAdapter {
        SocketIOAdapter(configuration: SocketIOAdapter.Configuration(baseURL: socketURL, token: socketTokens[erin] ?? "",
                                                                     localUser: erin))
    }
}

/// `switchboard bridge` as a child process between the Socket-style server and the XMTP-like node.
@Suite("switchboard bridge between the Socket-style server and the XMTP-like node", .serialized)
struct SocketBridgeCommandEndToEndTests {
    /// The issue's acceptance for the Socket backend: the end-to-end test of `BridgeCommandTests`, Socket ↔ XMTP.
    @Test("600 messages both ways, SIGKILL at random moments, a node cut and a Socket server restart: each side holds every message once")
    func killsAndOutages() async throws {
        let servers = try await SocketBridgeServers.start()
        let children = BridgeChildren()
        try await withCleanup { try await runKillsAndOutages(servers, children: children) } cleanup: {
            await children.killAll()
            await servers.stop()
        }
    }

    /// The body of `killsAndOutages` (the caller stops the servers and the children).
    private func runKillsAndOutages(_ servers: SocketBridgeServers, children: BridgeChildren) async throws {
        let started = ContinuousClock.now
        let configPath = try writeConfig(servers.config(), as: "bridge.json", in: servers.root)
        let log = servers.root.appendingPathComponent("bridge.log")
        let environment = servers.childEnvironment
        /// Starts a bridge child on the config.
        func launch() throws -> BridgeChild {
            try children.launch(arguments: ["--config", configPath], environment: environment, log: log)
        }

        let erin = servers.erinAdapter()
        let dave = try servers.xmtp.daveAdapter(database: "dave.sqlite")
        let perSide = 300
        async let erinLog = sendMessages(erin, in: servers.socketConversation, label: "erin", count: perSide,
                                         pace: .milliseconds(25))
        async let daveLog = sendMessages(dave, in: servers.xmtp.conversation, label: "dave", count: perSide,
                                         pace: .milliseconds(25))

        // Kill the bridge at random moments (6 times) and restart it; cut the node once and restart the Socket
        // server once under it (the senders retry through both outages).
        var child = try launch()
        let kills = try await killAndRestart(&child, rounds: 6, pause: 1000...2500, launch: launch, outages: [
            2: { try await servers.xmtp.cut(downFor: .milliseconds(1500)) },
            4: { try await servers.restartSocketServer(downFor: .milliseconds(1500)) },
        ])
        let sent = (erin: try await erinLog, dave: try await daveLog)
        let sendingDone = ContinuousClock.now
        let all = sent.erin.sent + sent.dave.sent

        // Let the last child catch up, SIGTERM it (exit 0), then a catch-up-only run syncs whatever is left.
        let socketReader = servers.erinAdapter()
        let xmtpReader = try servers.xmtp.daveAdapter(database: "reader.sqlite")
        try await waitUntilBothHold(all.count, timeout: .seconds(30),
                                    { try await SideContents.read(socketReader, in: servers.socketConversation) },
                                    { try await SideContents.read(xmtpReader, in: servers.xmtp.conversation) })
        let settled = ContinuousClock.now
        let ending = try await stopAndCatchUp(child, configPath: configPath, environment: environment)

        // Count by key on each backend, through fresh adapters.
        let socket = try await SideContents.read(servers.erinAdapter(), in: servers.socketConversation)
        let xmtp = try await SideContents.read(try servers.xmtp.daveAdapter(database: "verify.sqlite"), in: servers.xmtp.conversation)
        let wrong = expectEachOnce(socket, name: "socketio", sent: all).union(expectEachOnce(xmtp, name: "xmtp", sent: all))
            .union(socket.copiesByKey.filter { $0.value.count > 1 }.keys).union(xmtp.copiesByKey.filter { $0.value.count > 1 }.keys)
        if !wrong.isEmpty {
            await diagnoseMissing(wrong, root: servers.root,
                            sides: [DiagnosedSide(name: "socketio", backend: "socketio", contents: socket),
                                    DiagnosedSide(name: "xmtp", backend: "xmtp", contents: xmtp)])
        }
        let erinKeys = Set(sent.erin.sent.map(\.id)), daveKeys = Set(sent.dave.sent.map(\.id))
        #expect(xmtp.messages.filter { $0.idempotencyKey.map(erinKeys.contains) == true }.allSatisfy { $0.sender == servers.xmtp.bridgeInbox },
                "xmtp: a copy of erin's message is not sent by the bridge")
        #expect(socket.messages.filter { $0.idempotencyKey.map(daveKeys.contains) == true }.allSatisfy { $0.sender == servers.socketBridge },
                "socketio: a copy of dave's message is not sent by the bridge")
        #expect(socket.messages.filter { $0.idempotencyKey.map(daveKeys.contains) == true }
                    .allSatisfy { $0.metadata["bridge.sender"] == servers.xmtp.dave.rawValue },
                "socketio: a copy does not name its original sender")

        // Edits reach the counterpart; reactions land on the counterpart of the message reacted to.
        let edits = sent.erin.edits.merging(sent.dave.edits) { first, _ in first }
        expectEdits(edits, on: [("socketio", socket), ("xmtp", xmtp)])
        expectBridgedReactions(on: xmtp, of: sent.erin, by: servers.xmtp.bridgeInbox, side: "xmtp")
        expectBridgedReactions(on: socket, of: sent.dave, by: servers.socketBridge, side: "socketio")

        print("""
            socket bridge end-to-end: \(all.count) messages (\(sent.erin.sent.count) socketio→xmtp, \
            \(sent.dave.sent.count) xmtp→socketio), \(edits.count) edits, \
            \(sent.erin.reacted.count + sent.dave.reacted.count) reactions, \(kills) SIGKILLs, 1 node cut, \
            1 Socket server restart; sending took \(sendingDone - started), settled after \(settled - started), \
            total \(ContinuousClock.now - started); socketio holds \(socket.messages.count), xmtp holds \
            \(xmtp.messages.count); last status: \(ending.lastLines.joined(separator: " | ")); final: \
            \(ending.final.stdout.split(separator: "\n").last ?? "")
            """)
        #expect(kills >= 5)
    }
}
