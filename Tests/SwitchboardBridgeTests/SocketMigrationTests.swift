import Foundation
import SocketIOAdapter
import SwitchboardCore
import TestSupport
import Testing
import XMTPAdapter

#if canImport(Glibc)
import Glibc
#endif

/// `switchboard migrate` with the Socket-style backend as either side (the issue: "the bridge and migrator accept
/// it as either side"): socketio → xmtp with an interrupted and resumed run, then xmtp → socketio.
@Suite("switchboard migrate between the Socket-style server and the XMTP-like node", .serialized)
struct SocketMigrationTests {
    /// Messages seeded on the Socket-style side for socketio → xmtp.
    static let socketCount = 500
    /// Messages seeded on the XMTP side for xmtp → socketio.
    static let xmtpCount = 50

    /// socketio → xmtp on fresh servers: seed, kill, resume, check the copies, re-run and verify.
    @Test("socketio → xmtp: 500 messages (edits, a delete, replies), SIGKILLed and resumed, re-run copies 0, --verify clean")
    func socketToXMTP() async throws {
        let servers = try await SocketBridgeServers.start()
        let migration = SocketMigrationRun(servers: servers, fromSocket: true)
        try await withCleanup { try await exerciseSocketToXMTP(migration) } cleanup: {
            await migration.children.killAll()
            await servers.stop()
        }
    }

    /// The body of `socketToXMTP` (the caller kills the children and stops the servers).
    private func exerciseSocketToXMTP(_ migration: SocketMigrationRun) async throws {
        let servers = migration.servers
        let started = ContinuousClock.now
        let count = Self.socketCount
        // Every 50th message (30, 80, …) replies to the one 7 before it; five plain messages are edited, so are a
        // reply (180) and a replied-to message after its reply was sent (373, replied to by 380); 250 is deleted.
        var replies: [Int: Int] = [:]
        for index in stride(from: 30, to: count, by: 50) { replies[index] = index - 7 }
        var edits: [Int: Int] = [190: 180, 400: 373]
        for index in stride(from: 60, to: count, by: 100) { edits[index] = index - 5 }
        let seeded = try await seedHistory(servers.erinAdapter(), in: servers.socketConversation, label: "socket",
                                           count: count, replies: replies, edits: edits, deletions: [260: 250])
        let seededAt = ContinuousClock.now
        let live = count - seeded.deleted.count

        // 1. SIGKILL the child once its plain progress passed 150 messages.
        let killedAt = try await migration.runAndKill(afterProcessed: 150)
        let afterKill = try await migration.xmtpContents().copiesByKey
        #expect(afterKill.count > 0 && afterKill.count < live, "after the SIGKILL xmtp holds \(afterKill.count)")
        #expect(afterKill.allSatisfy { $0.value.count == 1 }, "after the SIGKILL a message is on xmtp twice")
        let killedDone = ContinuousClock.now

        // 2. Resume to the end: every live message is copied now or was by the killed run; the deleted one is skipped.
        let resumed = try await migration.runJSON([])
        let report = resumed["migration"]
        let copied = Int(report?["copied"]?.intValue ?? -1), present = Int(report?["alreadyPresent"]?.intValue ?? -1)
        #expect(report?["status"]?.stringValue == "completed", "\(resumed.serialized)")
        #expect(copied + present == live, "resume: \(copied) copied + \(present) already present, expected \(live)")
        #expect(copied >= live - afterKill.count && present <= afterKill.count,
                "resume: \(copied) copied, \(present) already present; xmtp held \(afterKill.count) after the kill")
        #expect(report?["skippedDeleted"]?.intValue == 1 && report?["failed"]?.intValue == 0, "\(resumed.serialized)")
        #expect(report?["total"]?.intValue == Int64(count), "\(resumed.serialized)")
        let resumedDone = ContinuousClock.now

        // 3. The XMTP side, through a fresh adapter: each live message once, its final text, the replies linked.
        //    The Socket-style change feed orders by `version`, which an edit bumps, so the edited 373 is read after
        //    its reply 380: the reply waits for 373's copy and then links to it.
        let xmtp = try await migration.xmtpContents()
        expectCopies(xmtp, of: seeded, side: "xmtp", bridge: servers.xmtp.bridgeInbox, sender: servers.erin)

        // 4. Run again with --verify: nothing copied, all present, the deleted one skipped, verification clean.
        let again = try await migration.runJSON(["--verify"])
        #expect(again["migration"]?["copied"]?.intValue == 0, "\(again.serialized)")
        #expect(again["migration"]?["alreadyPresent"]?.intValue == Int64(live), "\(again.serialized)")
        #expect(again["migration"]?["skippedDeleted"]?.intValue == 1, "\(again.serialized)")
        let verification = again["verification"]
        #expect(verification?["clean"]?.boolValue == true, "verification: \(verification?.serialized ?? "none")")
        #expect(verification?["matched"]?.intValue == Int64(live) && verification?["sourceDeleted"]?.intValue == 1
                && verification?["targetMessages"]?.intValue == Int64(live), "verification: \(verification?.serialized ?? "none")")
        expectEachOnce(try await migration.xmtpContents(), name: "xmtp after the re-run", sent: seeded.live)

        print("""
            socket migration socketio → xmtp: seeded \(count) (\(edits.count) edited, \
            \(replies.count) replies, 1 deleted) in \(seededAt - started); killed at '\(killedAt)' with \
            \(afterKill.count) on xmtp after \(killedDone - seededAt); resume copied \(copied) (\(present) already present) \
            in \(resumedDone - killedDone); re-run + verify \(ContinuousClock.now - resumedDone); total \
            \(ContinuousClock.now - started)
            """)
    }

    /// xmtp → socketio on fresh servers: seed, migrate and verify once, check the copies, re-run.
    @Test("xmtp → socketio: 50 messages (an edit, a delete, replies) once, --verify clean, re-run copies 0")
    func xmtpToSocket() async throws {
        let servers = try await SocketBridgeServers.start()
        let migration = SocketMigrationRun(servers: servers, fromSocket: false)
        try await withCleanup { try await exerciseXMTPToSocket(migration) } cleanup: {
            await migration.children.killAll()
            await servers.stop()
        }
    }

    /// The body of `xmtpToSocket` (the caller kills the children and stops the servers).
    private func exerciseXMTPToSocket(_ migration: SocketMigrationRun) async throws {
        let servers = migration.servers
        let started = ContinuousClock.now
        let count = Self.xmtpCount
        let seeded = try await seedHistory(try servers.xmtp.daveAdapter(database: "dave.sqlite"), in: servers.xmtp.conversation,
                                           label: "xmtp", count: count, replies: [30: 23, 45: 10], edits: [40: 35],
                                           deletions: [48: 12])
        let live = count - seeded.deleted.count

        let first = try await migration.runJSON(["--verify"])
        #expect(first["migration"]?["status"]?.stringValue == "completed", "\(first.serialized)")
        #expect(first["migration"]?["copied"]?.intValue == Int64(live), "\(first.serialized)")
        #expect(first["migration"]?["skippedDeleted"]?.intValue == 1, "\(first.serialized)")
        #expect(first["verification"]?["clean"]?.boolValue == true, "\(first.serialized)")
        #expect(first["verification"]?["matched"]?.intValue == Int64(live), "\(first.serialized)")

        let socket = try await SideContents.read(servers.erinAdapter(), in: servers.socketConversation)
        expectCopies(socket, of: seeded, side: "socketio", bridge: servers.socketBridge, sender: servers.xmtp.dave)

        let again = try await migration.runJSON([])
        #expect(again["migration"]?["copied"]?.intValue == 0, "\(again.serialized)")
        #expect(again["migration"]?["alreadyPresent"]?.intValue == Int64(live), "\(again.serialized)")
        expectEachOnce(try await SideContents.read(servers.erinAdapter(), in: servers.socketConversation),
                       name: "socketio after the re-run", sent: seeded.live)
        print("socket migration xmtp → socketio: \(count) seeded, \(live) copied once and verified in \(ContinuousClock.now - started)")
    }
}

/// `switchboard migrate` as a child between the two servers of `SocketBridgeServers`, as their bridge accounts
/// (secrets through the environment), on its own store; remembers every child so all of them die.
struct SocketMigrationRun: Sendable {
    /// The servers, conversations and accounts.
    let servers: SocketBridgeServers
    /// Every child started.
    let children = BridgeChildren()
    /// `migrate --from … --to … --store …`.
    let arguments: [String]
    /// Where the children's standard error goes.
    let log: URL

    /// A migration socketio → xmtp when `fromSocket`, else xmtp → socketio.
    init(servers: SocketBridgeServers, fromSocket: Bool) {
        self.servers = servers
        let socket: JSONValue = .object(["adapter": "socketio", "url": .string(servers.socketURL.absoluteString),
                                         "conversation": .string(servers.socketConversation.rawValue),
                                         "user": .string(servers.socketBridge.rawValue), "token": "env:BRIDGE_TEST_SIO_TOKEN"])
        let xmtp = servers.xmtp.endpoint(database: servers.root.appendingPathComponent("migrate-xmtp.sqlite").path)
        let (from, to) = fromSocket ? (socket, xmtp) : (xmtp, socket)
        arguments = ["--from", from.serialized, "--to", to.serialized,
                     "--store", servers.root.appendingPathComponent("migrate.sqlite").path]
        log = servers.root.appendingPathComponent("migrate.log")
    }

    /// Runs the command to the end with `extra` and `--format json`; expects exit 0 and returns its JSON.
    func runJSON(_ extra: [String]) async throws -> JSONValue {
        let result = try await ChildProcess.runDetached(try SwitchboardExecutable.locate().path,
                                                        ["migrate"] + arguments + extra + ["--format", "json"],
                                                        environment: servers.childEnvironment, timeout: .seconds(120))
        #expect(result.status == 0, "migrate \(extra) exited \(result.status): \(result.stderr.suffix(2000))")
        return try #require(JSONValue.parseOrNil(Data(result.stdout.utf8)), "not JSON: \(result.stdout)")
    }

    /// Starts the command (plain progress lines) and SIGKILLs it once a line shows at least `processed` messages;
    /// returns that line.
    func runAndKill(afterProcessed processed: Int) async throws -> String {
        let child = try children.launch(command: "migrate", arguments: arguments, environment: servers.childEnvironment, log: log)
        let deadline = TestTime.deadline(after: .seconds(60))
        while ContinuousClock.now < deadline, child.process.isRunning {
            if let line = child.output.allLines().first(where: { MigrationWorld.processed(in: $0).map { $0 >= processed } ?? false }) {
                await child.killHard()
                return line
            }
            try await Task.sleep(for: .milliseconds(5))
        }
        await child.killHard()
        throw TestSetupError("the migrate child never reported \(processed) processed; output: \(child.output.allLines())")
    }

    /// The XMTP group read through a fresh adapter of dave's on a fresh database.
    func xmtpContents() async throws -> SideContents {
        try await SideContents.read(try servers.xmtp.daveAdapter(database: "read-\(UUID().uuidString).sqlite"),
                                    in: servers.xmtp.conversation)
    }
}

/// What `seedHistory` sent: every message in order, each one's final text, the deleted ones, each reply's target.
struct SeededHistory: Sendable {
    /// Every message, in order.
    var sent: [SentMessage] = []
    /// The final text of each message.
    var finalText: [MessageID: String] = [:]
    /// The deleted messages.
    var deleted: Set<MessageID> = []
    /// Each reply's key with the key of the message it replies to.
    var replies: [MessageID: MessageID] = [:]

    /// The messages not deleted, in order.
    var live: [SentMessage] { sent.filter { !deleted.contains($0.id) } }
}

/// Sends `count` messages `label i` as the adapter's user: message `i` replies to `replies[i]`; after sending `i`
/// it edits `edits[i]` (appending " (edited)") and deletes `deletions[i]`.
func seedHistory(_ adapter: any EditingAdapter & DeletingAdapter, in conversation: ConversationID, label: String, count: Int,
                 replies: [Int: Int], edits: [Int: Int], deletions: [Int: Int]) async throws -> SeededHistory {
    var seeded = SeededHistory()
    for index in 0..<count {
        let id = MessageID.make()
        let text = "\(label) \(index)"
        let target = replies[index].map { seeded.sent[$0] }
        let outgoing = OutgoingMessage(id: id, conversation: conversation, sender: adapter.localUser, text: text,
                                       replyTo: target?.remote, createdAt: Date())
        let prepared = try await adapter.prepare(outgoing, noSend: false)
        let receipt = try await adapter.publish(prepared)
        guard let remote = receipt.remoteID ?? prepared.remoteID else {
            throw TestSetupError("\(label) \(index) was published without a remote ID")
        }
        seeded.sent.append(SentMessage(id: id, remote: remote, text: text))
        seeded.finalText[id] = text
        if let target { seeded.replies[id] = target.id }
        if let edited = edits[index].map({ seeded.sent[$0] }) {
            try await adapter.edit(edited.remote, in: conversation, text: "\(edited.text) (edited)")
            seeded.finalText[edited.id] = "\(edited.text) (edited)"
        }
        if let gone = deletions[index].map({ seeded.sent[$0] }) {
            try await adapter.delete(gone.remote, in: conversation)
            seeded.deleted.insert(gone.id)
        }
    }
    return seeded
}

/// The target holds each live seeded message once (nothing else), with its final text, sent by `bridge` in
/// `sender`'s name, and each reply points at its target's copy.
func expectCopies(_ contents: SideContents, of seeded: SeededHistory, side: String, bridge: UserID, sender: UserID) {
    expectEachOnce(contents, name: side, sent: seeded.live)
    let copies = Dictionary(contents.messages.compactMap { message in message.idempotencyKey.map { ($0, message) } },
                            uniquingKeysWith: { first, _ in first })
    var wrongText: [String] = [], wrongSender: [String] = []
    for message in seeded.live {
        guard let copy = copies[message.id] else { continue }
        let expected = seeded.finalText[message.id] ?? message.text
        if copy.text != expected { wrongText.append("\(message.id) reads '\(copy.text)', expected '\(expected)'") }
        if copy.sender != bridge || copy.metadata["bridge.sender"] != sender.rawValue {
            wrongSender.append("\(message.id) by \(copy.sender) for \(copy.metadata["bridge.sender"] ?? "nobody")")
        }
    }
    #expect(wrongText.isEmpty, "\(side): \(wrongText.count) copies with the wrong text, e.g. \(wrongText.prefix(3))")
    #expect(wrongSender.isEmpty, "\(side): \(wrongSender.count) copies with the wrong sender, e.g. \(wrongSender.prefix(3))")
    for (reply, target) in seeded.replies.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
        let linked = copies[reply]?.replyTo
        let expected = copies[target]?.remoteID
        let problem = "\(side): the copy of reply \(reply) ('\(copies[reply]?.text ?? "missing")') links "
            + "\(linked.map { "\($0)" } ?? "nothing") (bridge.replyTo \(copies[reply]?.metadata["bridge.replyTo"] ?? "-")), "
            + "expected the copy of '\(copies[target]?.text ?? "missing")' \(expected.map { "\($0)" } ?? "(missing)")"
        #expect(linked != nil && linked == expected, "\(problem)")
    }
    let stray = contents.messages.filter { $0.replyTo != nil && $0.idempotencyKey.map { seeded.replies[$0] == nil } ?? true }
    #expect(stray.isEmpty, "\(side): \(stray.count) copies reply though their original does not, e.g. \(stray.first?.text ?? "")")
}
