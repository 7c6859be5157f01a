import Foundation
import SocketIOAdapter
import SocketIOConformance
import SocketIOServer
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import TestSupport
import Testing
import XMTPAdapter
import XMTPConformance
import XMTPNode

/// What a migration carries and what it reports, on every pair of backends the migrator supports: every message is
/// copied, the migrating account's own too; a copy made from the target and a message deleted at the source are
/// not, and each is listed with its reason; `plan` (the dry run) says the same without writing anything.
@Suite("Migration semantics on every backend pair", .serialized, .postgresCluster)
struct MigrationSemanticsTests {
    static let pairs: [(MigrationBackendKind, MigrationBackendKind)] = MigrationBackendKind.allCases.flatMap { source in
        MigrationBackendKind.allCases.filter { $0 != source }.map { (source, $0) }
    }

    @Test("own messages are copied, copies from the target and deleted messages are listed, the dry run agrees",
          arguments: pairs)
    func carriesAndReports(source sourceKind: MigrationBackendKind, target targetKind: MigrationBackendKind) async throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-migration-semantics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let source = try await MigrationBackend.start(sourceKind, root: root)
        let target: MigrationBackend
        do {
            target = try await MigrationBackend.start(targetKind, root: root)
        } catch {
            await source.stop()
            throw error
        }
        try await withCleanup {
            try await exercise(source: source, target: target, root: root)
        } cleanup: {
            await source.stop()
            await target.stop()
            try? FileManager.default.removeItem(at: root)
        }
    }

    private func exercise(source: MigrationBackend, target: MigrationBackend, root: URL) async throws {
        _ = try await source.send(as: source.human, "from the human")
        _ = try await source.send(as: source.migrator, "the account's own")
        let deleted = try await source.send(as: source.human, "deleted at the source")
        try await source.delete(deleted)
        let fromTarget = try await source.send(as: source.migrator, "a copy made from the target",
                                               metadata: ["bridge.origin": "\(target.kind.rawValue):elsewhere-1",
                                                          "bridge.sender": "someone"])
        let store = try SQLiteStore(path: root.appendingPathComponent("migrate-\(source.kind)-\(target.kind).sqlite").path)
        defer { store.close() }
        var configuration = MigrationConfiguration()
        configuration.retryDelay = .milliseconds(10)
        let migration = try Migration(source: BridgeSide(name: source.kind.rawValue, adapter: source.migrator,
                                                         conversation: source.conversation),
                                      target: BridgeSide(name: target.kind.rawValue, adapter: target.migrator,
                                                         conversation: target.conversation),
                                      store: store, configuration: configuration)
        let expectedNotCarried: Set<String> = ["\(deleted) deletedAtSource", "\(fromTarget) copyFromTarget"]
        func reasons(_ entries: [NotCarried]) -> Set<String> { Set(entries.map { "\($0.sourceRemoteID) \($0.reason.name)" }) }

        // The dry run: the plan, and nothing written or copied.
        let plan = try await migration.plan()
        #expect(plan.toCopy == 2 && plan.alreadyPresent == 0 && !plan.resumes, "\(plan)")
        #expect(reasons(plan.notCarried) == expectedNotCarried, "\(plan.notCarried)")
        #expect(try await target.texts().isEmpty, "the dry run copied nothing")
        let pair = Bridge.pairKey(a: source.conversation, b: target.conversation)
        #expect(try await store.read { try $0.bridgeCursor(pair: pair, backend: source.migrator.backend) } == nil)
        #expect(try await store.read { try $0.bridgeCopies(pair: pair, after: nil, limit: 10) }.isEmpty, "the dry run wrote nothing")

        let report = try await migration.run()
        #expect(report.status == .completed && report.copied == 2 && report.failed == 0, "\(report)")
        #expect(reasons(report.notCarried) == expectedNotCarried, "\(report.notCarried)")
        #expect(Set(try await target.texts()) == ["from the human", "the account's own"], "the copies on the target")
        #expect(report.summaryLines.contains { $0.contains("\(fromTarget)") && $0.contains("a copy made from the target") },
                "\(report.summaryLines)")

        // Again: nothing more; the plan now knows the earlier run.
        let again = try await migration.run()
        #expect(again.copied == 0 && again.alreadyPresent == 2 && again.notCarried.isEmpty, "\(again)")
        let replanned = try await migration.plan()
        #expect(replanned.toCopy == 0 && replanned.alreadyPresent == 2 && replanned.resumes, "\(replanned)")
        #expect(try await target.texts().count == 2)
    }
}

/// Issue 28's findings from the command line: a migration of the account's own messages, a source conversation
/// that is mistyped or not the account's, and what a bridge does when an account may not read its conversation.
@Suite("Migrate and bridge report what they did not carry and stop on errors no retry fixes", .serialized, .postgresCluster)
struct MigrationFindingsTests {
    /// Starts the Supabase-like source and the Socket-style target, runs `body`, stops them.
    private func withBackends(_ body: (MigrationBackend, MigrationBackend, URL) async throws -> Void) async throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-migration-findings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let source = try await MigrationBackend.start(.supabase, root: root)
        let target: MigrationBackend
        do {
            target = try await MigrationBackend.start(.socketio, root: root)
        } catch {
            await source.stop()
            throw error
        }
        try await withCleanup { try await body(source, target, root) } cleanup: {
            await source.stop()
            await target.stop()
            try? FileManager.default.removeItem(at: root)
        }
    }

    /// Runs `switchboard migrate` with `arguments`.
    private func migrate(_ arguments: [String]) async throws -> ProcessResult {
        try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, ["migrate"] + arguments, timeout: .seconds(120))
    }

    @Test("the migrating account's own messages are all copied; --dry-run says so first and writes nothing")
    func ownMessages() async throws {
        try await withBackends { source, target, root in
            for index in 1...3 { _ = try await source.send(as: source.migrator, "mine \(index)") }
            let store = root.appendingPathComponent("own.sqlite").path
            let arguments = ["--from", source.endpoint.serialized, "--to", target.endpoint.serialized, "--store", store]
            let plan = try await migrate(arguments + ["--dry-run"])
            #expect(plan.status == 0, "\(plan.stderr)")
            #expect(plan.stdout.contains("to copy:         3") && plan.stdout.contains("dry run"), "\(plan.stdout)")
            #expect(!FileManager.default.fileExists(atPath: store), "the dry run created no store")
            let run = try await migrate(arguments + ["--no-estimate"])
            #expect(run.status == 0, "\(run.stdout)\n\(run.stderr)")
            #expect(run.stdout.contains("copied:          3"), "\(run.stdout)")
            #expect(Set(try await target.texts()) == ["mine 1", "mine 2", "mine 3"])
        }
    }

    @Test("a migration whose target refuses the account stops at once: no retries, the side named, counted per message")
    func permanentErrorStopsTheRun() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        let alice = pair.left.makeAdapter(for: "alice")
        for index in 0..<3 {
            let outgoing = OutgoingMessage(id: .make(), conversation: "room-left", sender: "alice", text: "m\(index)", createdAt: Date())
            _ = try await alice.publish(try await alice.prepare(outgoing, noSend: false))
        }
        let gate = PublishGate(pair.right.makeAdapter(for: "bridge"),
                               failure: SwitchboardError(.forbidden, "HTTP 403 42501: new row violates row-level security policy"))
        gate.closed = true
        let lines = CollectingLogHandler()
        var configuration = MigrationConfiguration()
        configuration.retryDelay = .milliseconds(1)
        configuration.logger = lines.logger(label: "migration")
        let migration = try Migration(source: BridgeSide(name: "left", adapter: pair.left.makeAdapter(for: "bridge"),
                                                         conversation: "room-left"),
                                      target: BridgeSide(name: "right", adapter: gate, conversation: "room-right"),
                                      store: pair.store, configuration: configuration)
        let report = try await migration.run()
        #expect(report.status == .failed && report.errorIsPermanent && report.copied == 0, "\(report)")
        #expect(report.failed == 3, "three messages not migrated, counted once each: \(report.failed)")
        #expect(report.error?.contains("stopped left → right: right conversation room-right: forbidden") == true,
                "\(report.error ?? "")")
        #expect(!lines.messages.contains { $0.contains("retrying") }, "no retry: \(lines.messages)")
        #expect(report.summaryLines.contains { $0.contains("no retry can fix this error") }, "\(report.summaryLines)")
    }

    @Test("a mistyped source conversation, or one the account is not a member of, is an error naming it")
    func unreadableSource() async throws {
        try await withBackends { source, target, root in
            let harness = try #require(source.supabaseHarness)
            let elsewhere = try await harness.createConversation(title: "not the migrator's", members: ["someone-else"])
            let typo = ConversationID(UUID().uuidString.lowercased())
            for conversation in [typo, elsewhere] {
                let result = try await migrate([
                    "--from", source.endpoint.serialized, "--to", target.endpoint.serialized,
                    "--conversation", "\(conversation):\(target.conversation)",
                    "--store", root.appendingPathComponent("unreadable.sqlite").path])
                #expect(result.status == 1, "exit \(result.status): \(result.stdout)")
                #expect(result.stderr.contains("source") && result.stderr.contains("\(conversation)")
                        && result.stderr.contains("does not exist, or"), "\(result.stderr)")
                #expect(!result.stdout.contains("migration completed"), "\(result.stdout)")
            }
        }
    }

    @Test("switchboard bridge with a refused token stops that pair at once, naming the side, its conversation and the 401")
    func bridgeCommandRefusedToken() async throws {
        try await withBackends { source, target, root in
            let harness = try #require(source.supabaseHarness)
            let wrongSecret = SupabaseHarness(baseURL: source.url, jwtSecret: "not-the-server-secret-0123456789abcdef")
            let supabase: JSONValue = .object([
                "adapter": "supabase", "url": .string(source.url.absoluteString), "conversation": .string(source.conversation.rawValue),
                "apiKey": .string(harness.token(role: "anon")),
                "accessToken": .string(wrongSecret.token(role: "authenticated", sub: source.migrator.localUser.rawValue)),
                "user": .string(source.migrator.localUser.rawValue)])
            let config = bridgeConfig(store: .object(["sqlite": "bridge.sqlite"]), worker: "refused", leaseSeconds: 3,
                                      statusEverySeconds: 1, a: target.endpoint, b: supabase)
            let path = try writeConfig(config, as: "bridge.json", in: root)
            let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path,
                                                            ["bridge", "--config", path, "--catch-up-only"], timeout: .seconds(120))
            #expect(result.status == 1, "exit \(result.status): \(result.stderr)")
            let stopped = result.stderr.split(separator: "\n").filter { $0.contains("no retry can fix it") }
            #expect(!stopped.isEmpty && stopped.allSatisfy { $0.contains("side b conversation \(source.conversation)")
                && $0.contains("unauthorized") && $0.contains("401") }, "\(result.stderr)")
            #expect(!result.stderr.contains("attempt 2"), "not retried: \(result.stderr)")
        }
    }

    @Test("a bridge whose account may not read a conversation, or whose token is refused, stops naming the side")
    func bridgeStopsOnAccess() async throws {
        try await withBackends { source, target, root in
            let harness = try #require(source.supabaseHarness)
            let elsewhere = try await harness.createConversation(title: "not the bridge's", members: ["someone-else"])
            let wrongSecret = SupabaseHarness(baseURL: source.url, jwtSecret: "not-the-server-secret-0123456789abcdef")
            let forged = SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
                baseURL: source.url, apiKey: harness.token(role: "anon"),
                accessToken: wrongSecret.token(role: "authenticated", sub: source.migrator.localUser.rawValue),
                localUser: source.migrator.localUser))
            let cases: [(adapter: any ChatAdapter, conversation: ConversationID, expected: String)] = [
                (source.migrator, elsewhere, "does not exist, or"),
                (forged, source.conversation, "unauthorized"),
            ]
            for (index, item) in cases.enumerated() {
                let store = try SQLiteStore(path: root.appendingPathComponent("bridge-\(index).sqlite").path)
                defer { store.close() }
                let lines = CollectingLogHandler()
                var configuration = BridgeConfiguration()
                configuration.logger = lines.logger(label: "migration")
                let bridge = try await Bridge(a: BridgeSide(name: "supabase", adapter: item.adapter, conversation: item.conversation),
                                        b: BridgeSide(name: "socketio", adapter: target.migrator, conversation: target.conversation),
                                        store: store, configuration: configuration)
                await #expect(throws: SwitchboardError.self) { try await bridge.catchUp() }
                let status = await bridge.currentStats.lastError ?? ""
                #expect(status.hasPrefix("stopped") && status.contains("supabase conversation \(item.conversation)")
                        && status.contains(item.expected), "\(status)")
                #expect(lines.messages(at: .error).contains { $0.contains("no retry can fix it") }, "\(lines.records)")
            }
        }
    }
}

/// The backends a migration can go between.
enum MigrationBackendKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case supabase, socketio, xmtp

    /// The name in test output.
    var testDescription: String { rawValue }
}

/// One reference server in-process with a fresh conversation of the migrating account and a human user, and
/// their adapters.
final class MigrationBackend: Sendable {
    /// Which backend.
    let kind: MigrationBackendKind
    /// The conversation.
    let conversation: ConversationID
    /// The migrating account's adapter.
    let migrator: any ChatAdapter
    /// The human's adapter.
    let human: any DeletingAdapter
    /// The migrating account's endpoint object for `switchboard migrate`.
    let endpoint: JSONValue
    /// The server's base URL.
    let url: URL
    /// Token minting and setup, on the Supabase-like server.
    let supabaseHarness: SupabaseHarness?
    /// Stops the server.
    private let stopServer: @Sendable () async -> Void

    private init(kind: MigrationBackendKind, conversation: ConversationID, migrator: any ChatAdapter,
                 human: any DeletingAdapter, endpoint: JSONValue, url: URL, supabaseHarness: SupabaseHarness? = nil,
                 stop: @escaping @Sendable () async -> Void) {
        self.kind = kind
        self.conversation = conversation
        self.migrator = migrator
        self.human = human
        self.endpoint = endpoint
        self.url = url
        self.supabaseHarness = supabaseHarness
        stopServer = stop
    }

    /// Starts `kind`'s server with its data under `root` and creates the conversation.
    static func start(_ kind: MigrationBackendKind, root: URL) async throws -> MigrationBackend {
        let folder = root.appendingPathComponent(kind.rawValue)
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        switch kind {
        case .supabase:
            var configuration = SupabaseServerConfiguration(dataDirectory: folder, jwtSecret: BridgeServers.jwtSecret)
            configuration.databaseURL = try PostgresTestCluster.required().freshDatabase()
            let server = SupabaseServer(configuration: configuration)
            do {
                let url = URL(string: "http://127.0.0.1:\(try await server.start())")!
                let harness = SupabaseHarness(baseURL: url, jwtSecret: BridgeServers.jwtSecret)
                let migrator = UserID("migrator-\(suffix)"), human = UserID("carol-\(suffix)")
                let conversation = try await harness.createConversation(title: "migration", members: [migrator, human])
                func adapter(_ user: UserID) -> SupabaseAdapter {
                    SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
                        baseURL: url, apiKey: harness.token(role: "anon"),
                        accessToken: harness.token(role: "authenticated", sub: user.rawValue), localUser: user))
                }
                let endpoint: JSONValue = .object([
                    "adapter": "supabase", "url": .string(url.absoluteString), "conversation": .string(conversation.rawValue),
                    "apiKey": .string(harness.token(role: "anon")),
                    "accessToken": .string(harness.token(role: "authenticated", sub: migrator.rawValue)),
                    "user": .string(migrator.rawValue)])
                return MigrationBackend(kind: kind, conversation: conversation, migrator: adapter(migrator), human: adapter(human),
                                        endpoint: endpoint, url: url, supabaseHarness: harness,
                                        stop: { await server.stop() })
            } catch {
                await server.stop()
                throw error
            }
        case .socketio:
            let server = SocketIOServer(configuration: SocketIOServerConfiguration(dataDirectory: folder))
            do {
                let url = URL(string: "http://127.0.0.1:\(try await server.start())")!
                let harness = SocketIOHarness(baseURL: url)
                let migrator = UserID("migrator-\(suffix)"), human = UserID("erin-\(suffix)")
                let tokens = [migrator: try await harness.register(migrator), human: try await harness.register(human)]
                let conversation = ConversationID("migration-\(suffix)")
                try await harness.createConversation(conversation, members: [migrator], token: tokens[human] ?? "")
                func adapter(_ user: UserID) -> SocketIOAdapter {
                    SocketIOAdapter(configuration: SocketIOAdapter.Configuration(baseURL: url, token: tokens[user] ?? "",
                                                                                 localUser: user))
                }
                let endpoint: JSONValue = .object([
                    "adapter": "socketio", "url": .string(url.absoluteString), "conversation": .string(conversation.rawValue),
                    "user": .string(migrator.rawValue), "token": .string(tokens[migrator] ?? "")])
                return MigrationBackend(kind: kind, conversation: conversation, migrator: adapter(migrator), human: adapter(human),
                                        endpoint: endpoint, url: url, stop: { await server.stop() })
            } catch {
                await server.stop()
                throw error
            }
        case .xmtp:
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let side = try await XMTPBridgeSide.start(root: folder, suffix: suffix)
            do {
                let secret = side.secret
                let migrator = try XMTPAdapter(configuration: XMTPAdapter.Configuration(
                    baseURL: side.nodeURL, inboxID: side.bridgeInbox, token: side.tokens[side.bridgeInbox] ?? "",
                    databasePath: folder.appendingPathComponent("migrator.sqlite").path, groupSecret: { _ in secret }))
                let endpoint: JSONValue = .object([
                    "adapter": "xmtp", "url": .string(side.nodeURL.absoluteString),
                    "conversation": .string(side.conversation.rawValue), "inbox": .string(side.bridgeInbox.rawValue),
                    "token": .string(side.tokens[side.bridgeInbox] ?? ""), "groupSecret": .string(Digest.hex(secret)),
                    "database": .string(folder.appendingPathComponent("migrator-cli.sqlite").path)])
                return MigrationBackend(kind: kind, conversation: side.conversation, migrator: migrator,
                                        human: try side.daveAdapter(database: "dave.sqlite"), endpoint: endpoint,
                                        url: side.nodeURL, stop: { await side.stop() })
            } catch {
                await side.stop()
                throw error
            }
        }
    }

    /// Stops the server.
    func stop() async { await stopServer() }

    /// Publishes `text` as `adapter`'s user; returns its ID here.
    func send(as adapter: any ChatAdapter, _ text: String, metadata: [String: String] = [:]) async throws -> RemoteID {
        let outgoing = OutgoingMessage(id: .make(), conversation: conversation, sender: adapter.localUser, text: text,
                                       metadata: metadata, createdAt: Date())
        let prepared = try await adapter.prepare(outgoing, noSend: false)
        let receipt = try await adapter.publish(prepared)
        return try #require(receipt.remoteID ?? prepared.remoteID)
    }

    /// Deletes the human's message `remote`.
    func delete(_ remote: RemoteID) async throws {
        try await human.delete(remote, in: conversation)
    }

    /// The texts of the messages standing in the conversation, read by the human.
    func texts() async throws -> [String] {
        try await human.allMessages(in: conversation).filter { $0.deletedAt == nil }.map(\.text)
    }
}
