import Foundation
import MemoryAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import Testing

/// A store written by a bridge from before the per-pair records (ledger rows among the engine's messages,
/// prepared copies in the outbox, cursors under each side's conversation, waiting operations and the quarantine
/// in the engine's queue): a bridge opened on it adopts all of it and finishes what its predecessor started.
@Suite("Bridge adopts the records of older versions")
struct BridgeLegacyRecordsTests {
    /// The quarantine entry as older versions stored it.
    private struct LegacyHeld: Codable {
        var source: BackendID
        var change: RemoteChange
        var reason: String
        var at: Date
    }

    /// The waiting reaction as older versions stored it.
    private struct LegacyReaction: Codable {
        var kind: String
        var symbol: String?
        var isActive: Bool?
    }

    @Test("a pending copy is published once, a waiting reaction applied, cursors, ledger and quarantine carried over")
    func adoptsAndContinues() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        let ledger = ConversationID(Bridge.pairKey(a: "room-left", b: "room-right"))
        let leftBridge = pair.left.makeAdapter(for: "bridge"), rightBridge = pair.right.makeAdapter(for: "bridge")
        var sent: [RemoteID] = []
        for text in ["m1", "m2", "m3"] {
            let prepared = try await pair.alice.prepare(OutgoingMessage(id: .make(), conversation: "room-left", sender: "alice",
                                                                        text: text, createdAt: Date()), noSend: false)
            sent.append(try #require(try await pair.alice.publish(prepared).remoteID))
        }
        let oldBob = try await pair.bob.prepare(OutgoingMessage(id: .make(), conversation: "room-right", sender: "bob",
                                                                text: "old bob", createdAt: Date()), noSend: false)
        _ = try await pair.bob.publish(oldBob)
        let ids = sent.map { _ in MessageID.make() }
        // m1 was copied; m2's copy was prepared and persisted, its publish cut off; m3 was not bridged yet but a
        // reaction on it waits for its copy.
        let copyOfM1 = try await rightBridge.publish(try await rightBridge.prepare(
            OutgoingMessage(id: ids[0], conversation: "room-right", sender: "bridge", text: "m1", createdAt: Date()), noSend: true))
        let preparedM2 = try await rightBridge.prepare(OutgoingMessage(id: ids[1], conversation: "room-right", sender: "bridge",
                                                                       text: "m2", createdAt: Date()), noSend: true)
        let leftAfterM1 = try await leftBridge.changes(in: "room-left", after: nil, limit: 1).cursor
        let rightNow = try await rightBridge.latestCursor(in: "room-right")
        let now = Date()
        let held = RemoteMessage(remoteID: "ghost", conversation: "room-left", idempotencyKey: nil, sender: "alice",
                                 text: "held", sentAt: now)
        try await pair.store.write { [sent] tx in
            for index in sent.indices {
                try tx.insertMapping(IDMapping(messageID: ids[index], backend: "left", conversation: "room-left",
                                               remoteID: sent[index], part: 0))
            }
            try tx.insertMapping(IDMapping(messageID: ids[0], backend: "right", conversation: "room-right",
                                           remoteID: try #require(copyOfM1.remoteID), part: 0))
            for index in 0..<2 {
                try tx.insertNewMessage(Message(id: ids[index], conversation: ledger, sender: "alice",
                                                content: MessageContent(text: "m\(index + 1)", metadata: ["bridge.from": "left"]),
                                                timestamp: now, hasServerTimestamp: true,
                                                delivery: index == 0 ? .received : .pending, isOutgoing: false))
            }
            try tx.upsertOutbox(OutboxEntry(messageID: ids[1], backend: "right", conversation: "room-right", prepared: preparedM2,
                                            noSend: true, nextAttemptAt: now, status: .queued, createdAt: now))
            _ = try tx.enqueuePending(PendingOperation(
                waitKey: WaitKey(stored: "bridge:right:\(ids[2])"), kind: "reaction",
                payload: try JSONEncoder().encode(LegacyReaction(kind: "reaction", symbol: "👍", isActive: true)), createdAt: now))
            let heldID = try tx.enqueuePending(PendingOperation(
                waitKey: WaitKey(stored: "bridge-quarantine:\(ledger)"), kind: "quarantine",
                payload: try JSONEncoder().encode(LegacyHeld(source: "left", change: .message(held), reason: "refused", at: now)),
                createdAt: now))
            _ = try tx.enqueuePending(PendingOperation(waitKey: WaitKey(stored: "bridge-quarantine-retry:\(ledger)"), kind: "quarantine-retry",
                                                       payload: Data(String(heldID).utf8), createdAt: now))
            try tx.setCursor(leftAfterM1, conversation: "room-left", backend: "left", kind: .changes)
            try tx.setCursor(rightNow, conversation: "room-right", backend: "right", kind: .changes)
        }

        let quarantined = try await BridgeQuarantine(store: pair.store, a: "room-left", b: "room-right").entries()
        #expect(quarantined.count == 1 && quarantined.first?.retryRequested == true && quarantined.first?.remoteID == "ghost",
                "the held change and its retry request move together: \(quarantined)")

        let bridge = try await pair.bridge()
        #expect(try await pair.store.read { try $0.messages(in: ledger, before: nil, limit: 10) }.isEmpty, "no ledger rows remain")
        #expect(try await pair.store.read { try $0.allPendingOperations() }.isEmpty, "nothing remains in the engine's queue")
        #expect(try await pair.store.read { try $0.bridgeCopy(ids[1]) }?.pendingTowards == "right")
        #expect(try await pair.store.read { try $0.bridgeCursor(pair: ledger.rawValue, backend: "right") } == rightNow)
        let stats = try await bridge.catchUp()
        #expect(stats.messagesAToB == 3 && stats.messagesBToA == 0, "\(stats)")
        let right = try await pair.messages(pair.right, "room-right", as: "bob")
        #expect(right.map(\.text).sorted() == ["held", "m1", "m2", "m3", "old bob"], "each once: \(right.map(\.text))")
        let left = try await pair.messages(pair.left, "room-left", as: "alice")
        #expect(left.map(\.text) == ["m1", "m2", "m3"], "the adopted right cursor was past bob's old message")
        let copyOfM3 = try #require(right.first { $0.text == "m3" })
        let page = try await pair.right.makeAdapter(for: "bob").history(in: "room-right", before: nil, limit: 50)
        #expect(page.reactions.contains { $0.target == copyOfM3.remoteID && $0.symbol == "👍" && $0.user == "bridge" })
        await #expect(try pair.waiting().isEmpty, "the adopted reaction was applied")
        await #expect(try BridgeQuarantine(store: pair.store, a: "room-left", b: "room-right").count() == 0, "the retried change crossed")
        #expect(try await pair.store.read { try $0.bridgeCopy(ids[1]) }?.pendingTowards == nil)
        #expect(try await pair.store.read { try $0.bridgeCopy(ids[0]) }?.origin == "left")

        try await pair.bridge().catchUp()
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").count == 5, "a restart adds nothing")
        #expect(try await pair.messages(pair.left, "room-left", as: "alice").count == 3)
    }
}
