import Foundation
import MemoryAdapter
@testable import SwitchboardBridge
import SwitchboardCore
import SwitchboardSQLite
@testable import SwitchboardStore
import TestSupport
import Testing

/// What the bridge does with a failure no retry can fix, end to end: the classification decides, not the error's
/// type (`ErrorClassificationTests` has the table).
@Suite("Bridge: failures no retry fixes are not retried")
struct BridgeFailureTests {
    /// An error no classification knows, as a buggy adapter might throw.
    struct AdapterBug: Error, CustomStringConvertible {
        var description: String { "the adapter tripped over itself" }
    }

    @Test("a change whose publish throws an error nobody classified is held once, not retried, and the pair goes on")
    func unclassifiedErrorIsHeld() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        let gate = PublishGate(pair.right.makeAdapter(for: "bridge"), failure: AdapterBug())
        gate.closed = true
        let bridge = try await pair.bridge(towards: gate)
        try await pair.alice.sendNow("alice 1", in: "room-left")
        try await pair.bob.sendNow("bob 1", in: "room-right")
        try await bridge.catchUp()  // nothing thrown: the change is held, not the direction failed
        #expect(gate.refusedPublishes == 1, "the unclassified failure was retried")
        let held = try await BridgeQuarantine(store: pair.store, a: "room-left", b: "room-right").entries()
        #expect(held.count == 1)
        #expect(held.first?.reason == "internal: the adapter tripped over itself")
        #expect(try await pair.messages(pair.left, "room-left", as: "alice").map(\.text) == ["alice 1", "bob 1"])
        try await bridge.catchUp()
        #expect(gate.refusedPublishes == 1, "a later catch-up retried the held change on its own")
    }

    @Test("running, a store that refuses every write stops the bridge, naming the store, instead of backing off forever")
    func readOnlyStoreStops() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        var configuration = BridgeConfiguration()
        configuration.retryBase = .milliseconds(10)
        configuration.retryCap = .milliseconds(20)
        configuration.pollInterval = .milliseconds(20)
        let lines = CollectingLogHandler()
        configuration.logger = lines.logger(label: "bridge")
        let bridge = try await pair.bridge(towards: pair.right.makeAdapter(for: "bridge"), configuration: configuration)
        try await pair.alice.sendNow("alice 1", in: "room-left")
        // SQLite itself refuses every write from now on (SQLITE_READONLY): a retry cannot change that.
        try pair.store.writeBlocking { transaction in
            let sqlite = try #require(transaction as? SQLiteTransaction)
            _ = try sqlite.perform { try $0.queryFirst("PRAGMA query_only = 1") { $0.int(at: 0) } }
        }
        let running = Task { await bridge.run() }
        #expect(await conditionHolds { lines.messages.contains { $0.contains("no retry can fix it: the store: storage: ") } },
                "\(lines.messages)")
        // Polls wake the bridge every 20 ms and a retry would be logged within one backoff (10 ms): a window of
        // many cycles in which none comes (the wait ends at once if one does).
        #expect(await !conditionHolds(within: .milliseconds(400)) { lines.messages.contains { $0.contains("retrying in") } },
                "\(lines.messages)")
        #expect(await bridge.currentStats.lastError?.contains("the store: storage: ") == true)
        await bridge.stop()
        await running.value
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").isEmpty)
    }
}
