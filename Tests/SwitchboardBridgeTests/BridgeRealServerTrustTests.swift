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

/// Issue 27's findings against the real reference servers, with the bridge in-process between a Socket-style room
/// and a Supabase-like conversation (and an XMTP-like group): honest users whose keys repeat, a key reused across
/// pairs, a row that pre-empts a copy's key, and members who post under a bridged message's key. Each case stopped
/// a pair or rewrote a copy before the key trust rule.
@Suite("Bridge against the reference servers: keys are claims, not proof", .serialized, .postgresCluster)
struct BridgeRealServerTrustTests {
    /// Issue 27 §2: `clientMessageId` is unique per conversation and sender, so honest counters repeat across senders.
    @Test("two honest Socket-style users who both number their messages 1, 2, 3: all six cross once, each as its own")
    func perSenderCounters() async throws {
        try await TrustServers.with { servers in
            let erin = servers.user("erin"), finn = servers.user("finn")
            let room = try await servers.socketRoom(members: [erin, finn])
            let conversation = try await servers.supabaseConversation()
            let bridge = try await servers.bridge(room: room, conversation: conversation)
            var sent: [RemoteID: (sender: UserID, text: String)] = [:]
            for number in 1...3 {
                for user in [erin, finn] {
                    let text = "\(user.rawValue.prefix(4)) says \(number)"
                    let remote = try await send(servers.socketAdapter(user), text, in: room, key: MessageID(String(number)))
                    sent[remote] = (user, text)
                }
            }
            let stats = try await bridge.catchUp()
            var copies = try await servers.copies(in: conversation, of: "socketio")
            #expect(copies.count == 6, "\(copies.mapValues(\.text))")
            for (remote, original) in sent {
                #expect(copies[remote]?.text == original.text, "\(original.text) crossed as '\(copies[remote]?.text ?? "nothing")'")
                #expect(copies[remote]?.metadata["bridge.sender"] == original.sender.rawValue)
            }
            #expect(Set(copies.values.map(\.remoteID)).count == 6, "six rows, not fewer")
            #expect(stats.messagesAToB == 6 && stats.quarantined == 0)
            #expect(stats.keyCollisions == 0, "two senders' 1 are two keys: nothing collides")

            // Erin edits her 2: only its copy changes, finn's 2 stays.
            let erins2 = try #require(sent.first { $0.value.sender == erin && $0.value.text.hasSuffix(" 2") }?.key)
            let finns2 = try #require(sent.first { $0.value.sender == finn && $0.value.text.hasSuffix(" 2") })
            try await servers.socketAdapter(erin).edit(erins2, in: room, text: "erin's 2, edited")
            try await bridge.catchUp()
            copies = try await servers.copies(in: conversation, of: "socketio")
            #expect(copies[erins2]?.text == "erin's 2, edited")
            #expect(copies[finns2.key]?.text == finns2.value.text)
        }
    }

    /// Issue 27 §2: a key reused by its own sender in another bridged conversation is a message of that conversation.
    @Test("one user reusing a key in two bridged rooms (two pairs, one store): both messages cross, each into its own pair")
    func keyReusedAcrossPairs() async throws {
        try await TrustServers.with { servers in
            let erin = servers.user("erin")
            let rooms = [try await servers.socketRoom(members: [erin]), try await servers.socketRoom(members: [erin])]
            let conversations = [try await servers.supabaseConversation(), try await servers.supabaseConversation()]
            let bridges = [try await servers.bridge(room: rooms[0], conversation: conversations[0]),
                           try await servers.bridge(room: rooms[1], conversation: conversations[1])]
            let erinAdapter = try await servers.socketAdapter(erin)
            let key = MessageID.make()
            var sent: [[RemoteID]] = [[], []]
            for pair in 0..<2 {
                sent[pair].append(try await send(erinAdapter, "uuid key in room \(pair)", in: rooms[pair], key: key))
                sent[pair].append(try await send(erinAdapter, "counter key in room \(pair)", in: rooms[pair], key: "7"))
            }
            var stats = [try await bridges[0].catchUp(), try await bridges[1].catchUp()]
            for pair in 0..<2 {
                let copies = try await servers.copies(in: conversations[pair], of: "socketio")
                #expect(copies.count == 2, "pair \(pair): \(copies.mapValues(\.text))")
                #expect(copies[sent[pair][0]]?.text == "uuid key in room \(pair)")
                #expect(copies[sent[pair][1]]?.text == "counter key in room \(pair)")
                #expect(stats[pair].quarantined == 0)
            }
            #expect(stats[1].keyCollisions >= 1, "the UUID key already names the first room's message: counted")

            // Erin edits the second room's message and deletes the first's: each copy follows its own original only.
            try await erinAdapter.edit(sent[1][0], in: rooms[1], text: "uuid key in room 1, edited")
            try await erinAdapter.delete(sent[0][0], in: rooms[0])
            stats = [try await bridges[1].catchUp(), try await bridges[0].catchUp()]
            let first = try await servers.copies(in: conversations[0], of: "socketio")
            let second = try await servers.copies(in: conversations[1], of: "socketio")
            #expect(first[sent[0][0]]?.deletedAt != nil, "the first room's delete crossed")
            #expect(second[sent[1][0]]?.text == "uuid key in room 1, edited")
            #expect(second[sent[1][0]]?.deletedAt == nil, "the first room's delete did not touch the second room's copy")
            #expect(first[sent[0][1]]?.text == "counter key in room 0")
        }
    }

    /// Issue 27 §2: a row inserted ahead of a lagging bridge under the key a copy is about to take, with either side
    /// read first.
    @Test("a Supabase-like row inserted under the key a Socket-style message is about to cross under: both are accounted for, the pair goes on",
          arguments: [true, false])
    func preemptedKey(supabaseReadFirst: Bool) async throws {
        try await TrustServers.with { servers in
            let erin = servers.user("erin"), carol = servers.user("carol")
            let room = try await servers.socketRoom(members: [erin])
            let conversation = try await servers.supabaseConversation(members: [carol])
            let log = CollectingLogHandler()
            let bridge = try await servers.bridge(room: room, conversation: conversation, supabaseFirst: supabaseReadFirst, log: log)
            // The bridge lags: erin's message waits to cross under its key, and carol inserts a row under it first.
            let key = MessageID.make()
            let erins = try await send(servers.socketAdapter(erin), "erin's message", in: room, key: key)
            let carols = try await send(servers.supabaseAdapter(carol), "carol's pre-emption", in: conversation, key: key)
            #expect(carols.rawValue == key.rawValue)
            let stats = try await bridge.catchUp()

            let inSupabase = try await servers.supabaseAdapter(carol).allMessages(in: conversation)
            #expect(inSupabase.first { $0.remoteID == carols }?.text == "carol's pre-emption", "carol's row is untouched")
            #expect(inSupabase.first { $0.remoteID == carols }?.sender == carol)
            let held = try await BridgeQuarantine(store: servers.store, a: room, b: conversation).entries()
            #expect(stats.keyCollisions >= 1, "the collision is counted")
            if supabaseReadFirst {
                // Carol's row took the key; erin's message crosses apart, under an ID of its own.
                let copies = try await servers.copies(in: conversation, of: "socketio")
                #expect(copies[erins]?.text == "erin's message")
                #expect(copies[erins].map { $0.remoteID != carols } == true, "erin's copy is a row of its own")
                #expect(held.isEmpty)
                #expect(try await servers.copies(in: room, of: "supabase", as: erin)[carols]?.text == "carol's pre-emption")
            } else {
                // Erin's message took the key first; the Supabase-like server refuses its copy (the row is carol's), so
                // it is held with that reason; carol's row is a message of its own and crosses apart.
                #expect(held.map(\.remoteID) == [erins])
                #expect(held.first?.reason.contains("taken by another sender") == true, "\(held.first?.reason ?? "")")
                let crossed = try await servers.copies(in: room, of: "supabase", as: erin)
                #expect(crossed[carols]?.text == "carol's pre-emption", "carol's row crossed apart")
            }

            // The pair goes on, both ways.
            let later = try await send(servers.socketAdapter(erin), "erin, later", in: room, key: .make())
            let carolsLater = try await send(servers.supabaseAdapter(carol), "carol, later", in: conversation, key: .make())
            let after = try await bridge.catchUp()
            #expect(try await servers.copies(in: conversation, of: "socketio")[later]?.text == "erin, later")
            #expect(try await servers.copies(in: room, of: "supabase", as: erin)[carolsLater]?.text == "carol, later")
            #expect(after.lastError == nil)
        }
    }

    /// Issue 27 §1–2: a member reusing the key of a message bridged either way (as is and upper-cased), then editing
    /// and deleting those messages.
    @Test("a Socket-style member posting under a bridged message's key (as is and upper-cased): the pair goes on, the victims' copies stay")
    func poisonKeys() async throws {
        try await TrustServers.with { servers in
            let erin = servers.user("erin"), mallory = servers.user("mallory"), carol = servers.user("carol")
            let room = try await servers.socketRoom(members: [erin, mallory])
            let conversation = try await servers.supabaseConversation(members: [carol])
            let bridge = try await servers.bridge(room: room, conversation: conversation)
            let carolsKey = MessageID.make(), erinsKey = MessageID.make()
            let carols = try await send(servers.supabaseAdapter(carol), "carol's words", in: conversation, key: carolsKey)
            let erins = try await send(servers.socketAdapter(erin), "erin's words", in: room, key: erinsKey)
            try await bridge.catchUp()
            let carolsCopy = try #require(try await servers.copies(in: room, of: "supabase", as: erin)[carols])
            #expect(carolsCopy.idempotencyKey == carolsKey, "the copy in the room carries carol's key")
            #expect(try await servers.copies(in: conversation, of: "socketio")[erins]?.remoteID.rawValue == erinsKey.rawValue)

            // Mallory posts under both victims' keys, edits two of those messages and deletes one.
            let mallorys = try await servers.socketAdapter(mallory)
            let asCarol = try await send(mallorys, "mallory as carol", in: room, key: carolsKey)
            let upperCase = MessageID(carolsKey.rawValue.uppercased())
            let asCarolUpper = try await send(mallorys, "mallory as carol, upper case", in: room, key: upperCase)
            let asErin = try await send(mallorys, "mallory as erin", in: room, key: erinsKey)
            var stats = try await bridge.catchUp()
            try await mallorys.edit(asCarol, in: room, text: "mallory's edit")
            try await mallorys.edit(asErin, in: room, text: "mallory's other edit")
            try await mallorys.delete(asCarolUpper, in: room)
            stats = try await bridge.catchUp()

            let inSupabase = try await servers.supabaseAdapter(carol).allMessages(in: conversation)
            let byID = Dictionary(inSupabase.map { ($0.remoteID, $0) }, uniquingKeysWith: { first, _ in first })
            #expect(byID[carols]?.text == "carol's words" && byID[carols]?.deletedAt == nil, "carol's own row is untouched")
            #expect(byID[RemoteID(erinsKey.rawValue)]?.text == "erin's words", "erin's copy is untouched")
            #expect(byID[RemoteID(erinsKey.rawValue)]?.deletedAt == nil)
            let inRoom = try await servers.copies(in: room, of: "supabase", as: erin)
            #expect(inRoom[carols]?.text == "carol's words" && inRoom[carols]?.deletedAt == nil,
                    "carol's copy in the room is untouched")
            // Mallory's messages crossed apart, as the separate messages they are, and her changes followed them.
            let copies = try await servers.copies(in: conversation, of: "socketio")
            #expect(copies[asCarol]?.text == "mallory's edit")
            #expect(copies[asErin]?.text == "mallory's other edit")
            #expect(copies[asCarolUpper]?.deletedAt != nil, "the deleted one crossed and is deleted")
            let theirRows = Set([asCarol, asErin].compactMap { copies[$0]?.remoteID })
            #expect(theirRows.count == 2 && theirRows.isDisjoint(with: [carols, RemoteID(erinsKey.rawValue)]))
            #expect(stats.keyCollisions >= 3, "each of mallory's keys is counted as a collision")
            #expect(stats.quarantined == 0, "nothing is refused: the pair goes on")

            let after = try await send(servers.socketAdapter(erin), "erin, after the poison", in: room, key: .make())
            try await bridge.catchUp()
            #expect(try await servers.copies(in: conversation, of: "socketio")[after]?.text == "erin, after the poison")
        }
    }

    /// Issue 27 §1–2: the same with a key forged in an XMTP-like envelope.
    @Test("an XMTP-like member forging the key of a bridged message (as is and upper-cased): crosses apart, the victim's copy stays")
    func forgedXMTPKey() async throws {
        try await TrustServers.with { servers in
            let xmtp = try await XMTPBridgeSide.start(root: servers.root, suffix: servers.suffix)
            try await withCleanup {
                let carol = servers.user("carol")
                let conversation = try await servers.supabaseConversation(members: [carol])
                let secret = xmtp.secret
                let bridgeAdapter = try XMTPAdapter(configuration: XMTPAdapter.Configuration(
                    baseURL: xmtp.nodeURL, inboxID: xmtp.bridgeInbox, token: xmtp.tokens[xmtp.bridgeInbox] ?? "",
                    databasePath: servers.root.appendingPathComponent("bridge-xmtp.sqlite").path, groupSecret: { _ in secret }))
                let supabaseSide = BridgeSide(name: "supabase", adapter: servers.bridgeSupabaseAdapter(), conversation: conversation)
                let bridge = try await Bridge(a: BridgeSide(name: "xmtp", adapter: bridgeAdapter, conversation: xmtp.conversation),
                                        b: supabaseSide, store: servers.store)
                let carolsKey = MessageID.make()
                let carols = try await send(servers.supabaseAdapter(carol), "carol's words", in: conversation, key: carolsKey)
                try await bridge.catchUp()
                let dave = try xmtp.daveAdapter(database: "dave.sqlite")
                let inGroup = try await dave.allMessages(in: xmtp.conversation)
                let victimCopy = try #require(inGroup.first { $0.idempotencyKey == carolsKey })
                #expect(victimCopy.sender == xmtp.bridgeInbox && victimCopy.text == "carol's words")

                // Dave forges carol's key twice, edits one forgery and deletes the other.
                let forged = try await send(dave, "dave as carol", in: xmtp.conversation, key: carolsKey)
                let forgedUpper = try await send(dave, "dave as carol, upper case", in: xmtp.conversation,
                                                 key: MessageID(carolsKey.rawValue.uppercased()))
                try await bridge.catchUp()
                try await dave.edit(forged, in: xmtp.conversation, text: "dave's edit")
                try await dave.delete(forgedUpper, in: xmtp.conversation)
                let stats = try await bridge.catchUp()

                let inSupabase = try await servers.supabaseAdapter(carol).allMessages(in: conversation)
                #expect(inSupabase.first { $0.remoteID == carols }?.text == "carol's words", "carol's row is untouched")
                let copies = try await servers.copies(in: conversation, of: "xmtp")
                #expect(copies[forged]?.text == "dave's edit", "the forgery crossed apart, with its own edit")
                #expect(copies[forged].map { $0.remoteID != carols } == true)
                #expect(copies[forgedUpper]?.deletedAt != nil, "the other forgery crossed apart and is deleted")
                let reader = try xmtp.daveAdapter(database: "reader.sqlite")
                let copyNow = try await reader.allMessages(in: xmtp.conversation).first { $0.remoteID == victimCopy.remoteID }
                #expect(copyNow?.text == "carol's words" && copyNow?.deletedAt == nil, "carol's copy in the group is untouched")
                #expect(stats.keyCollisions >= 2)
                #expect(stats.quarantined == 0)
            } cleanup: {
                await xmtp.stop()
            }
        }
    }

    /// Issue 27 §4: keys a Supabase-like member may set that the Socket-style side cannot carry as a
    /// `clientMessageId` (too long in UTF-8 bytes or characters, a control character, empty).
    @Test("keys the Socket-style side cannot carry: every message crosses under a key it can, edits follow, the pair goes on")
    func uncarriableKeys() async throws {
        try await TrustServers.with { servers in
            let erin = servers.user("erin"), carol = servers.user("carol")
            let room = try await servers.socketRoom(members: [erin])
            let conversation = try await servers.supabaseConversation(members: [carol])
            let bridge = try await servers.bridge(room: room, conversation: conversation)
            let keys = [String(repeating: "é", count: 100), "bell\u{7}key", String(repeating: "k", count: 129), ""]
            var sent: [RemoteID: String] = [:]
            for (index, key) in keys.enumerated() {
                let text = "carol's message \(index)"
                sent[try await send(servers.supabaseAdapter(carol), text, in: conversation, key: MessageID(key))] = text
            }
            let stats = try await bridge.catchUp()
            #expect(stats.messagesBToA == keys.count && stats.quarantined == 0 && stats.lastError == nil, "\(stats)")
            var copies = try await servers.copies(in: room, of: "supabase", as: erin)
            #expect(copies.mapValues(\.text) == sent, "each crossed once: \(copies.mapValues(\.text))")
            for copy in copies.values {
                let key = try #require(copy.idempotencyKey?.rawValue)
                #expect(UUIDText.canonical(key) == key, "the copy's key is a UUID the room takes: \(key)")
            }
            let first = try #require(sent.first { $0.value == "carol's message 0" }?.key)
            try await servers.supabaseAdapter(carol).edit(first, in: conversation, text: "carol's message 0, edited")
            try await bridge.catchUp()
            copies = try await servers.copies(in: room, of: "supabase", as: erin)
            #expect(copies[first]?.text == "carol's message 0, edited")
            #expect(copies.count == keys.count, "a second pass adds nothing")
        }
    }

    /// Issue 27 §3: a Socket-style member's message whose metadata claims the key of a Supabase-like message.
    @Test("metadata smuggling a victim's key: the copy claims nothing, the victim's message stays, the pair goes on")
    func smuggledMetadata() async throws {
        try await TrustServers.with { servers in
            let erin = servers.user("erin"), carol = servers.user("carol")
            let room = try await servers.socketRoom(members: [erin])
            let conversation = try await servers.supabaseConversation(members: [carol])
            let bridge = try await servers.bridge(room: room, conversation: conversation)
            let victimKey = MessageID.make()
            let carols = try await send(servers.supabaseAdapter(carol), "carol's words", in: conversation, key: victimKey)
            try await bridge.catchUp()
            let erinAdapter = try await servers.socketAdapter(erin)
            let smuggled = OutgoingMessage(id: .make(), conversation: room, sender: erin, text: "erin's smuggle",
                                           metadata: ["switchboard.key": victimKey.rawValue, "bridge.origin": "supabase:\(carols)",
                                                      "mood": "sly"],
                                           createdAt: Date())
            let erins = try #require(try await erinAdapter.publish(try await erinAdapter.prepare(smuggled, noSend: false)).remoteID)
            var stats = try await bridge.catchUp()
            let copy = try #require(try await servers.copies(in: conversation, of: "socketio")[erins])
            #expect(copy.text == "erin's smuggle" && copy.remoteID != carols)
            #expect(copy.metadata["switchboard.key"] == nil && copy.metadata["mood"] == "sly", "\(copy.metadata)")
            #expect(copy.idempotencyKey != victimKey, "the copy claims no key of carol's")
            // Every Supabase-side reader resolves carol's message and erin's copy apart; erin's edit touches only hers.
            try await erinAdapter.edit(erins, in: room, text: "erin's smuggle, edited")
            stats = try await bridge.catchUp()
            let rows = try await servers.supabaseAdapter(carol).allMessages(in: conversation)
            #expect(rows.first { $0.remoteID == carols }?.text == "carol's words")
            #expect(rows.first { $0.remoteID == copy.remoteID }?.text == "erin's smuggle, edited")
            #expect(rows.filter { $0.idempotencyKey == victimKey }.map(\.remoteID) == [carols], "one row claims carol's key")
            #expect(stats.lastError == nil && stats.quarantined == 0, "\(stats)")
        }
    }
}

/// Publishes `text` as the adapter's user under `key`; returns its backend ID.
@discardableResult
private func send(_ adapter: any ChatAdapter, _ text: String, in conversation: ConversationID,
                  key: MessageID) async throws -> RemoteID {
    let outgoing = OutgoingMessage(id: key, conversation: conversation, sender: adapter.localUser, text: text, createdAt: Date())
    let prepared = try await adapter.prepare(outgoing, noSend: false)
    let receipt = try await adapter.publish(prepared)
    return try #require(receipt.remoteID ?? prepared.remoteID)
}

/// The Supabase-like server (on a fresh database of the suite's cluster) and the Socket-style server in-process, the
/// bridge's accounts on both, and the bridge store: what each test of `BridgeRealServerTrustTests` starts from.
private final class TrustServers: Sendable {
    /// The temporary folder of the servers' data and the store.
    let root: URL
    /// A suffix making user names unique to the test.
    let suffix: String
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
    /// Registration and rooms on it.
    let socketHarness: SocketIOHarness
    /// The bridge's Socket-style account.
    let socketBridge: UserID
    /// The store the test's bridges share.
    let store: SQLiteStore
    /// Bearer tokens of the Socket-style users registered so far.
    private let socketTokens = Locked<[UserID: String]>([:])
    /// How many rooms were created.
    private let rooms = Locked(0)

    /// Starts both servers, runs `body` with them, then stops them and removes the folder.
    static func with(_ body: (TrustServers) async throws -> Void) async throws {
        let cluster = try PostgresTestCluster.required()
        let servers = try await start(databaseURL: try cluster.freshDatabase())
        try await withCleanup { try await body(servers) } cleanup: { await servers.stop() }
    }

    /// Starts both servers and registers the bridge's Socket-style account.
    private static func start(databaseURL: String) async throws -> TrustServers {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("switchboard-trust-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        var configuration = SupabaseServerConfiguration(dataDirectory: root.appendingPathComponent("supabase"),
                                                        jwtSecret: BridgeServers.jwtSecret)
        configuration.databaseURL = databaseURL
        let supabase = SupabaseServer(configuration: configuration)
        let socket = SocketIOServer(configuration: SocketIOServerConfiguration(dataDirectory: root.appendingPathComponent("socketio")))
        do {
            let supabaseURL = URL(string: "http://127.0.0.1:\(try await supabase.start())")!
            let socketURL = URL(string: "http://127.0.0.1:\(try await socket.start())")!
            let suffix = String(UUID().uuidString.prefix(8).lowercased())
            let socketHarness = SocketIOHarness(baseURL: socketURL)
            let socketBridge = UserID("bridge-\(suffix)")
            let bridgeToken = try await socketHarness.register(socketBridge)
            let store = try SQLiteStore(path: root.appendingPathComponent("bridge.sqlite").path)
            let servers = TrustServers(root: root, suffix: suffix, supabase: supabase,
                                       harness: SupabaseHarness(baseURL: supabaseURL, jwtSecret: BridgeServers.jwtSecret),
                                       supabaseURL: supabaseURL, socket: socket, socketURL: socketURL, socketHarness: socketHarness,
                                       socketBridge: socketBridge, store: store)
            servers.socketTokens.withLock { $0[socketBridge] = bridgeToken }
            return servers
        } catch {
            await socket.stop()
            await supabase.stop()
            try? FileManager.default.removeItem(at: root)
            throw error
        }
    }

    /// Stores the parts.
    private init(root: URL, suffix: String, supabase: SupabaseServer, harness: SupabaseHarness, supabaseURL: URL,
                 socket: SocketIOServer, socketURL: URL, socketHarness: SocketIOHarness, socketBridge: UserID, store: SQLiteStore) {
        self.root = root
        self.suffix = suffix
        self.supabase = supabase
        self.harness = harness
        self.supabaseURL = supabaseURL
        self.socket = socket
        self.socketURL = socketURL
        self.socketHarness = socketHarness
        self.socketBridge = socketBridge
        self.store = store
    }

    /// Closes the store, stops both servers and removes the folder.
    func stop() async {
        store.close()
        await socket.stop()
        await supabase.stop()
        try? FileManager.default.removeItem(at: root)
    }

    /// A user name unique to this test.
    func user(_ name: String) -> UserID { UserID("\(name)-\(suffix)") }

    /// A new Socket-style room of `members` and the bridge (created by the first member).
    func socketRoom(members: [UserID]) async throws -> ConversationID {
        let number = rooms.withLock { count in
            count += 1
            return count
        }
        let room = ConversationID("room-\(suffix)-\(number)")
        let creator = try #require(members.first)
        for member in members { _ = try await socketAdapter(member) }
        try await socketHarness.createConversation(room, members: members + [socketBridge], token: token(of: creator))
        return room
    }

    /// A new Supabase-like conversation of `members` and the bridge's account `bridge`.
    func supabaseConversation(members: [UserID] = []) async throws -> ConversationID {
        try await harness.createConversation(title: "trust", members: ["bridge"] + members)
    }

    /// `user`'s Socket-style adapter (registered on first use).
    func socketAdapter(_ user: UserID) async throws -> SocketIOAdapter {
        if socketTokens.withLock({ $0[user] }) == nil {
            let fresh = try await socketHarness.register(user)
            socketTokens.withLock { $0[user] = fresh }
        }
        let configuration = SocketIOAdapter.Configuration(baseURL: socketURL, token: token(of: user), localUser: user)
        return SocketIOAdapter(configuration: configuration)
    }

    /// `user`'s Supabase-like adapter.
    func supabaseAdapter(_ user: UserID) -> SupabaseAdapter {
        SupabaseAdapter(configuration: SupabaseAdapter.Configuration(
            baseURL: supabaseURL, apiKey: harness.token(role: "anon"),
            accessToken: harness.token(role: "authenticated", sub: user.rawValue), localUser: user))
    }

    /// The bridge's Supabase-like adapter (account `bridge`).
    func bridgeSupabaseAdapter() -> SupabaseAdapter { supabaseAdapter("bridge") }

    /// A bridge between `room` and `conversation` on the shared store: the room is side a (read first in each pass)
    /// unless `supabaseFirst`.
    func bridge(room: ConversationID, conversation: ConversationID, supabaseFirst: Bool = false,
                log: CollectingLogHandler = CollectingLogHandler()) async throws -> Bridge {
        var configuration = BridgeConfiguration()
        configuration.logger = log.logger(label: "bridge")
        let socketSide = BridgeSide(name: "socketio", adapter: try await socketAdapter(socketBridge), conversation: room)
        let supabaseSide = BridgeSide(name: "supabase", adapter: bridgeSupabaseAdapter(), conversation: conversation)
        return try await supabaseFirst
            ? Bridge(a: supabaseSide, b: socketSide, store: store, configuration: configuration)
            : Bridge(a: socketSide, b: supabaseSide, store: store, configuration: configuration)
    }

    /// The bridge's copies in Supabase-like `conversation` of messages from backend `source`, by source backend ID
    /// (from `bridge.origin`).
    func copies(in conversation: ConversationID, of source: String) async throws -> [RemoteID: RemoteMessage] {
        try await Self.copies(in: try await supabaseAdapter("bridge").allMessages(in: conversation), of: source)
    }

    /// The bridge's copies in Socket-style `room` of messages from backend `source`, read as `reader`.
    func copies(in room: ConversationID, of source: String, as reader: UserID) async throws -> [RemoteID: RemoteMessage] {
        try await Self.copies(in: try await socketAdapter(reader).allMessages(in: room), of: source)
    }

    /// The messages among `messages` whose `bridge.origin` names backend `source`, by the origin's backend ID.
    private static func copies(in messages: [RemoteMessage], of source: String) async throws -> [RemoteID: RemoteMessage] {
        var copies: [RemoteID: RemoteMessage] = [:]
        for message in messages {
            guard let origin = message.metadata["bridge.origin"], origin.hasPrefix(source + ":") else { continue }
            let remote = RemoteID(String(origin.dropFirst(source.count + 1)))
            #expect(copies[remote] == nil, "two copies of \(source) message \(remote)")
            copies[remote] = message
        }
        return copies
    }

    /// `user`'s Socket-style token.
    private func token(of user: UserID) -> String {
        socketTokens.withLock { $0[user] } ?? ""
    }
}
