import Foundation
import MemoryAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import Synchronization
import TestSupport
import Testing

/// The pure decision of a reload: which pairs start, stop, restart or run on.
@Suite("Bridge reconfiguration decision")
struct BridgeReconfigurationTests {
    /// A pair that is never opened (the decision looks at names and definitions only).
    private static func pair(_ name: String, _ definition: String = "v1") -> BridgeWorkerPair {
        BridgeWorkerPair(name: name, definition: definition) {
            throw SwitchboardError(.notSupported, "never opened in these tests")
        }
    }

    /// One reload: the pairs before and after, and the expected decision.
    struct Case: Sendable, CustomTestStringConvertible {
        /// What the case shows.
        var label: String
        /// Name and definition of each pair before.
        var current: [(String, String)]
        /// Name and definition of each pair after.
        var new: [(String, String)]
        /// The decision.
        var expected: BridgeReconfiguration
        /// The label.
        var testDescription: String { label }
    }

    /// The cases.
    static let cases: [Case] = [
        Case(label: "same config", current: [("general", "v1"), ("ops", "v1")], new: [("general", "v1"), ("ops", "v1")],
             expected: BridgeReconfiguration(unchanged: ["general", "ops"])),
        Case(label: "a pair added", current: [("general", "v1")], new: [("general", "v1"), ("new", "v1")],
             expected: BridgeReconfiguration(added: ["new"], unchanged: ["general"])),
        Case(label: "a pair removed", current: [("general", "v1"), ("old", "v1")], new: [("general", "v1")],
             expected: BridgeReconfiguration(removed: ["old"], unchanged: ["general"])),
        Case(label: "a definition changed", current: [("general", "v1"), ("ops", "v1")], new: [("general", "v1"), ("ops", "v2")],
             expected: BridgeReconfiguration(changed: ["ops"], unchanged: ["general"])),
        Case(label: "added, removed, changed and unchanged at once",
             current: [("old", "v1"), ("general", "v1"), ("ops", "v1"), ("gone", "v1")],
             new: [("ops", "v2"), ("new", "v1"), ("general", "v1"), ("later", "v1")],
             expected: BridgeReconfiguration(added: ["new", "later"], removed: ["old", "gone"], changed: ["ops"],
                                             unchanged: ["general"])),
        Case(label: "a rename is a removal and an addition", current: [("general", "v1")], new: [("main", "v1")],
             expected: BridgeReconfiguration(added: ["main"], removed: ["general"])),
        Case(label: "a reorder changes nothing", current: [("a", "v1"), ("b", "v1")], new: [("b", "v1"), ("a", "v1")],
             expected: BridgeReconfiguration(unchanged: ["b", "a"])),
        Case(label: "everything replaced", current: [("a", "v1"), ("b", "v1")], new: [("c", "v1")],
             expected: BridgeReconfiguration(added: ["c"], removed: ["a", "b"])),
    ]

    /// Each case's decision.
    @Test("what a reload starts, stops, restarts and leaves running", arguments: cases)
    func decision(_ reload: Case) {
        let plan = BridgeReconfiguration(from: reload.current.map { Self.pair($0.0, $0.1) }, to: reload.new.map { Self.pair($0.0, $0.1) })
        #expect(plan == reload.expected)
        #expect(plan.changesNothing == (reload.expected.added + reload.expected.removed + reload.expected.changed).isEmpty)
    }

    /// The summary the command logs.
    @Test("the summary names each group and leaves out the empty ones")
    func summary() {
        #expect(BridgeReconfiguration(added: ["new"], removed: ["old"], changed: ["ops"], unchanged: ["general"]).summary
                == "added new; removed old; restarted ops (changed); unchanged general")
        #expect(BridgeReconfiguration(unchanged: ["general", "ops"]).summary == "unchanged general, ops")
        #expect(BridgeReconfiguration().summary == "no pairs")
    }

    /// Log lines as the command prints them.
    @Test("log lines start with an RFC 3339 UTC time with milliseconds and the level, then name their subject")
    func logLine() {
        let date = Date(timeIntervalSince1970: 1_780_000_000.1239)
        #expect(LogLine(date: date, level: .info, subject: "pair general", message: "took the lease as bridge-1").text
                == "2026-05-28T20:26:40.123Z info pair general: took the lease as bridge-1")
        #expect(LogLine(date: date, level: .warning, subject: nil, message: "error body\nsecond line\n").text
                == "2026-05-28T20:26:40.123Z warning error body | second line")
        #expect(LogLine(date: Date(timeIntervalSince1970: 0), level: .debug, subject: "postgres", message: "NOTICE:  x").text
                == "1970-01-01T00:00:00.000Z debug postgres: NOTICE:  x")
    }
}

extension CollectingLogHandler {
    /// The messages logged under `label` (`pair general`) containing `text`.
    func lines(from label: String, containing text: String) -> [String] {
        records.filter { $0.label == label && $0.message.contains(text) }.map(\.message)
    }
}

/// `BridgeWorker.reconfigure(pairs:)` on memory backends: pairs start, stop and restart under a running worker.
@Suite("Bridge worker reconfiguration")
struct BridgeWorkerReconfigurationTests {
    /// Two memory backends with rooms `l1…l4` and `r1…r4` (alice and the bridge on the left, bob and the bridge on
    /// the right) and a SQLite store.
    final class Rooms: Sendable {
        let left: MemoryBackend
        let right: MemoryBackend
        let store: SQLiteStore
        let directory: URL

        /// Creates the rooms and the store.
        init() throws {
            left = try MemoryBackend(scheme: .clientAssigned, backendID: "left")
            right = try MemoryBackend(scheme: .serverAssigned, backendID: "right")
            for index in 1...4 {
                try left.createConversation(ConversationID("l\(index)"), members: ["alice", "bridge"])
                try right.createConversation(ConversationID("r\(index)"), members: ["bob", "bridge"])
            }
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("bridge-reconfigure-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            store = try SQLiteStore(path: directory.appendingPathComponent("bridge.sqlite").path)
        }

        /// The pair `name` bridging room `l<left>` with room `r<right>`.
        func pair(_ name: String, _ leftRoom: Int, _ rightRoom: Int) -> BridgeWorkerPair {
            let left = self.left, right = self.right
            return BridgeWorkerPair(name: name, definition: "l\(leftRoom)|r\(rightRoom)") {
                (a: BridgeSide(name: "side a", adapter: left.makeAdapter(for: "bridge"), conversation: ConversationID("l\(leftRoom)")),
                 b: BridgeSide(name: "side b", adapter: right.makeAdapter(for: "bridge"), conversation: ConversationID("r\(rightRoom)")))
            }
        }

        /// Alice sends `text` in room `l<room>`.
        func send(_ text: String, inLeft room: Int) async throws {
            let alice = left.makeAdapter(for: "alice")
            let prepared = try await alice.prepare(OutgoingMessage(id: .make(), conversation: ConversationID("l\(room)"), sender: "alice",
                                                                   text: text, createdAt: Date()), noSend: false)
            _ = try await alice.publish(prepared)
        }

        /// The texts in room `r<room>`.
        func rightTexts(_ room: Int) async throws -> [String] {
            try await right.makeAdapter(for: "bob").allMessages(in: ConversationID("r\(room)")).map(\.text)
        }

        /// Closes the store and removes the folder.
        func remove() {
            store.close()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// A fast worker configuration logging to `log`.
    private func configuration(_ log: CollectingLogHandler) -> BridgeWorkerConfiguration {
        var configuration = BridgeWorkerConfiguration(worker: "solo")
        configuration.leaseSeconds = 3
        configuration.leaseRetry = .milliseconds(100)
        configuration.bridge.pollInterval = .milliseconds(100)
        configuration.logger = log.logger(label: "bridge")
        return configuration
    }


    /// Added, removed and unchanged pairs while the unchanged one has a publish in flight.
    @Test("a removed pair stops and frees its lease, an added one bridges, an unchanged one keeps its change in flight")
    func addAndRemove() async throws {
        let rooms = try Rooms()
        defer { rooms.remove() }
        let log = CollectingLogHandler()
        let worker = BridgeWorker(store: rooms.store, pairs: [rooms.pair("general", 1, 1), rooms.pair("old", 2, 2)],
                                  configuration: configuration(log))
        let running = Task { await worker.run() }
        try await rooms.send("old 0", inLeft: 2)
        #expect(try await conditionHolds { try await rooms.rightTexts(2) == ["old 0"] })

        // A slow publish of general is in flight while the reload happens.
        rooms.right.faults.publishDelay = .milliseconds(800)
        let calls = rooms.right.faults.publishCallCount
        try await rooms.send("general 0", inLeft: 1)
        #expect(await conditionHolds { rooms.right.faults.publishCallCount > calls })
        let plan = try await worker.reconfigure(pairs: [rooms.pair("general", 1, 1), rooms.pair("new", 3, 3)])
        #expect(plan == BridgeReconfiguration(added: ["new"], removed: ["old"], unchanged: ["general"]))
        #expect(await worker.status().map(\.name) == ["general", "new"])

        #expect(try await conditionHolds { try await rooms.store.leaseOwner(BridgeWorker.leaseName("old"), now: Date()) == nil },
                "the removed pair's lease was not released")
        #expect(try await rooms.store.acquireLease(BridgeWorker.leaseName("old"), owner: "another", ttl: 60, now: Date()),
                "another worker cannot take the removed pair")
        #expect(try await conditionHolds { try await rooms.rightTexts(1) == ["general 0"] }, "the change in flight was dropped")
        rooms.right.faults.publishDelay = .zero
        try await rooms.send("new 0", inLeft: 3)
        #expect(try await conditionHolds { try await rooms.rightTexts(3) == ["new 0"] })
        try await rooms.send("general 1", inLeft: 1)
        #expect(try await conditionHolds { try await rooms.rightTexts(1) == ["general 0", "general 1"] })
        try await rooms.send("old 1", inLeft: 2)
        try await rooms.send("new 1", inLeft: 3)
        #expect(try await conditionHolds { try await rooms.rightTexts(3) == ["new 0", "new 1"] })
        #expect(try await rooms.rightTexts(2) == ["old 0"], "the removed pair still bridges")

        #expect(log.lines(from: "pair general", containing: "took the lease").count == 1, "the unchanged pair was restarted")
        #expect(log.lines(from: "pair old", containing: "removed from the config").count == 1)
        #expect(log.lines(from: "pair old", containing: "stopped; lease released").count == 1)
        await worker.stop()
        await running.value
        for name in ["general", "new"] {
            #expect(try await rooms.store.leaseOwner(BridgeWorker.leaseName(name), now: Date()) == nil)
        }
    }

    /// A changed pair stops and starts again with its new definition.
    @Test("a changed pair is restarted with its new definition; nothing changes on a duplicate name")
    func change() async throws {
        let rooms = try Rooms()
        defer { rooms.remove() }
        let log = CollectingLogHandler()
        let worker = BridgeWorker(store: rooms.store, pairs: [rooms.pair("general", 1, 1)], configuration: configuration(log))
        let running = Task { await worker.run() }
        try await rooms.send("hello", inLeft: 1)
        #expect(try await conditionHolds { try await rooms.rightTexts(1) == ["hello"] })

        await #expect(throws: SwitchboardError.self) {
            try await worker.reconfigure(pairs: [rooms.pair("general", 1, 4), rooms.pair("general", 2, 2)])
        }
        #expect(log.lines(from: "pair general", containing: "definition changed").isEmpty)

        let plan = try await worker.reconfigure(pairs: [rooms.pair("general", 1, 4)])
        #expect(plan == BridgeReconfiguration(changed: ["general"]))
        #expect(await conditionHolds { log.lines(from: "pair general", containing: "took the lease").count == 2 })
        #expect(log.lines(from: "pair general", containing: "stopped; lease released").count == 1)
        // "hello" has its copy on the right backend already (the ID map is per backend), so only "again" crosses.
        try await rooms.send("again", inLeft: 1)
        #expect(try await conditionHolds { try await rooms.rightTexts(4) == ["again"] }, "the new definition does not bridge")
        #expect(try await rooms.rightTexts(1) == ["hello"], "the old definition still bridges")
        await worker.stop()
        await running.value
        #expect(try await rooms.store.leaseOwner(BridgeWorker.leaseName("general"), now: Date()) == nil)
    }
}
