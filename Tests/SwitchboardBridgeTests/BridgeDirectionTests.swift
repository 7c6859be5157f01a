import Foundation
import MemoryAdapter
import SwitchboardBridge
import SwitchboardCore
import TestSupport
import Testing

/// The two directions of a pair are independent: a failure one way does not stop the other.
@Suite("Bridge directions are independent")
struct BridgeDirectionTests {
    private func send(_ adapter: MemoryAdapter, _ text: String, in room: ConversationID) async throws {
        try await adapter.sendNow(text, in: room)
    }


    @Test("a catch-up whose one direction fails still bridges the other, then throws that direction's error")
    func catchUpGoesOnTheOtherWay() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        try await send(pair.alice, "alice 1", in: "room-left")
        try await send(pair.bob, "bob 1", in: "room-right")
        pair.right.faults.failNextPublishes(1_000)  // left → right cannot publish
        let bridge = try await pair.bridge()
        await #expect(throws: (any Error).self) { try await bridge.catchUp() }
        #expect(try await pair.messages(pair.left, "room-left", as: "alice").map(\.text) == ["alice 1", "bob 1"],
                "right → left went on")
        #expect(await bridge.currentStats.lastError?.hasPrefix("left → right: ") == true, "the status names the direction")
        pair.right.faults.reset()
        try await bridge.catchUp()
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").map(\.text) == ["bob 1", "alice 1"])
        #expect(try await pair.messages(pair.left, "room-left", as: "alice").count == 2, "nothing crossed twice")
        #expect(await bridge.currentStats.lastError == nil)
    }

    @Test("running, a direction that keeps failing backs off on its own while the other bridges live, then recovers")
    func runBacksOffOneDirection() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        var configuration = BridgeConfiguration()
        configuration.retryBase = .milliseconds(20)
        configuration.retryCap = .milliseconds(200)
        let lines = CollectingLogHandler()
        configuration.logger = lines.logger(label: "bridge")
        let gate = PublishGate(pair.right.makeAdapter(for: "bridge"))
        gate.closed = true  // the bridge cannot publish on the right; bob can
        let bridge = try await pair.bridge(towards: gate, configuration: configuration)
        try await send(pair.alice, "alice 1", in: "room-left")
        let running = Task { await bridge.run() }
        #expect(await conditionHolds { lines.messages(at: .warning).contains { $0.contains("left → right failed") } },
                "a retried direction is a warning: \(lines.records)")
        for index in 0..<3 { try await send(pair.bob, "bob \(index)", in: "room-right") }
        #expect(try await conditionHolds { try await pair.messages(pair.left, "room-left", as: "alice").count == 4 },
                "bob's messages crossed while left → right backed off")
        #expect(await bridge.currentStats.lastError?.hasPrefix("left → right: ") == true)
        #expect(!lines.messages.contains { $0.contains("bridge pass failed") }, "the pair as a whole never paused")
        gate.closed = false
        #expect(try await conditionHolds { try await pair.messages(pair.right, "room-right", as: "bob").count == 4 },
                "alice's message crossed once the target took publishes again")
        #expect(await conditionHolds { await bridge.currentStats.lastError == nil })
        await bridge.stop()
        await running.value
        #expect(try await pair.messages(pair.left, "room-left", as: "alice").count == 4)
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").count == 4)
    }
}

extension BridgeDirectionTests {
    @Test("running, while one direction backs off, a wake reads the other once and rests (no busy loop)")
    func backingOffDirectionDoesNotSpin() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        var configuration = BridgeConfiguration()
        configuration.retryBase = .seconds(3600)  // the failed direction waits for the whole test
        configuration.pollInterval = .seconds(3600)  // only live events wake the bridge
        let gate = PublishGate(pair.right.makeAdapter(for: "bridge"))
        gate.closed = true
        let lines = CollectingLogHandler()
        configuration.logger = lines.logger(label: "bridge")
        let bridge = try await pair.bridge(towards: gate, configuration: configuration)
        try await send(pair.alice, "alice 1", in: "room-left")
        let running = Task { await bridge.run() }
        #expect(await conditionHolds { lines.messages.contains { $0.contains("left → right failed") } }, "\(lines.messages)")
        try await send(pair.bob, "bob 1", in: "room-right")
        #expect(try await conditionHolds { try await pair.messages(pair.left, "room-left", as: "alice").count == 2 })
        await bridge.stop()
        await running.value
        // A wake reads the right side a page or two; a loop that kept going while left → right backs off reads it
        // thousands of times by now.
        #expect(gate.changeReads < 20, "the right side was read \(gate.changeReads) times")
    }
}

extension BridgeDirectionTests {
    @Test("running, a target that answers 429 with Retry-After is left alone that long, not the backoff's short delay")
    func retryAfterIsHonoured() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        var configuration = BridgeConfiguration()
        configuration.retryBase = .milliseconds(10)
        let lines = CollectingLogHandler()
        configuration.logger = lines.logger(label: "bridge")
        let gate = PublishGate(pair.right.makeAdapter(for: "bridge"),
                               failure: SwitchboardError(.transport, "HTTP 429: slow down", retryable: true, retryAfter: .seconds(90)))
        gate.closed = true
        let bridge = try await pair.bridge(towards: gate, configuration: configuration)
        try await send(pair.alice, "alice 1", in: "room-left")
        let running = Task { await bridge.run() }
        #expect(await conditionHolds { lines.messages.contains { $0.contains("left → right failed (retrying in 90.0 seconds") } },
                "\(lines.messages)")
        await bridge.stop()
        await running.value
    }
}

extension MemoryAdapter {
    /// Sends `text` in `room` as the adapter's user, straight to its backend (no engine).
    func sendNow(_ text: String, in room: ConversationID) async throws {
        let prepared = try await prepare(OutgoingMessage(id: .make(), conversation: room, sender: localUser, text: text,
                                                         createdAt: Date()), noSend: false)
        _ = try await publish(prepared)
    }
}

/// A memory adapter whose publishes fail (retryably, unless told otherwise) while `closed`; everything else is
/// delegated.
final class PublishGate: ForwardingAdapter, Sendable {
    let inner: MemoryAdapter
    private let state = Locked(false)
    private let reads = Locked(0)
    private let refusals = Locked(0)
    private let failure: any Error

    /// How many change pages were read through the gate.
    var changeReads: Int { reads.withLock { $0 } }
    /// How many publishes the closed gate refused.
    var refusedPublishes: Int { refusals.withLock { $0 } }

    /// Wraps `inner`; a publish while closed throws `failure`.
    init(_ inner: MemoryAdapter, failure: any Error = SwitchboardError(.transport, "the gate is closed", retryable: true)) {
        self.inner = inner
        self.failure = failure
    }

    /// Whether publishes fail.
    var closed: Bool {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }

    func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        if closed {
            refusals.withLock { $0 += 1 }
            throw failure
        }
        return try await inner.publish(prepared)
    }
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        reads.withLock { $0 += 1 }
        return try await inner.changes(in: conversation, after: cursor, limit: limit)
    }
}
