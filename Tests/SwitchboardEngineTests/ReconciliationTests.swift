import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

@Suite("Reconciliation: echo, duplicates, foreign IDs, delta sync, replies, waiting operations")
struct ReconciliationTests {
    @Test("the echo lands in the optimistic row: one row, server timestamp and remote ID adopted",
          arguments: IDScheme.allCases)
    func echoLandsInOptimisticRow(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            h.backend.faults.echoOnly = true  // the publish response tells nothing: only the echo can complete the row
            let alice = try await h.opened(h.alice)
            let message = try await alice.send("echo me", in: h.room)
            try #require(await eventually { try await alice.message(message.id)?.hasServerTimestamp == true })
            try #require(await eventually { try await alice.isPublished(message.id) })

            let row = try #require(h.row(key: message.id))
            let stored = try #require(try await alice.message(message.id))
            #expect(stored.timestamp == row.sentAt, "the row keeps compose time \(stored.timestamp), server says \(row.sentAt)")
            #expect(stored.isOutgoing)
            #expect(stored.delivery == .sent)
            let mapped = try await alice.store.read { tx in try tx.remoteID(of: message.id, backend: alice.backend, part: 0) }
            #expect(mapped == row.remoteID)
            #expect(try await alice.store.read { tx in try tx.messageID(backend: alice.backend, remoteID: row.remoteID) } == message.id)

            try await alice.synchronize(h.room)
            await #expect(try alice.storedMessages(in: h.room).map(\.id) == [message.id])
            #expect(try await alice.timeline(of: h.room).map(\.id) == [message.id])
            await #expect(try alice.outboxEntry(message.id) == nil)
        }
    }

    @Test("messages delivered twice render once", arguments: IDScheme.allCases)
    func duplicateDeliveriesAreOneRow(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob) = try await h.openedPair()
            h.backend.faults.duplicateDeliveries = true
            var ids: [MessageID] = []
            for index in 0..<8 { ids.append(try await bob.send("dup \(index)", in: h.room).id) }
            for index in 0..<4 { ids.append(try await alice.send("mine \(index)", in: h.room).id) }
            for id in ids {
                try #require(await eventually { try await alice.isPublished(id) })
                try #require(await eventually { try await bob.isPublished(id) })
            }
            try await alice.synchronize(h.room)
            try await bob.synchronize(h.room)

            for client in [alice, bob] {
                let stored = try await client.storedMessages(in: h.room).map(\.id)
                #expect(stored.count == ids.count)
                #expect(Set(stored) == Set(ids))
                let window = try await client.timeline(of: h.room).map(\.id)
                #expect(window.count == Set(window).count, "the timeline shows a message twice")
                #expect(Set(window) == Set(ids))
            }
            #expect(h.backend.storedMessageCount(in: h.room) == ids.count)
        }
    }

    @Test("a foreign message without an idempotency key gets the derived MessageID, once", arguments: IDScheme.allCases)
    func foreignMessageGetsDerivedID(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure { $0.stripForeignKeys = true }
            let before = try await h.peerSend("from history")
            let alice = try await h.opened(h.alice, adapter: wrapped)
            h.backend.faults.duplicateDeliveries = true
            let live = try await h.peerSend("from the live stream")

            for row in [before, live] {
                let derived = MessageID.derived(backend: alice.backend, remote: row.remoteID)
                #expect(derived != row.idempotencyKey)
                try #require(await eventually { try await alice.message(derived) != nil }, "\(row.text) not under its derived ID")
                let message = try #require(try await alice.message(derived))
                #expect(message.content.text == row.text)
                #expect(message.sender == h.bob)
                #expect(!message.isOutgoing)
                #expect(try await alice.message(row.idempotencyKey) == nil)
                #expect(try await alice.store.read { tx in try tx.messageID(backend: alice.backend, remoteID: row.remoteID) } == derived)
            }
            // Ingesting again (delta sync from scratch, after a restart) yields the same rows.
            try await alice.store.write { tx in try tx.setCursor(nil, conversation: h.room, backend: alice.backend, kind: .changes) }
            try await alice.synchronize(h.room)
            await #expect(try alice.storedMessages(in: h.room).count == 2)
            // A second client on its own store derives the same IDs.
            let restarted = try await h.opened(h.alice, adapter: wrapped)
            await #expect(Set(try restarted.storedMessages(in: h.room).map(\.id))
                        == Set([before, live].map { MessageID.derived(backend: alice.backend, remote: $0.remoteID) }))
        }
    }

    @Test("delta sync after time away brings new messages, edits, deletes and reactions", arguments: IDScheme.allCases)
    func deltaSyncAfterGap(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let bob = try await h.opened(h.bob, store: "bob")
            let first = try await h.opened(h.alice, store: "alice")
            var ids: [MessageID] = []
            for index in 0..<4 { ids.append(try await bob.send("old \(index)", in: h.room).id) }
            let mine = try await first.send("alice was here", in: h.room)
            for id in ids { try #require(await eventually { try await first.message(id) != nil }) }
            try #require(await eventually { try await bob.message(mine.id) != nil })
            await first.stop()

            // While alice is away.
            let fresh = try await bob.send("new while away", in: h.room)
            try #require(await eventually { try await bob.isPublished(fresh.id) })
            try await bob.edit(ids[0], text: "old 0, edited")
            try await bob.delete(ids[1])
            try await bob.react(ids[2], symbol: "🎉")
            try await bob.react(mine.id, symbol: "👀")
            try await bob.markRead(mine.id)

            let alice = try await h.opened(h.alice, store: "alice")
            #expect(try await alice.message(fresh.id)?.content.text == "new while away")
            let edited = try #require(try await alice.message(ids[0]))
            #expect(edited.content.text == "old 0, edited")
            #expect(edited.editedAt != nil)
            let deleted = try #require(try await alice.message(ids[1]))
            #expect(deleted.isDeleted)
            #expect(deleted.content.text.isEmpty)
            #expect(try await alice.message(ids[2])?.reactions.map(\.symbol) == ["🎉"])
            #expect(try await alice.message(ids[2])?.reactions.map(\.user) == [h.bob])
            #expect(try await alice.message(mine.id)?.reactions.map(\.symbol) == ["👀"])
            #expect(try await alice.delivery(mine.id) == .read)
            #expect(try await alice.message(ids[3])?.content.text == "old 3")
            let stored = try await alice.storedMessages(in: h.room).map(\.id)
            #expect(stored.count == 6)
            #expect(Set(stored) == Set(ids + [mine.id, fresh.id]))
            #expect(try await alice.timeline(of: h.room).map(\.id) == stored)
        }
    }

    @Test("a reply points at the same MessageID on the receiving side", arguments: IDScheme.allCases)
    func replyTargetsMap(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob) = try await h.openedPair()
            let question = try await alice.send("lunch?", in: h.room)
            try #require(await eventually { try await bob.message(question.id) != nil })
            let answer = try await bob.send("yes", in: h.room, replyTo: question.id)
            #expect(answer.content.replyTo == question.id)
            try #require(await eventually { try await alice.message(answer.id) != nil })
            #expect(try await alice.message(answer.id)?.content.replyTo == question.id)

            let followUp = try await alice.send("12:30", in: h.room, replyTo: answer.id)
            try #require(await eventually { try await bob.message(followUp.id) != nil })
            #expect(try await bob.message(followUp.id)?.content.replyTo == answer.id)

            // On the wire the reply carries the backend's ID of its target.
            #expect(h.row(key: answer.id)?.replyTo == h.row(key: question.id)?.remoteID)
            #expect(h.row(key: followUp.id)?.replyTo == h.row(key: answer.id)?.remoteID)
        }
    }

    @Test("a reaction that arrives before its message waits in the queue and applies when the message arrives",
          arguments: IDScheme.allCases)
    func reactionWaitsForItsMessage(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure { $0.heldTexts = ["late message"] }
            let alice = try await h.opened(h.alice, adapter: wrapped)
            let row = try await h.peerSend("late message")
            try h.backend.setReaction("🔥", isActive: true, on: row.remoteID, in: h.room, as: h.bob)

            // The reaction can reach the client twice (live, and through the sync the stream's connect triggers);
            // every copy waits for the same message. (That the copies are not collapsed is checked separately.)
            try #require(await eventually { try await !alice.pendingOperations().isEmpty }, "the reaction did not wait")
            #expect(try await alice.message(row.idempotencyKey) == nil)
            let waiting = try await alice.pendingOperations()
            #expect(waiting.allSatisfy { $0.kind == "incoming" && $0.waitKey == .remote(row.remoteID, on: alice.backend) },
                    "\(waiting.map(\.waitKey))")

            wrapped.releaseHeld()
            try #require(await eventually { try await alice.message(row.idempotencyKey)?.reactions.isEmpty == false })
            let message = try #require(try await alice.message(row.idempotencyKey))
            #expect(message.reactions.map(\.symbol) == ["🔥"])
            #expect(message.reactions.map(\.user) == [h.bob])
            await #expect(try alice.pendingOperations().isEmpty)
        }
    }

    @Test("a waiting change that a re-sync fetches again waits in the queue once, and applies once")
    func refetchedWaitingChangeIsQueuedOnce() async throws {
        try await withHarness { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure { $0.heldTexts = ["late message"] }
            let alice = try await h.opened(h.alice, adapter: wrapped)
            let before = try h.backend.latestCursor(in: h.room, as: h.alice)
            let row = try await h.peerSend("late message")
            try h.backend.setReaction("🔥", isActive: true, on: row.remoteID, in: h.room, as: h.bob)
            let marker = try await h.peerSend("marker")
            try #require(await eventually { try await alice.message(marker.idempotencyKey) != nil })
            try #require(await eventually { try await !alice.pendingOperations().isEmpty })

            // A reconnect's refetch overlaps what the socket already delivered (here: the feed from before the reaction).
            try await alice.store.write { tx in try tx.setCursor(before, conversation: h.room, backend: alice.backend, kind: .changes) }
            try await alice.synchronize(h.room)
            try await alice.synchronize(h.room)
            let queued = try await alice.pendingOperations()
            #expect(queued.count == 1, "one waiting reaction is queued \(queued.count) times")

            wrapped.releaseHeld()
            try #require(await eventually { try await alice.message(row.idempotencyKey)?.reactions.isEmpty == false })
            #expect(try await alice.message(row.idempotencyKey)?.reactions.map(\.symbol) == ["🔥"])
            await #expect(try alice.pendingOperations().isEmpty)
        }
    }

    @Test("out-of-order live delivery (reaction before message) still ends with the reaction applied")
    func outOfOrderReaction() async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice)
            h.backend.faults.outOfOrderDelivery = true
            let row = try await h.peerSend("swapped")
            try h.backend.setReaction("👍", isActive: true, on: row.remoteID, in: h.room, as: h.bob)
            try #require(await eventually { try await alice.message(row.idempotencyKey)?.reactions.count == 1 })
            #expect(try await alice.message(row.idempotencyKey)?.reactions.map(\.symbol) == ["👍"])
            await #expect(try alice.pendingOperations().isEmpty)
            h.backend.faults.outOfOrderDelivery = false
        }
    }
}
