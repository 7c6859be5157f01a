import Foundation
import SwitchboardCore
import SwitchboardStore
import Testing
import TestSupport

/// The bridge's per-pair records (`BridgeRecordTransaction`), run against each store in `StoreFactory.all`: no pair
/// reads or changes another's.
@Suite("Bridge record contract", .postgresCluster)
struct BridgeRecordContractTests {
    private static let one = "bridge:room-a|room-b"
    private static let two = "bridge:room-c|room-b"

    private static func entry(_ id: MessageID, pair: String, text: String = "hello", at second: Int = 1) -> BridgeCopy {
        BridgeCopy(pair: pair, messageID: id, origin: "left", sender: "alice", text: text, sentAt: Fixtures.time(Double(second)))
    }

    @Test("A ledger entry round-trips exactly, pending with its prepared copy and published", arguments: StoreFactory.all)
    func ledgerRoundTrip(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let id = MessageID.make()
            var pending = Self.entry(id, pair: Self.one, text: "é \u{0} \"quoted\" 🙂")
            pending.editedAt = Fixtures.time(2)
            pending.pendingTowards = "right"
            pending.prepared = PreparedMessage(id: id, conversation: "room-b", remoteID: "r-1", payload: Data([0, 0xFF, 7]))
            try store.writeBlocking { try $0.upsertBridgeCopy(pending) }
            #expect(try store.readBlocking { try $0.bridgeCopy(id) } == pending)
            var legacy = Self.entry(.make(), pair: Self.one)
            legacy.origin = nil
            legacy.deletedAt = Fixtures.time(5)
            try store.writeBlocking { try $0.upsertBridgeCopy(legacy) }
            #expect(try store.readBlocking { try $0.bridgeCopy(legacy.messageID) } == legacy, "no origin, deleted")
            try store.writeBlocking { try $0.markBridgeCopiesPublished([id, legacy.messageID], pair: Self.one) }
            var published = pending
            published.pendingTowards = nil
            published.prepared = nil
            #expect(try store.readBlocking { try $0.bridgeCopy(id) } == published)
            #expect(try store.readBlocking { try $0.bridgeCopy(legacy.messageID) } == legacy)
            var edited = published
            edited.text = "edited"
            try store.writeBlocking { try $0.upsertBridgeCopy(edited) }
            #expect(try store.readBlocking { try $0.bridgeCopy(id) } == edited, "an upsert replaces the entry")
            #expect(try store.readBlocking { try $0.bridgeCopy(.make()) } == nil)
        }
    }

    @Test("Ledger entries belong to one pair: another pair cannot remove, publish or list them", arguments: StoreFactory.all)
    func ledgerPerPair(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            let ids = (0..<5).map { _ in MessageID.make() }.sorted()
            var pending = Self.entry(ids[0], pair: Self.one)
            pending.pendingTowards = "right"
            try store.writeBlocking { tx in
                try tx.upsertBridgeCopy(pending)
                for id in ids.dropFirst() { try tx.upsertBridgeCopy(Self.entry(id, pair: Self.one)) }
            }
            try store.writeBlocking { tx in
                try tx.removeBridgeCopy(ids[1], pair: Self.two)
                try tx.markBridgeCopiesPublished([ids[0]], pair: Self.two)
            }
            #expect(try store.readBlocking { try $0.bridgeCopy(ids[1]) }?.pair == Self.one, "another pair's remove changes nothing")
            #expect(try store.readBlocking { try $0.bridgeCopy(ids[0]) }?.pendingTowards == "right", "nor its publish")
            #expect(try store.readBlocking { try $0.bridgeCopies(pair: Self.two, after: nil, limit: 10) }.isEmpty)
            // Paging in message ID order.
            let first = try store.readBlocking { try $0.bridgeCopies(pair: Self.one, after: nil, limit: 2) }
            #expect(first.map(\.messageID) == Array(ids[0..<2]))
            let rest = try store.readBlocking { try $0.bridgeCopies(pair: Self.one, after: first.last?.messageID, limit: 10) }
            #expect(rest.map(\.messageID) == Array(ids[2...]))
            try store.writeBlocking { try $0.removeBridgeCopy(ids[1], pair: Self.one) }
            #expect(try store.readBlocking { try $0.bridgeCopy(ids[1]) } == nil)
            #expect(try store.readBlocking { try $0.bridgeCopies(pair: Self.one, after: nil, limit: 10) }.count == 4)
            #expect(try store.readBlocking { try $0.bridgeCopies(pair: Self.one, after: nil, limit: 0) }.isEmpty)
        }
    }

    @Test("Change cursors are kept per pair and backend, replaced and cleared", arguments: StoreFactory.all)
    func cursorsPerPair(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.one, backend: "left") } == nil)
            try store.writeBlocking { tx in
                try tx.setBridgeCursor("l-1", pair: Self.one, backend: "left")
                try tx.setBridgeCursor("r-1", pair: Self.one, backend: "right")
                try tx.setBridgeCursor("r-9", pair: Self.two, backend: "right")
                try tx.setBridgeCursor("l-2", pair: Self.one, backend: "left")
            }
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.one, backend: "left") } == "l-2")
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.one, backend: "right") } == "r-1")
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.two, backend: "right") } == "r-9")
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.two, backend: "left") } == nil)
            try store.writeBlocking { try $0.setBridgeCursor(nil, pair: Self.one, backend: "right") }
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.one, backend: "right") } == nil)
            #expect(try store.readBlocking { try $0.bridgeCursor(pair: Self.two, backend: "right") } == "r-9")
            // Nothing of the engine's cursors is shared with the pair's.
            #expect(try store.readBlocking { try $0.cursor(conversation: "room-a", backend: "left", kind: .changes) } == nil)
        }
    }

    @Test("Waiting operations queue per pair and wait key, oldest first; prefix scans stay in their pair",
          arguments: StoreFactory.all)
    func operationsPerPair(_ factory: StoreFactory) throws {
        try factory.withStore { (store) throws in
            func operation(_ key: WaitKey, _ kind: String, _ second: Int) -> PendingOperation {
                PendingOperation(waitKey: key, kind: kind, payload: Data("\(kind) \(second)".utf8), createdAt: Fixtures.time(Double(second)))
            }
            let reaction = operation("copy:right:m-1", "reaction", 1)
            let receipt = operation("copy:right:m-1", "receipt", 2)
            let reply = operation("reply:right:left:r-7", "reply", 3)
            let otherPair = operation("copy:right:m-1", "reaction", 4)
            let odd = operation("reply:right:left:\"q\" {b} \\ é%_", "reply", 5)
            let ids = try store.writeBlocking { tx in
                [try tx.enqueueBridgeOperation(reaction, pair: Self.one), try tx.enqueueBridgeOperation(receipt, pair: Self.one),
                 try tx.enqueueBridgeOperation(reply, pair: Self.one), try tx.enqueueBridgeOperation(otherPair, pair: Self.two),
                 try tx.enqueueBridgeOperation(odd, pair: Self.one)]
            }
            #expect(ids == ids.sorted() && Set(ids).count == ids.count)
            func stored(_ operation: PendingOperation, _ id: Int64) -> PendingOperation {
                var operation = operation
                operation.id = id
                return operation
            }
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.one, waitingOn: "copy:right:m-1") }
                    == [stored(reaction, ids[0]), stored(receipt, ids[1])])
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.two, waitingOn: "copy:right:m-1") }
                    == [stored(otherPair, ids[3])])
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.one, in: .stored(prefix: "reply:right:left:")) }
                    == [stored(reply, ids[2]), stored(odd, ids[4])])
            // A prefix with LIKE's wildcards matches only itself.
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.one, in: .stored(prefix: "reply:right:left:\"q\" {b} \\ é%")) }
                    == [stored(odd, ids[4])])
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.one, in: .stored(prefix: "reply:right:left:_")) }.isEmpty)
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.one, in: .all) }.count == 4)
            #expect(try store.readBlocking { try $0.bridgeWaitKeys(pair: Self.two, among: ["copy:right:m-1", reply.waitKey, "none"]) }
                    == ["copy:right:m-1"])
            #expect(try store.readBlocking { try $0.bridgeWaitKeys(pair: Self.one, among: [odd.waitKey, "none"]) } == [odd.waitKey])
            #expect(try store.readBlocking { try $0.bridgeWaitKeys(pair: Self.one, among: []) }.isEmpty)
            try store.writeBlocking { try $0.removeBridgeOperation(ids[0]) }
            #expect(try store.readBlocking { try $0.bridgeOperations(pair: Self.one, waitingOn: "copy:right:m-1") } == [stored(receipt, ids[1])])
            #expect(try store.readBlocking { try $0.allPendingOperations() }.isEmpty, "the engine's queue is untouched")
            // Row ids are never reused.
            try store.writeBlocking { try $0.removeBridgeOperation(ids[4]) }
            #expect(try store.writeBlocking { try $0.enqueueBridgeOperation(reaction, pair: Self.one) } > ids[4])
        }
    }
}
