import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

@Suite("Outbox: optimistic send, retries, noSend, publish, discard, restart")
struct OutboxTests {
    @Test("a sent message is visible at once as pending, before the backend has it", arguments: IDScheme.allCases)
    func optimisticStateBeforePublish(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            // Publishes wait until released: however slowly a loaded machine runs this test, it sees the in-flight
            // states while the backend cannot have the message yet.
            h.backend.faults.holdsPublishes = true
            let alice = try await h.opened(h.alice)
            let log = try await EventLog.recording(alice, h.room)
            let message = try await alice.send("hello", in: h.room)

            #expect(message.delivery == .pending)
            #expect(message.isOutgoing)
            #expect(try await alice.timeline(of: h.room).map(\.id) == [message.id])
            #expect(try await alice.message(message.id)?.content.text == "hello")
            #expect(h.backend.storedMessageCount(in: h.room) == 0, "the backend has it while publishes are held")
            // The first event about it shows it pending; then it goes sending while the backend is still empty.
            #expect(await log.waitUntil { !$0.isEmpty })
            #expect(log.events(of: message.id).first?.message?.delivery == .pending)
            try #require(await eventually { try await alice.delivery(message.id) == .sending })
            #expect(h.backend.storedMessageCount(in: h.room) == 0)
            #expect(try await alice.isPublished(message.id) == false)

            h.backend.faults.holdsPublishes = false
            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.rows(key: message.id).count == 1)
            #expect(await log.waitUntil { _ in log.events(of: message.id).last?.message?.delivery == .sent })
            let deliveries = log.events(of: message.id).compactMap(\.message?.delivery)
            #expect(deliveries.first == .pending)
            #expect(deliveries.contains(.sending))
            #expect(deliveries.last == .sent)
        }
    }

    @Test("failed publishes retry under the same key: one row on the backend", arguments: IDScheme.allCases)
    func retriesUnderSameKey(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob) = try await h.openedPair()
            h.backend.faults.failNextPublishes(2)
            let message = try await alice.send("try again", in: h.room)

            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.backend.faults.publishCallCount == 3, "two failures and one success")
            #expect(h.rows(key: message.id).count == 1)
            #expect(h.backend.storedMessageCount(in: h.room) == 1)
            await #expect(try alice.outboxEntry(message.id) == nil)
            try #require(await eventually { try await bob.message(message.id) != nil })
            await #expect(try bob.storedMessages(in: h.room).map(\.id) == [message.id])
        }
    }

    @Test("lost publish responses are retried without a duplicate", arguments: IDScheme.allCases)
    func lostResponsesMakeOneRow(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            // Not opened: no echo can short-cut the retries, so each lost response really is retried.
            let alice = try await h.client(h.alice)
            h.backend.faults.loseNextPublishResponses(2)
            let message = try await alice.send("did it go", in: h.room)

            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.backend.faults.publishCallCount == 3)
            #expect(h.rows(key: message.id).count == 1)
            #expect(h.backend.storedMessageCount(in: h.room) == 1)
            let remote = try await alice.store.read { tx in try tx.remoteID(of: message.id, backend: alice.backend, part: 0) }
            #expect(remote == h.row(key: message.id)?.remoteID)

            _ = try await alice.open(h.room)
            #expect(try await alice.timeline(of: h.room).map(\.id) == [message.id])
            await #expect(try alice.storedMessages(in: h.room).count == 1)
        }
    }

    @Test("after the attempt limit the message is failed and retryable; retry sends it once", arguments: IDScheme.allCases)
    func attemptLimitThenRetry(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let alice = try await h.opened(h.alice)
            h.backend.faults.failNextPublishes(1000)
            let message = try await alice.send("stubborn", in: h.room)

            try #require(await eventually { try await alice.delivery(message.id)?.isFailed == true })
            let failed = try #require(try await alice.delivery(message.id))
            #expect(failed.isRetryableFailure, "\(failed)")
            #expect(h.backend.faults.publishCallCount == Harness.fastRetry.maxAttempts)
            await #expect(try alice.outboxEntry(message.id)?.status == .failed)
            #expect(h.backend.storedMessageCount(in: h.room) == 0)

            h.backend.faults.failNextPublishes(0)
            try await alice.retry(message.id)
            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.rows(key: message.id).count == 1)
            #expect(h.backend.faults.publishCallCount == Harness.fastRetry.maxAttempts + 1)
            #expect(try await alice.message(message.id)?.id == message.id)
            await #expect(try alice.storedMessages(in: h.room).count == 1)
        }
    }

    @Test("noSend is held by publishAll and published by publish(id)", arguments: IDScheme.allCases)
    func noSendHeldByPublishAll(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob) = try await h.openedPair()
            let held = try await alice.send("held back", in: h.room, noSend: true)
            #expect(held.delivery == .draft)
            let free = try await alice.send("goes now", in: h.room)
            await alice.publishAll()

            try #require(await eventually { try await alice.isPublished(free.id) })
            try #require(await eventually { try await bob.message(free.id) != nil })
            #expect(try await alice.delivery(held.id) == .draft)
            #expect(h.rows(key: held.id).isEmpty, "publishAll published a noSend message")
            #expect(try await bob.message(held.id) == nil)
            await #expect(try alice.outboxEntry(held.id)?.noSend == true)

            try await alice.publish(held.id)
            #expect(try await alice.isPublished(held.id), "publish(id) returns once the message is on the backend")
            #expect(h.rows(key: held.id).count == 1)
            try #require(await eventually { try await bob.message(held.id) != nil })
            #expect(h.backend.storedMessageCount(in: h.room) == 2)
        }
    }

    @Test("publishing a published message is a no-op", arguments: IDScheme.allCases)
    func publishIsIdempotent(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let alice = try await h.opened(h.alice)
            let message = try await alice.send("only once", in: h.room, noSend: true)
            try await alice.publish(message.id)
            #expect(try await alice.isPublished(message.id))
            let calls = h.backend.faults.publishCallCount
            try await alice.publish(message.id)
            try await alice.publish(message.id)
            await alice.publishAll()
            #expect(h.backend.faults.publishCallCount == calls, "a published message was published again")
            #expect(h.rows(key: message.id).count == 1)
            #expect(try await alice.delivery(message.id)?.isPublished == true)
        }
    }

    @Test("discard removes a draft (with a removal event); a published message cannot be discarded")
    func discard() async throws {
        try await withHarness { h in
            let (alice, bob) = try await h.openedPair()
            let log = try await EventLog.recording(alice, h.room)
            let draft = try await alice.send("never mind", in: h.room, noSend: true)
            try await alice.discard(draft.id)

            #expect(try await alice.message(draft.id) == nil)
            await #expect(try alice.outboxEntry(draft.id) == nil)
            #expect(try await alice.timeline(of: h.room).contains { $0.id == draft.id } == false)
            #expect(await log.waitUntil { $0.contains { $0.event == .removed(draft.id) } })

            await alice.publishAll()
            let sent = try await alice.send("this one stays", in: h.room)
            try #require(await eventually { try await bob.message(sent.id) != nil })
            #expect(h.rows(key: draft.id).isEmpty)
            #expect(try await bob.message(draft.id) == nil)
            await expectError(.alreadyPublished, "discarding a published message") { try await alice.discard(sent.id) }
            #expect(try await alice.isPublished(sent.id), "the failed discard must leave the message alone")
            await expectError(.unknownMessage, "discarding twice") { try await alice.discard(draft.id) }
        }
    }

    @Test("a restart while offline restores pending and draft messages and sends the pending ones once",
          arguments: IDScheme.allCases)
    func restartRestoresOutbox(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            // Slow, unlimited retries: the messages must still be pending (not failed) when the app stops.
            let slow = h.configuration(for: h.alice, retry: RetryPolicy(baseDelay: 0.05, maxDelay: 0.1, maxAttempts: 10_000))
            let first = try await h.opened(h.alice, store: "alice", configuration: slow)
            h.backend.faults.setOffline(h.alice, true)
            var pending: [MessageID] = []
            for index in 0..<3 { pending.append(try await first.send("offline \(index)", in: h.room).id) }
            let draft = try await first.send("kept as draft", in: h.room, noSend: true)
            try #require(await eventually { h.backend.faults.publishCallCount >= 3 }, "the worker tried while offline")
            await first.stop()

            // What the next launch finds on disk.
            let disk = try SQLiteStore(path: h.storePath("alice"))
            // `sending` is what a stop in the middle of an attempt leaves; start() turns it back into pending.
            let restored = try await disk.read { [pending] tx in try pending.map { try tx.message($0)?.delivery } }
            #expect(restored.allSatisfy { $0 == .pending || $0 == .sending }, "\(restored)")
            await #expect(try disk.read { tx in try tx.message(draft.id)?.delivery } == .draft)
            disk.close()
            #expect(h.backend.storedMessageCount(in: h.room) == 0)

            let second = try await h.client(h.alice, store: "alice", configuration: slow)
            for id in pending {
                let state = try #require(try await second.delivery(id))
                #expect(!state.isPublished && !state.isFailed, "restored as \(state)")
            }
            #expect(try await second.delivery(draft.id) == .draft)

            h.backend.faults.setOffline(h.alice, false)
            for id in pending { try #require(await eventually { try await second.isPublished(id) }) }
            #expect(await second.waitUntilIdle(timeout: 5))
            for id in pending { #expect(h.rows(key: id).count == 1, "\(id) is on the backend \(h.rows(key: id).count) times") }
            #expect(h.rows(key: draft.id).isEmpty, "the draft left without publish(id)")
            #expect(h.backend.storedMessageCount(in: h.room) == 3)
            #expect(try await second.delivery(draft.id) == .draft)

            _ = try await second.open(h.room)
            let timeline = try await second.timeline(of: h.room)
            #expect(Set(timeline.map(\.id)) == Set(pending + [draft.id]))
            #expect(timeline.count == 4)

            // The draft's prepared request survived the restart: publishing it by name sends it once.
            try await second.publish(draft.id)
            #expect(try await second.isPublished(draft.id))
            #expect(h.rows(key: draft.id).count == 1)
            #expect(h.backend.storedMessageCount(in: h.room) == 4)
        }
    }

    @Test("stop() returns once an in-flight publish has come back and its outcome is stored; nothing is written after")
    func stopWaitsForInFlightPublish() async throws {
        try await withHarness { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            // The answer lands 300 ms after the backend stored the message, whatever the caller does meanwhile; the
            // echo never comes live, so only the publish's outcome can mark the message sent.
            wrapped.configure {
                $0.publishAnswerDelay = .milliseconds(300)
                $0.loseLiveMessages = true
            }
            let client = try await h.opened(h.alice, store: "alice", adapter: wrapped)
            let message = try await client.send("answered after stop began", in: h.room)
            try #require(await eventually { wrapped.publishCalls >= 1 }, "the worker started publishing")
            await client.stop()

            let disk = try SQLiteStore(path: h.storePath("alice"))
            defer { disk.close() }
            let atStop = try await disk.read { tx in try tx.message(message.id)?.delivery }
            try await Task.sleep(for: .milliseconds(600))
            let later = try await disk.read { tx in try tx.message(message.id)?.delivery }
            #expect(atStop == later, "the store changed after stop() returned: \(String(describing: atStop)) → \(String(describing: later))")
            #expect(atStop?.isPublished == true, "the publish that came back during stop() was not recorded: \(String(describing: atStop))")
            await #expect(try disk.read { tx in try tx.outboxEntry(message.id) } == nil, "the outbox still holds the published message")
        }
    }

    @Test("the ordered event stream numbers events consecutively and rebuilds the timeline")
    func eventSequenceIsConsecutive() async throws {
        try await withHarness { h in
            let (alice, bob) = try await h.openedPair()
            let log = try await EventLog.recording(alice, h.room)
            h.backend.faults.failNextPublishes(1)
            var mine: [MessageID] = []
            for index in 0..<5 { mine.append(try await alice.send("mine \(index)", in: h.room).id) }
            var theirs: [MessageID] = []
            for index in 0..<5 { theirs.append(try await bob.send("theirs \(index)", in: h.room).id) }
            let draft = try await alice.send("draft", in: h.room, noSend: true)
            try await alice.discard(draft.id)
            for id in mine { try #require(await eventually { try await alice.isPublished(id) }) }
            for id in theirs { try #require(await eventually { try await alice.message(id) != nil }) }
            try await alice.react(mine[0], symbol: "👍")
            try await alice.edit(mine[1], text: "mine 1, edited")
            try #require(await log.waitUntil { events in
                events.contains { if case .contentEdited(let m) = $0.event { m.id == mine[1] } else { false } }
            })

            let events = log.events
            try #require(events.count > 20)
            for (earlier, later) in zip(events, events.dropFirst()) {
                #expect(later.sequence == earlier.sequence + 1, "sequence jumps from \(earlier.sequence) to \(later.sequence)")
            }
            #expect(events.allSatisfy { $0.conversation == h.room })

            // An observer rebuilds the timeline from the events alone.
            func rebuild(_ events: [SequencedEvent]) -> [Message] {
                var rebuilt: [MessageID: Message] = [:]
                for event in events.map(\.event) {
                    if case .removed(let id) = event { rebuilt[id] = nil } else if let message = event.message { rebuilt[message.id] = message }
                }
                return rebuilt.values.sorted { $0.position < $1.position }
            }
            #expect(try await eventually { try await rebuild(log.events) == alice.timeline(of: h.room) },
                    "the events do not rebuild the timeline")
            let timeline = try await alice.timeline(of: h.room)
            #expect(Set(timeline.map(\.id)) == Set(mine + theirs))
        }
    }
}
