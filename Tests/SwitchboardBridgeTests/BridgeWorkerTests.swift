import Foundation
import MemoryAdapter
import SwitchboardBridge
import SwitchboardCore
import SwitchboardStore
import TestSupport
import Testing

/// Bridge workers in-process over memory backends and one SQLite store.
@Suite("Bridge workers and leases")
struct BridgeWorkerTests {
    /// The worker pair `general` over a test pair's backends.
    private func workerPair(_ pair: BridgeTests.Pair) -> BridgeWorkerPair {
        let left = pair.left, right = pair.right
        return BridgeWorkerPair(name: "general") {
            (a: BridgeSide(name: "left", adapter: left.makeAdapter(for: "bridge"), conversation: "room-left"),
             b: BridgeSide(name: "right", adapter: right.makeAdapter(for: "bridge"), conversation: "room-right"))
        }
    }

    /// A fast worker configuration named `name`. Hand-overs here go through `stop()`, which releases the lease,
    /// so the lease can outlast a stall of the test process (a 1 s lease, renewed every 333 ms, was lost to one).
    private func configuration(_ name: String) -> BridgeWorkerConfiguration {
        var configuration = BridgeWorkerConfiguration(worker: name)
        configuration.leaseSeconds = 3
        configuration.leaseRetry = .milliseconds(100)
        configuration.bridge.pollInterval = .milliseconds(100)
        return configuration
    }

    /// Sends `text` as the adapter's user.
    private func send(_ adapter: MemoryAdapter, _ text: String, in room: ConversationID) async throws {
        try await adapter.sendNow(text, in: room)
    }


    /// Hand-over between two in-process workers, and lease release on stop.
    @Test("one worker holds the pair, the other stands by and takes over when it stops; stop releases the lease")
    func handOver() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        let lease = BridgeWorker.leaseName("general")
        let one = BridgeWorker(store: pair.store, pairs: [workerPair(pair)], configuration: configuration("one"))
        let two = BridgeWorker(store: pair.store, pairs: [workerPair(pair)], configuration: configuration("two"))
        let runOne = Task { await one.run() }
        #expect(try await conditionHolds { try await pair.store.leaseOwner(lease, now: Date()) == "one" })
        let runTwo = Task { await two.run() }
        for index in 0..<5 { try await send(pair.alice, "alice \(index)", in: "room-left") }
        #expect(try await conditionHolds { try await pair.messages(pair.right, "room-right", as: "bob").count == 5 })
        #expect(await conditionHolds { await two.status().first?.state == .standby(holder: "one") })
        #expect(await two.status().first?.line.hasPrefix("pair general: standby (lease held by one)") == true)
        // A copy is counted once its publish is recorded, just after it shows on the target.
        let counted = "pair general: a→b 5, b→a 0, updates 0, waiting 0, quarantined 0, collisions 0, lag "
        let countedAll = await conditionHolds { await one.status().first?.line.hasPrefix(counted) == true }
        let oneLine = await one.status().first?.line
        #expect(countedAll, "\(oneLine ?? "")")

        await one.stop()
        await runOne.value
        #expect(try await conditionHolds { try await pair.store.leaseOwner(lease, now: Date()) == "two" })
        for index in 0..<5 { try await send(pair.bob, "bob \(index)", in: "room-right") }
        #expect(try await conditionHolds { try await pair.messages(pair.left, "room-left", as: "alice").count == 10 })
        await two.stop()
        await runTwo.value
        #expect(try await pair.store.leaseOwner(lease, now: Date()) == nil)
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").count == 10)
        #expect(await two.status().first?.stats.messagesBToA == 5)
    }

    /// `stop()` finishes the change in flight rather than cancelling it.
    @Test("stop lets the change in flight finish instead of abandoning it")
    func stopFinishesInFlight() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        for index in 0..<3 { try await send(pair.alice, "slow \(index)", in: "room-left") }
        pair.right.faults.publishDelay = .milliseconds(600)
        let worker = BridgeWorker(store: pair.store, pairs: [workerPair(pair)], configuration: configuration("solo"))
        let running = Task { await worker.run() }
        // Stop while the first publish is in flight (it takes 600 ms).
        #expect(await conditionHolds { pair.right.faults.publishCallCount >= 1 })
        await worker.stop()
        await running.value
        let right = try await pair.messages(pair.right, "room-right", as: "bob")
        #expect(right.count == 1, "the publish in flight should finish and nothing after it start: \(right.map(\.text))")
        pair.right.faults.publishDelay = .zero
        let again = BridgeWorker(store: pair.store, pairs: [workerPair(pair)], configuration: configuration("solo"))
        #expect(await again.catchUpOnce(leaseWait: .seconds(5)).isEmpty)
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").map(\.text) == ["slow 0", "slow 1", "slow 2"])
    }

    /// `catchUpOnce` waits for a held lease up to its limit, then fails naming the holder.
    @Test("catch-up-only waits for a lease another worker holds, and fails clearly when it is never freed")
    func catchUpWaitsForLease() async throws {
        let pair = try BridgeTests.Pair()
        defer { pair.remove() }
        let lease = BridgeWorker.leaseName("general")
        #expect(try await pair.store.acquireLease(lease, owner: "elsewhere", ttl: 60, now: Date()))
        let worker = BridgeWorker(store: pair.store, pairs: [workerPair(pair)], configuration: configuration("late"))
        let failures = await worker.catchUpOnce(leaseWait: .milliseconds(300))
        #expect(failures["general"]?.contains("lease held by elsewhere") == true, "\(failures)")
        try await pair.store.releaseLease(lease, owner: "elsewhere")
        try await send(pair.alice, "hello", in: "room-left")
        #expect(await worker.catchUpOnce(leaseWait: .milliseconds(300)).isEmpty)
        #expect(try await pair.messages(pair.right, "room-right", as: "bob").map(\.text) == ["hello"])
        #expect(try await pair.store.leaseOwner(lease, now: Date()) == nil)
    }
}
