import Foundation
import SupabaseAdapter
import SupabaseConformance
import SupabaseServer
import SwitchboardBridge
import SwitchboardCore
import SwitchboardNet
import SwitchboardStore
import Synchronization
import TestSupport
import Testing
import XMTPAdapter
import XMTPCodec
import XMTPConformance
import XMTPCrypto
import XMTPNode

/// Migration of 10,000 messages from an XMTP-like group to a Supabase-like conversation: interrupted (task
/// cancelled in-process, then the `switchboard migrate` child SIGKILLed), resumed, run again, verified, tampered.
@Suite("Migration XMTP-like → Supabase-like", .serialized)
struct MigrationTests {
    /// Messages seeded in the XMTP group.
    static let messageCount = 10_000

    @Test("10,000 messages: interrupted twice, resumed, re-run adds nothing, --verify clean, a tampered text is reported")
    func tenThousandMessages() async throws {
        let world = try await MigrationWorld.start()
        try await withCleanup { try await exercise(world) } cleanup: { await world.stop() }
    }

    private func exercise(_ world: MigrationWorld) async throws {
        let count = Self.messageCount
        let seedStart = ContinuousClock.now
        try await world.seed(count)
        let seedTime = ContinuousClock.now - seedStart
        print("migration test: seeded \(count) XMTP messages in \(seedTime)")

        // 1. In-process, cancelled mid-page after at least 250 messages.
        let first = try await world.runCancelled(after: 250)
        #expect(first.status == .interrupted)
        // The count runs alongside the copy; a stop does not wait for it, so an early stop may not know the total.
        #expect(first.total == nil || first.total == count, "the estimate counted \(first.total.map(String.init) ?? "nothing")")
        let afterFirst = try await world.targetCount()
        #expect(afterFirst >= 250 && afterFirst < count, "after the cancelled run the target holds \(afterFirst)")
        print("migration test: run 1 cancelled after \(first.copied) copied (\(String(format: "%.0f", first.rate)) msg/s); "
              + "target holds \(afterFirst)")

        // 2. The command as a child process, SIGKILLed once its progress passed 1,000 more. Its progress counts the
        //    copies the cancelled run left pending (staged, perhaps published) as handled from the start; the child
        //    publishes them again first, so 1,000 more means 1,000 new ones.
        let pendingAfterFirst = try await world.pendingCopies()
        let killedAt = try await world.runChildAndKill(afterProcessed: afterFirst + pendingAfterFirst + 1_000)
        let afterKill = try await world.targetCount()
        #expect(afterKill > afterFirst && afterKill < count, "after the SIGKILL the target holds \(afterKill)")
        print("migration test: child SIGKILLed at progress line '\(killedAt)'; target holds \(afterKill)")

        // 3. The command again, stopped gracefully with SIGTERM: it finishes the message in flight, prints the
        //    report and exits 143.
        let pendingAfterKill = try await world.pendingCopies()
        let terminated = try await world.runChildAndSignal(SIGTERM, afterProcessed: afterKill + pendingAfterKill + 1_000)
        #expect(terminated.status == 128 + SIGTERM, "exit \(terminated.status)")
        #expect(terminated.output.contains("migration interrupted"), "\(terminated.output)")
        let afterTerm = try await world.targetCount()
        #expect(afterTerm > afterKill && afterTerm < count, "after the SIGTERM the target holds \(afterTerm)")

        // The graceful stop finished the batch in flight (and the SIGKILLed run's leftovers came before it).
        await #expect(try world.pendingCopies() == 0)
        print("migration test: pending copies after the cancel \(pendingAfterFirst), after the SIGKILL \(pendingAfterKill), "
              + "after the SIGTERM 0")

        // 4. Resume in-process to the end.
        let resumed = try await world.run()
        #expect(resumed.status == .completed, "resume ended \(resumed.status): \(resumed.error ?? "")")
        #expect(resumed.total == count, "the estimate counted \(resumed.total.map(String.init) ?? "nothing")")
        #expect(resumed.copied + resumed.alreadyPresent == count,
                "resume: \(resumed.copied) copied + \(resumed.alreadyPresent) already present")
        #expect(resumed.alreadyPresent >= afterTerm)
        #expect(resumed.failed == 0 && resumed.skippedDeleted == 0)
        print("migration test: resume copied \(resumed.copied) at \(String(format: "%.0f", resumed.rate)) msg/s "
              + "(\(resumed.alreadyPresent) already present, \(String(format: "%.1f", resumed.duration)) s)")

        // 5. Run again through the command with --verify: nothing copied, all present, clean.
        let again = try await world.runChild(["--verify", "--format", "json"])
        #expect(again.status == 0, "re-run exited \(again.status): \(again.stderr)")
        let json = try #require(JSONValue.parseOrNil(Data(again.stdout.utf8)), "not JSON: \(again.stdout)")
        #expect(json["migration"]?["copied"]?.intValue == 0)
        #expect(json["migration"]?["alreadyPresent"]?.intValue == Int64(count))
        #expect(json["verification"]?["clean"]?.boolValue == true, "verification: \(json["verification"]?.serialized ?? "")")
        #expect(json["verification"]?["matched"]?.intValue == Int64(count))

        // 6. Counted on the server: exactly 10,000 rows, 10,000 distinct keys.
        #expect(try await world.targetCount() == count)
        let keys = try await world.targetKeys()
        #expect(keys.count == count && Set(keys).count == count, "\(keys.count) rows, \(Set(keys).count) distinct keys")

        // 7. Tamper one copy's text: verification reports exactly that mismatch (in-process and through the command).
        let tampered = keys[keys.count / 2]
        try await world.tamper(rowID: tampered, text: "tampered text")
        let verification = try await world.verify()
        #expect(verification.mismatchCount == 1 && verification.missingCount == 0 && verification.extraCount == 0,
                "\(verification.summaryLines.joined(separator: "\n"))")
        #expect(verification.mismatches.first?.targetRemoteID.rawValue == tampered)
        #expect(verification.mismatches.first?.found == "tampered text")
        let command = try await world.runChild(["--verify-only"])
        #expect(command.status == 1)
        #expect(command.stdout.contains("mismatches: 1") && command.stdout.contains("tampered text"), "\(command.stdout)")
    }

    @Test("bad endpoints exit 2 naming the field; an unreachable side exits 1 and writes nothing")
    func badInput() async throws {
        let executable = try SwitchboardExecutable.locate().path
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("migrate-bad-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let store = directory.appendingPathComponent("store.sqlite").path
        let xmtp = #"{"adapter":"xmtp","url":"http://127.0.0.1:1","conversation":"00112233445566778899aabbccddeeff","inbox":"m","token":"t","groupSecret":"0011223344556677889900112233445566778899001122334455667788990011","database":"DB"}"#
            .replacingOccurrences(of: "DB", with: directory.appendingPathComponent("x.sqlite").path)
        let supabase = #"{"adapter":"supabase","url":"http://127.0.0.1:1","conversation":"6f1c1d2e-0000-4000-8000-000000000001","apiKey":"k","accessToken":"t","user":"m"}"#

        let missingURL = try await ChildProcess.runDetached(executable, ["migrate", "--from", #"{"adapter":"xmtp"}"#, "--to", supabase,
                                                                         "--store", store], timeout: .seconds(30))
        #expect(missingURL.status == 2 && missingURL.stderr.contains("--from.url"), "\(missingURL.stderr)")
        let badConversation = try await ChildProcess.runDetached(executable, ["migrate", "--from", xmtp, "--to", supabase,
                                                                              "--conversation", "abc:def", "--store", store],
                                                                 timeout: .seconds(30))
        #expect(badConversation.status == 2 && badConversation.stderr.contains("--conversation"), "\(badConversation.stderr)")
        let unsetSecret = try await ChildProcess.runDetached(
            executable, ["migrate", "--from", xmtp, "--to", supabase.replacingOccurrences(of: #""accessToken":"t""#,
                                                                                          with: #""accessToken":"env:MIGRATE_TEST_UNSET""#),
                         "--store", store], timeout: .seconds(30))
        #expect(unsetSecret.status == 2 && unsetSecret.stderr.contains("--to.accessToken"), "\(unsetSecret.stderr)")

        let unreachable = try await ChildProcess.runDetached(executable, ["migrate", "--from", xmtp, "--to", supabase, "--store", store],
                                                             timeout: .seconds(60))
        #expect(unreachable.status == 1, "exit \(unreachable.status): \(unreachable.stderr)")
        #expect(unreachable.stderr.contains("source") && unreachable.stderr.contains("nothing was copied"), "\(unreachable.stderr)")
        let reopened = try SQLiteStore(path: store)
        defer { reopened.close() }
        let cursor = try await reopened.read {
            try $0.bridgeCursor(pair: Bridge.pairKey(a: "00112233445566778899aabbccddeeff",
                                                     b: "6f1c1d2e-0000-4000-8000-000000000001"), backend: "xmtp")
        }
        #expect(cursor == nil)
    }
}

/// Both reference servers in-process on temporary directories, one conversation on each, and the migration's
/// store, accounts and endpoints.
final class MigrationWorld: Sendable {
    /// The JWT secret of the Supabase-like server.
    static let jwtSecret = "switchboard-migration-test-secret-0123456789"

    let root: URL
    let node: XMTPNodeServer
    let nodeURL: URL
    let supabase: SupabaseServer
    let supabaseURL: URL
    let harness: SupabaseHarness
    let groupID: [UInt8]
    let secret: [UInt8]
    let group: ConversationID
    let author: UserID
    let authorToken: String
    let migrator: UserID
    let migratorXMTPToken: String
    let room: ConversationID

    private init(root: URL, node: XMTPNodeServer, nodeURL: URL, supabase: SupabaseServer, supabaseURL: URL,
                 groupID: [UInt8], secret: [UInt8], author: UserID, authorToken: String, migrator: UserID,
                 migratorXMTPToken: String, room: ConversationID) {
        self.root = root
        self.node = node
        self.nodeURL = nodeURL
        self.supabase = supabase
        self.supabaseURL = supabaseURL
        self.harness = SupabaseHarness(baseURL: supabaseURL, jwtSecret: Self.jwtSecret)
        self.groupID = groupID
        self.secret = secret
        self.group = ConversationID(Digest.hex(groupID))
        self.author = author
        self.authorToken = authorToken
        self.migrator = migrator
        self.migratorXMTPToken = migratorXMTPToken
        self.room = room
    }

    /// Starts both servers and creates the XMTP group (author + migrator) and the Supabase conversation.
    static func start() async throws -> MigrationWorld {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-migration-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        let node = XMTPNodeServer(configuration: XMTPNodeConfiguration(dataDirectory: root.appendingPathComponent("node")))
        let nodePort = try await node.start()
        let supabase = SupabaseServer(configuration: SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"),
                                                                                 jwtSecret: jwtSecret))
        let supabasePort: Int
        do {
            supabasePort = try await supabase.start()
        } catch {
            await node.stop()
            throw error
        }
        let nodeURL = URL(string: "http://127.0.0.1:\(nodePort)")!
        let supabaseURL = URL(string: "http://127.0.0.1:\(supabasePort)")!
        let xmtp = XMTPHarness(baseURL: nodeURL)
        let author = UserID("alice"), migrator = UserID("migrator")
        let authorToken = try await xmtp.register(author)
        let migratorToken = try await xmtp.register(migrator)
        let groupID = try SecureRandom.bytes(16)
        try await xmtp.createGroup(groupID, members: [migrator], token: authorToken)
        let harness = SupabaseHarness(baseURL: supabaseURL, jwtSecret: jwtSecret)
        try await harness.ensureBucket("attachments")
        let room = try await harness.createConversation(title: "migrated", members: [migrator, "reader"])
        return MigrationWorld(root: root, node: node, nodeURL: nodeURL, supabase: supabase, supabaseURL: supabaseURL,
                              groupID: groupID, secret: try SecureRandom.bytes(32), author: author, authorToken: authorToken,
                              migrator: migrator, migratorXMTPToken: migratorToken, room: room)
    }

    /// Stops both servers and removes the directory.
    func stop() async {
        await node.stop()
        await supabase.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// The migration's SQLite store.
    var storePath: String { root.appendingPathComponent("migrate.sqlite").path }

    /// An adapter as `user` on the XMTP group, on its own local database.
    func xmtpAdapter(_ user: UserID, token: String, database: String) throws -> XMTPAdapter {
        let secret = self.secret
        return try XMTPAdapter(configuration: XMTPAdapter.Configuration(
            baseURL: nodeURL, inboxID: user, token: token, databasePath: root.appendingPathComponent(database).path,
            groupSecret: { _ in secret }))
    }

    /// Seeds `count` text messages from the author: the first 100 through an `XMTPAdapter` (prepare + publishAll),
    /// the rest sealed the same way and sent 1,000 envelopes per request (the node's bulk send).
    func seed(_ count: Int) async throws {
        let adapter = try xmtpAdapter(author, token: authorToken, database: "author.sqlite")
        let viaAdapter = min(100, count)
        var prepared: [PreparedMessage] = []
        for index in 0..<viaAdapter {
            prepared.append(try await adapter.prepare(OutgoingMessage(id: .make(), conversation: group, sender: author,
                                                                      text: "message \(index)", createdAt: Date()), noSend: false))
        }
        _ = try await adapter.publishAll(prepared)
        let cipher = try GroupCipher(secret: secret)
        var index = viaAdapter
        while index < count {
            var messages: [JSONValue] = []
            for _ in 0..<min(1_000, count - index) {
                let content = XMTPText("message \(index)").encoded().encoded()
                let sealed = XMTPSealedMessage(senderInboxID: author.rawValue, content: content,
                                               idempotencyKey: MessageID.make().rawValue).encoded()
                let (nonce, ciphertext) = try cipher.seal(sealed, aad: groupID)
                let envelope = XMTPGroupEnvelope(groupID: groupID, nonce: nonce, ciphertext: ciphertext).encoded()
                messages.append(["v1": ["data": .string(Data(envelope).base64EncodedString()), "sender_hmac": "", "should_push": true]])
                index += 1
            }
            var headers = HTTPHeaders()
            headers.add("Content-Type", "application/json")
            headers.add("Authorization", "Bearer \(authorToken)")
            let body: JSONValue = ["messages": .array(messages)]
            let response = try await HTTPClient().send(HTTPRequest(method: .post, url: nodeURL.appendingPathComponent("mls/v1/send-group-messages"),
                                                                   headers: headers, body: Data(body.serialized.utf8), timeout: .seconds(60)))
            guard response.isSuccess else {
                throw SwitchboardError(.transport, "bulk send failed: HTTP \(response.status) " + String(decoding: response.body.prefix(300), as: UTF8.self))
            }
        }
    }

    /// The migrator's Supabase token.
    var migratorSupabaseToken: String { harness.token(role: "authenticated", sub: migrator.rawValue) }

    /// A migration over a freshly opened store and fresh adapters (each run models a restart).
    func migration(store: any Store) throws -> Migration {
        let source = BridgeSide(name: "xmtp", adapter: try xmtpAdapter(migrator, token: migratorXMTPToken, database: "migrator-xmtp.sqlite"),
                                conversation: group)
        let target = BridgeSide(name: "supabase", adapter: SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: supabaseURL, apiKey: harness.token(role: "anon"), accessToken: migratorSupabaseToken, localUser: migrator)),
            conversation: room)
        return try Migration(source: source, target: target, store: store)
    }

    /// Runs to the end on a freshly opened store.
    func run() async throws -> MigrationReport {
        let store = try SQLiteStore(path: storePath)
        defer { store.close() }
        return try await migration(store: store).run()
    }

    /// Copies an interrupted run left pending in the ledger (staged, perhaps already published); the next run
    /// publishes them again under their keys.
    func pendingCopies() async throws -> Int {
        let store = try SQLiteStore(path: storePath)
        defer { store.close() }
        let pair = Bridge.pairKey(a: group, b: room)
        return try await store.read { tx in
            var pending = 0
            var after: MessageID?
            while true {
                let entries = try tx.bridgeCopies(pair: pair, after: after, limit: 1_000)
                pending += entries.filter { $0.pendingTowards != nil }.count
                guard let last = entries.last else { return pending }
                after = last.messageID
            }
        }
    }

    /// Verifies on a freshly opened store.
    func verify() async throws -> MigrationVerification {
        let store = try SQLiteStore(path: storePath)
        defer { store.close() }
        return try await migration(store: store).verify()
    }

    /// Runs in a task and cancels it once `processed` messages were handled.
    func runCancelled(after processed: Int) async throws -> MigrationReport {
        let store = try SQLiteStore(path: storePath)
        defer { store.close() }
        let migration = try migration(store: store)
        let reached = Atomic<Bool>(false)
        let task = Task {
            try await migration.run(progress: { progress in
                if progress.processedThisRun >= processed { reached.store(true, ordering: .releasing) }
            })
        }
        let deadline = TestTime.deadline(after: .seconds(120))
        while !reached.load(ordering: .acquiring), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        task.cancel()
        return try await task.value
    }

    /// The endpoint JSON of both sides for the command (secrets through the environment).
    var endpointArguments: (arguments: [String], environment: [String: String]) {
        let from: JSONValue = ["adapter": "xmtp", "url": .string(nodeURL.absoluteString), "conversation": .string(group.rawValue),
                               "inbox": .string(migrator.rawValue), "token": "env:MIGRATE_XMTP_TOKEN",
                               "groupSecret": "env:MIGRATE_XMTP_SECRET",
                               "database": .string(root.appendingPathComponent("migrator-xmtp.sqlite").path)]
        let to: JSONValue = ["adapter": "supabase", "url": .string(supabaseURL.absoluteString), "conversation": .string(room.rawValue),
                             "apiKey": .string(harness.token(role: "anon")), "accessToken": "env:MIGRATE_SB_TOKEN",
                             "user": .string(migrator.rawValue)]
        return (["migrate", "--from", from.serialized, "--to", to.serialized, "--store", storePath],
                ["MIGRATE_XMTP_TOKEN": migratorXMTPToken, "MIGRATE_XMTP_SECRET": Digest.hex(secret),
                 "MIGRATE_SB_TOKEN": migratorSupabaseToken])
    }

    /// Runs `switchboard migrate` to completion with extra arguments.
    func runChild(_ extra: [String]) async throws -> ProcessResult {
        let (arguments, environment) = endpointArguments
        return try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path, arguments + extra,
                                                  environment: environment, timeout: .seconds(300))
    }

    /// Starts `switchboard migrate` and SIGKILLs it once a progress line shows at least `processed` messages;
    /// returns that line.
    func runChildAndKill(afterProcessed processed: Int) async throws -> String {
        let child = try startChild()
        defer { child.killIfRunning() }
        let deadline = TestTime.deadline(after: .seconds(120))
        while ContinuousClock.now < deadline, child.process.isRunning {
            if let line = child.lines.allLines().first(where: { Self.processed(in: $0).map { $0 >= processed } ?? false }) {
                kill(child.process.processIdentifier, SIGKILL)
                return line
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw SwitchboardError(.transport, "the child never reported \(processed) processed; output: \(child.lines.allLines())")
    }

    /// Starts `switchboard migrate`, sends `signal` once a progress line shows at least `processed` messages,
    /// and waits for it to exit; returns its status and everything it printed.
    func runChildAndSignal(_ signal: Int32, afterProcessed processed: Int) async throws -> (status: Int32, output: String) {
        let child = try startChild()
        let deadline = TestTime.deadline(after: .seconds(120))
        var signalled = false
        while ContinuousClock.now < deadline, child.process.isRunning {
            if !signalled, child.lines.allLines().contains(where: { Self.processed(in: $0).map { $0 >= processed } ?? false }) {
                kill(child.process.processIdentifier, signal)
                signalled = true
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        child.killIfRunning()
        try await Task.sleep(for: .milliseconds(100))
        return (child.process.terminationStatus, child.lines.allLines().joined(separator: "\n"))
    }

    /// Starts `switchboard migrate` on the endpoints, its standard error passed through.
    private func startChild() throws -> SwitchboardChild {
        let (arguments, environment) = endpointArguments
        return try SwitchboardChild.start(arguments, environment: environment, standardError: .standardError)
    }

    /// The count of a plain progress line `migrated 2,345 of 10,000 ...`.
    static func processed(in line: String) -> Int? {
        guard line.hasPrefix("migrated ") else { return nil }
        let number = line.dropFirst("migrated ".count).prefix { $0.isNumber || $0 == "," }
        return Int(number.replacingOccurrences(of: ",", with: ""))
    }

    /// Headers of the service role.
    private var serviceHeaders: HTTPHeaders {
        let service = harness.token(role: "service_role")
        var headers = HTTPHeaders()
        headers.add("apikey", service)
        headers.add("Authorization", "Bearer \(service)")
        headers.add("Content-Type", "application/json")
        return headers
    }

    /// The target conversation's message rows, counted by the server (`Prefer: count=exact`).
    func targetCount() async throws -> Int {
        var headers = serviceHeaders
        headers.add("Prefer", "count=exact")
        let url = URL(string: "\(supabaseURL.absoluteString)/rest/v1/messages?select=id&conversation_id=eq.\(room.rawValue)&limit=1")!
        let response = try await HTTPClient().send(HTTPRequest(method: .get, url: url, headers: headers))
        guard response.isSuccess, let range = response.headers["Content-Range"], let total = range.split(separator: "/").last.flatMap({ Int($0) }) else {
            throw SwitchboardError(.transport, "count failed: HTTP \(response.status) \(response.headers["Content-Range"] ?? "no Content-Range")")
        }
        return total
    }

    /// Every target row ID (the keys), read with the service role in pages of 1,000.
    func targetKeys() async throws -> [String] {
        var keys: [String] = []
        while true {
            let url = URL(string: "\(supabaseURL.absoluteString)/rest/v1/messages?select=id&conversation_id=eq.\(room.rawValue)"
                          + "&order=id.asc&limit=1000&offset=\(keys.count)")!
            let response = try await HTTPClient().send(HTTPRequest(method: .get, url: url, headers: serviceHeaders))
            let rows = JSONValue.parseOrNil(response.body)?.arrayValue ?? []
            keys += rows.compactMap { $0["id"]?.stringValue }
            if rows.count < 1000 { return keys }
        }
    }

    /// Rewrites a row's text with the service role.
    func tamper(rowID: String, text: String) async throws {
        let url = URL(string: "\(supabaseURL.absoluteString)/rest/v1/messages?id=eq.\(rowID)")!
        let body: JSONValue = ["body": .string(text)]
        let response = try await HTTPClient().send(HTTPRequest(method: .patch, url: url, headers: serviceHeaders,
                                                               body: Data(body.serialized.utf8)))
        guard response.isSuccess else { throw SwitchboardError(.transport, "tamper failed: HTTP \(response.status)") }
    }
}
