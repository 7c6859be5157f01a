import Foundation
import MemoryAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import Testing

/// A bridged member who forges keys cannot act on another party's message, and no message can stop a pair
/// (DESIGN §2; each case below overwrote a victim's copy or stopped a pair before the key trust rule).
@Suite("Bridge: keys are claims, not proof")
struct BridgeTrustTests {
    /// One store serving two pairs: `group` (victim's side) ↔ `A` on `hub`, and `room` (attacker's side) ↔ `B` on
    /// `hub`, or on a backend of its own (`otherHub`).
    struct TwoPairs {
        let group: MemoryBackend
        let hub: MemoryBackend
        let room: MemoryBackend
        let otherHub: MemoryBackend
        let store: SQLiteStore
        let directory: URL
        let log = CollectingLogHandler()

        init() throws {
            group = try MemoryBackend(scheme: .contentDerived, backendID: "group-net")
            hub = try MemoryBackend(scheme: .clientAssigned, backendID: "hub-net")
            room = try MemoryBackend(scheme: .serverAssigned, backendID: "room-net")
            otherHub = try MemoryBackend(scheme: .clientAssigned, backendID: "other-hub-net")
            try group.createConversation("g", members: ["victim", "bridge"])
            try hub.createConversation("A", members: ["reader", "bridge"])
            try hub.createConversation("B", members: ["reader", "bridge"])
            try room.createConversation("r", members: ["mallory", "bridge"])
            try otherHub.createConversation("B", members: ["reader", "bridge"])
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("bridge-trust-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            store = try SQLiteStore(path: directory.appendingPathComponent("bridge.sqlite").path)
        }

        var configuration: BridgeConfiguration {
            var configuration = BridgeConfiguration()
            let log = self.log
            configuration.logger = log.logger(label: "bridge")
            return configuration
        }

        /// The victim's pair: group `g` ↔ conversation `A` of the hub.
        func victimPair() async throws -> Bridge {
            try await Bridge(a: BridgeSide(name: "group", adapter: group.makeAdapter(for: "bridge"), conversation: "g"),
                       b: BridgeSide(name: "hub", adapter: hub.makeAdapter(for: "bridge"), conversation: "A"),
                       store: store, configuration: configuration)
        }

        /// The attacker's pair: room `r` ↔ conversation `B` of the hub (or of the other hub).
        func attackerPair(sameHub: Bool) async throws -> Bridge {
            let target = sameHub ? hub : otherHub
            return try await Bridge(a: BridgeSide(name: "room", adapter: room.makeAdapter(for: "bridge"), conversation: "r"),
                              b: BridgeSide(name: "hub", adapter: target.makeAdapter(for: "bridge"), conversation: "B"),
                              store: store, configuration: configuration)
        }

        func remove() {
            store.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    private static func send(_ adapter: MemoryAdapter, _ text: String, in conversation: ConversationID,
                             key: MessageID = .make(), metadata: [String: String] = [:]) async throws -> RemoteID {
        let outgoing = OutgoingMessage(id: key, conversation: conversation, sender: adapter.localUser, text: text,
                                       metadata: metadata, createdAt: Date())
        return try #require(try await adapter.publish(try await adapter.prepare(outgoing, noSend: false)).remoteID)
    }

    @Test("a member of another pair who carries the key of a victim's copy cannot rewrite, edit or delete it",
          arguments: [true, false])
    func crossPairOverwrite(sameHub: Bool) async throws {
        let setup = try TwoPairs()
        defer { setup.remove() }
        let victimPair = try await setup.victimPair(), attackerPair = try await setup.attackerPair(sameHub: sameHub)
        _ = try await Self.send(setup.group.makeAdapter(for: "victim"), "the victim's words", in: "g")
        try await victimPair.catchUp()
        let copy = try #require(try await setup.hub.makeAdapter(for: "reader").allMessages(in: "A").first)
        #expect(copy.text == "the victim's words")
        // The copy's row ID is the victim's MessageID: the attacker posts under it in their own room.
        let key = MessageID(copy.remoteID.rawValue)
        let mallory = setup.room.makeAdapter(for: "mallory")
        let forged = try await Self.send(mallory, "the attacker's words", in: "r", key: key)
        try await attackerPair.catchUp()
        try setup.room.edit(forged, in: "r", text: "the attacker's edit", as: "mallory")
        try await attackerPair.catchUp()
        try setup.room.delete(forged, in: "r", as: "mallory")
        let stats = try await attackerPair.catchUp()
        try await victimPair.catchUp()

        let inA = try await setup.hub.makeAdapter(for: "reader").allMessages(in: "A")
        #expect(inA.map(\.text) == ["the victim's words"], "the victim's copy is untouched")
        #expect(inA.first?.deletedAt == nil)
        let inB = try await (sameHub ? setup.hub : setup.otherHub).makeAdapter(for: "reader").allMessages(in: "B")
        #expect(inB.count == 1, "the attacker's message crossed as the separate message it is")
        #expect(inB.first?.remoteID != copy.remoteID)
        #expect(inB.first?.deletedAt != nil, "and the attacker's delete deleted the attacker's copy")
        #expect(stats.keyCollisions >= 1)
        #expect(setup.log.messages(at: .warning).contains { $0.contains("not theirs to use") }, "the collision is logged")
    }

    @Test("a key pre-empted on the other side before the bridge copies it: both messages are accounted for, the pair goes on")
    func preemptedKeyInsideAPair() async throws {
        let setup = try TwoPairs()
        defer { setup.remove() }
        let bridge = try await setup.attackerPair(sameHub: true)
        let mallory = setup.room.makeAdapter(for: "mallory")
        let reader = setup.hub.makeAdapter(for: "reader")
        // The reader's message is on the hub; before the bridge runs, mallory posts in the room under its key.
        let readerKey = MessageID.make()
        let readers = try await Self.send(reader, "the reader's message", in: "B", key: readerKey)
        let mallorys = try await Self.send(mallory, "mallory's pre-emption", in: "r", key: readerKey)
        _ = try await Self.send(mallory, "an honest message after it", in: "r")
        let stats = try await bridge.catchUp()
        let inB = try await reader.allMessages(in: "B")
        #expect(inB.first { $0.remoteID == readers }?.text == "the reader's message", "nobody's message is rewritten")
        #expect(inB.contains { $0.text == "an honest message after it" }, "the pair went on")
        let inR = try await mallory.allMessages(in: "r")
        #expect(inR.first { $0.remoteID == mallorys }?.text == "mallory's pre-emption")
        #expect(inR.contains { $0.text == "the reader's message" }, "the reader's message crossed, apart")
        // Mallory's message could not take the key on the hub (another sender's): held with that reason, not lost.
        let held = try await BridgeQuarantine(store: setup.store, a: "r", b: "B").entries()
        #expect(held.map(\.remoteID) == [mallorys])
        #expect(held.first?.reason.contains("taken by another sender") == true)
        #expect(stats.quarantined == 1)
        #expect(stats.keyCollisions == 1)
    }

    @Test("reserved metadata (switchboard.*, bridge.*) of a source message is never relayed")
    func reservedMetadataIsDropped() async throws {
        let setup = try TwoPairs()
        defer { setup.remove() }
        let bridge = try await setup.attackerPair(sameHub: true)
        let victimKey = MessageID.make()
        _ = try await Self.send(setup.room.makeAdapter(for: "mallory"), "smuggler", in: "r",
                                metadata: ["switchboard.key": victimKey.rawValue, "bridge.origin": "forged", "mood": "sly"])
        try await bridge.catchUp()
        let copy = try #require(try await setup.hub.makeAdapter(for: "reader").allMessages(in: "B").first)
        #expect(copy.metadata["switchboard.key"] == nil)
        #expect(copy.metadata["mood"] == "sly", "other metadata still crosses")
        #expect(copy.metadata["bridge.origin"]?.hasPrefix("room-net:") == true, "the origin is the bridge's own")
    }

    @Test("a change the target refuses for good is quarantined with its reason; the pair goes on; retry and drop work")
    func quarantine() async throws {
        let setup = try TwoPairs()
        defer { setup.remove() }
        let limits = MemoryWire.Limits(maxTextBytes: 20)
        let strict = try MemoryBackend(scheme: .clientAssigned, limits: limits, backendID: "strict-net")
        try strict.createConversation("S", members: ["reader", "bridge"])
        let bridge = try await Bridge(a: BridgeSide(name: "room", adapter: setup.room.makeAdapter(for: "bridge"), conversation: "r"),
                                b: BridgeSide(name: "strict", adapter: strict.makeAdapter(for: "bridge"), conversation: "S"),
                                store: setup.store, configuration: setup.configuration)
        let mallory = setup.room.makeAdapter(for: "mallory")
        _ = try await Self.send(mallory, "short", in: "r")
        let long = try await Self.send(mallory, String(repeating: "far too long ", count: 4), in: "r")
        _ = try await Self.send(mallory, "after", in: "r")
        let stats = try await bridge.catchUp()
        #expect(try await strict.makeAdapter(for: "reader").allMessages(in: "S").map(\.text) == ["short", "after"])
        #expect(stats.quarantined == 1)
        let quarantine = BridgeQuarantine(store: setup.store, a: "r", b: "S")
        let entries = try await quarantine.entries()
        #expect(entries.count == 1)
        #expect(entries.first?.remoteID == long)
        #expect(entries.first?.reason.contains("contentTooLarge") == true)
        #expect(setup.log.messages(at: .warning).contains { $0.contains("quarantined room message \(long)") })

        // A second pass reads nothing new and holds it once; a retry that fails again holds it again.
        try await bridge.catchUp()
        await #expect(try quarantine.entries().count == 1)
        await #expect(try quarantine.retry(entries[0].id))
        await #expect(try quarantine.entries().first?.retryRequested == true)
        let again = try await bridge.catchUp()
        #expect(again.quarantined == 1)
        await #expect(try quarantine.entries().first?.retryRequested == false)
        // The message is edited to fit: the new version crosses and supersedes the held one.
        try setup.room.edit(long, in: "r", text: "now it fits", as: "mallory")
        let fixed = try await bridge.catchUp()
        #expect(try await strict.makeAdapter(for: "reader").allMessages(in: "S").map(\.text) == ["short", "after", "now it fits"])
        #expect(fixed.quarantined == 0)
        await #expect(try quarantine.entries().isEmpty)
        // Another refused message, dropped by the operator: gone from the quarantine, and never bridged.
        _ = try await Self.send(mallory, String(repeating: "still far too long ", count: 3), in: "r")
        #expect(try await bridge.catchUp().quarantined == 1)
        let dropped = try await #require(try quarantine.entries().first)
        await #expect(try quarantine.drop(dropped.id))
        await #expect(try quarantine.drop(dropped.id) == false, "dropping an entry that is gone says so")
        #expect(try await bridge.catchUp().quarantined == 0)
        #expect(try await strict.makeAdapter(for: "reader").allMessages(in: "S").count == 3)
    }
}
