import Foundation
@testable import MemoryAdapter
import SwitchboardCore
import TestSupport
import Testing

@Suite("Memory live delivery")
struct LiveDeliveryTests {
    @Test("a new subscription hears connected first; the echo reaches the sender too", arguments: IDScheme.allCases)
    func echoArrivesOnOwnStream(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let aliceLive = EventRecorder.recording(f.alice.liveEvents(in: f.room))
        let bobLive = EventRecorder.recording(f.bob.liveEvents(in: f.room))
        defer { aliceLive.stop(); bobLive.stop() }
        #expect(await aliceLive.waitUntil { !$0.isEmpty })
        #expect(aliceLive.events.first == .connection(.connected))
        let (prepared, remoteID) = try await f.send("hi", from: f.alice)
        #expect(await aliceLive.waitForMessages(1))
        #expect(await bobLive.waitForMessages(1))
        for recorder in [aliceLive, bobLive] {
            let echo = try #require(recorder.messages.first)
            #expect(echo.idempotencyKey == prepared.id)
            #expect(echo.remoteID == remoteID)
            #expect(echo.sender == "alice")
            #expect(recorder.events.first == .connection(.connected))
        }
    }

    @Test("typing reaches the other members only and is never stored", arguments: IDScheme.allCases)
    func typingReachesOthersOnly(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let aliceLive = EventRecorder.recording(f.alice.liveEvents(in: f.room))
        let bobLive = EventRecorder.recording(f.bob.liveEvents(in: f.room))
        defer { aliceLive.stop(); bobLive.stop() }
        let before = try await f.alice.latestCursor(in: f.room)
        try await f.bob.sendTyping(true, in: f.room)
        #expect(await aliceLive.waitUntil { $0.contains(.typing(conversation: f.room, user: "bob", isTyping: true)) })
        await bobLive.settle()
        #expect(!bobLive.events.contains { $0.isTyping })
        #expect(try await f.alice.latestCursor(in: f.room) == before)
        #expect(try await f.alice.changes(in: f.room, after: nil, limit: 10).changes.isEmpty)
        await expectError(.unauthorized) { try await f.carol.sendTyping(true, in: f.room) }
    }

    @Test("dropped streams lose live events; changes() recovers them", arguments: IDScheme.allCases)
    func droppedStreamsLoseEventsButChangesRecover(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let live = EventRecorder.recording(f.alice.liveEvents(in: f.room))
        defer { live.stop() }
        #expect(await live.waitUntil { $0.contains(.connection(.connected)) })
        try await f.send("before", from: f.bob)
        #expect(await live.waitForMessages(1))
        let cursor = try await f.alice.latestCursor(in: f.room)

        f.backend.faults.reconnectDelay = .milliseconds(300)
        f.backend.faults.dropLiveStreams()
        #expect(await live.waitUntil { $0.contains { $0.isDisconnected } })
        let (gap, _) = try await f.send("during the gap", from: f.bob)
        #expect(await live.waitUntil { $0.filter(\.isConnected).count == 2 })
        await live.settle()
        #expect(!live.messages.contains { $0.idempotencyKey == gap.id }, "lost live, as on a dropped socket")

        let recovered = try await f.allChanges(after: cursor, as: f.alice)
        #expect(recovered.compactMap(\.message).map(\.idempotencyKey) == [gap.id])

        let (after, _) = try await f.send("after", from: f.bob)
        #expect(await live.waitUntil { $0.compactMap(\.message).contains { $0.idempotencyKey == after.id } })
        let connections = live.events.filter { if case .connection = $0 { true } else { false } }
        #expect(connections.count == 3)
        #expect(connections[1].isDisconnected)
    }

    @Test("an offline user fails retryably, loses the stream, and reconnects when back", arguments: IDScheme.allCases)
    func offlineUserFailsAndReconnects(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let live = EventRecorder.recording(f.alice.liveEvents(in: f.room))
        defer { live.stop() }
        #expect(await live.waitUntil { $0.contains(.connection(.connected)) })
        let (first, firstID) = try await f.send("first", from: f.alice)
        f.backend.faults.setOffline("alice", true)
        #expect(f.backend.faults.isOffline("alice"))
        #expect(await live.waitUntil { $0.contains { $0.isDisconnected } })
        let prepared = try await f.alice.prepare(f.outgoing("offline", from: f.alice), noSend: false)
        await expectError(.transport, retryable: true) { _ = try await f.alice.publish(prepared) }
        await expectError(.transport, retryable: true) { try await f.alice.edit(firstID, in: f.room, text: "x") }
        await expectError(.transport, retryable: true) { _ = try await f.alice.changes(in: f.room, after: nil, limit: 5) }
        try await f.send("while alice is away", from: f.bob)
        f.backend.faults.setOffline("alice", false)
        #expect(await live.waitUntil { $0.filter(\.isConnected).count == 2 })
        _ = try await f.alice.publish(prepared)
        #expect(await live.waitUntil { $0.compactMap(\.message).contains { $0.idempotencyKey == prepared.id } })
        #expect(live.messages.map(\.idempotencyKey) == [first.id, prepared.id])
    }

    @Test("duplicate delivery repeats every live change", arguments: IDScheme.allCases)
    func duplicateDeliveriesArriveTwice(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        f.backend.faults.duplicateDeliveries = true
        let live = EventRecorder.recording(f.bob.liveEvents(in: f.room))
        defer { live.stop() }
        let (one, _) = try await f.send("one", from: f.alice)
        let (two, _) = try await f.send("two", from: f.alice)
        #expect(await live.settledMessages(atLeast: 4).map(\.idempotencyKey) == [one.id, one.id, two.id, two.id])
        #expect(live.events.filter(\.isConnected).count == 1)
    }

    @Test("out-of-order delivery swaps pairs and flushes on disconnect", arguments: IDScheme.allCases)
    func outOfOrderDeliverySwapsPairs(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        f.backend.faults.outOfOrderDelivery = true
        let live = EventRecorder.recording(f.bob.liveEvents(in: f.room))
        defer { live.stop() }
        let (one, _) = try await f.send("one", from: f.alice)
        let (two, _) = try await f.send("two", from: f.alice)
        let (three, _) = try await f.send("three", from: f.alice)
        #expect(await live.settledMessages(atLeast: 2).map(\.idempotencyKey) == [two.id, one.id], "the third is held")
        f.backend.faults.dropLiveStreams()
        #expect(await live.waitUntil { $0.contains { $0.isDisconnected } })
        let tail = Array(live.events.suffix(2))
        #expect(tail.first?.message?.idempotencyKey == three.id)
        #expect(tail.last?.isDisconnected == true)
    }

    /// A publish yields to each subscriber while it holds the server's lock, and that yield needs the waiting
    /// consumer's task status lock; a consumer's cancellation holds its status lock while the stream's termination
    /// handler runs. A handler that took the server's lock deadlocked the two: CI's first test group once hung on it.
    @Test("cancelling a live consumer never waits for the server's lock, which a publish holds while it yields")
    func cancellationTakesNoServerLock() async throws {
        let f = try Fixture(.serverAssigned)
        let stream = f.backend.subscribe(to: f.room, as: "alice")
        let received = Locked(0)
        let consumer = Task { for await _ in stream { received.withLock { $0 += 1 } } }
        #expect(await conditionHolds { received.withLock { $0 } >= 1 }, "the stream says connected first")
        // Let the consumer suspend in `next()`, so the cancellation below runs its handler on the cancelling thread.
        try await Task.sleep(for: .milliseconds(100))
        let returned = try await offCooperativePool { () -> Bool in
            f.backend.server.state.withLock { _ in
                let done = DispatchSemaphore(value: 0)
                Thread { consumer.cancel(); done.signal() }.start()
                return done.wait(timeout: .now() + Double(TestTime.limit(.seconds(5)).components.seconds)) == .success
            }
        }
        #expect(returned, "cancel() waited for the lock a publish holds while it yields")
        await consumer.value
        #expect(await conditionHolds { f.backend.subscriberCount == 0 }, "the subscription is removed afterwards")
    }

    @Test("a subscription ends when its consumer stops; a non-member's ends at once")
    func subscriptionsEnd() async throws {
        let f = try Fixture(.serverAssigned)
        let live = EventRecorder.recording(f.alice.liveEvents(in: f.room))
        #expect(await live.waitUntil { !$0.isEmpty })
        #expect(f.backend.subscriberCount == 1)
        live.stop()
        let deadline = TestTime.deadline(after: .seconds(3))
        while f.backend.subscriberCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
        #expect(f.backend.subscriberCount == 0)

        let outsider = EventRecorder.recording(f.carol.liveEvents(in: f.room))
        #expect(await outsider.waitUntil { _ in outsider.isFinished })
        #expect(outsider.events.count == 1)
        #expect(outsider.events.first?.isDisconnected == true)
    }
}
