import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

@Suite("Bad input: typed errors, nothing stored, nothing lost")
struct BadInputTests {
    @Test("empty and whitespace-only text is an empty message; nothing is stored or sent",
          arguments: ["", " ", "   \n\t  ", "\u{3000}\n"])
    func emptyText(text: String) async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice)
            await expectError(.emptyMessage, "text \(text.debugDescription)") { try await alice.send(text, in: h.room) }
            await expectError(.emptyMessage, "noSend \(text.debugDescription)") {
                try await alice.send(text, in: h.room, noSend: true)
            }
            await #expect(try alice.storedMessages(in: h.room).isEmpty)
            #expect(try await alice.timeline(of: h.room).isEmpty)
            #expect(try await alice.store.read { tx in try tx.outbox(backend: alice.backend) }.isEmpty)
            await alice.publishAll()
            #expect(h.backend.faults.publishCallCount == 0)
        }
    }

    @Test("text over the backend's byte limit is too large (bytes, not characters); at the limit it is sent")
    func textTooLarge() async throws {
        try await withHarness(limits: MemoryWire.Limits(maxTextBytes: 1024)) { h in
            let alice = try await h.opened(h.alice)
            #expect(alice.adapter.capabilities.maxTextBytes == 1024)
            await expectError(.contentTooLarge, "1025 ASCII bytes") {
                try await alice.send(String(repeating: "a", count: 1025), in: h.room)
            }
            // 513 characters, 1026 bytes.
            await expectError(.contentTooLarge, "two-byte characters") {
                try await alice.send(String(repeating: "é", count: 513), in: h.room)
            }
            await #expect(try alice.storedMessages(in: h.room).isEmpty)
            #expect(h.backend.faults.publishCallCount == 0)

            let fits = try await alice.send(String(repeating: "é", count: 512), in: h.room)
            try #require(await eventually { try await alice.isPublished(fits.id) })
            #expect(h.row(key: fits.id)?.text.utf8.count == 1024)
            await expectError(.contentTooLarge, "oversize edit") {
                try await alice.edit(fits.id, text: String(repeating: "b", count: 1025))
            }
            #expect(try await alice.message(fits.id)?.content.text == String(repeating: "é", count: 512))
        }
    }

    @Test("unknown message IDs are refused as unknown for every operation")
    func unknownIDs() async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice)
            let ghost = MessageID.make()
            await expectError(.unknownMessage, "publish") { try await alice.publish(ghost) }
            await expectError(.unknownMessage, "discard") { try await alice.discard(ghost) }
            await expectError(.unknownMessage, "edit") { try await alice.edit(ghost, text: "hello") }
            await expectError(.unknownMessage, "delete") { try await alice.delete(ghost) }
            await expectError(.unknownMessage, "react") { try await alice.react(ghost, symbol: "👍") }
            await expectError(.unknownMessage, "retry") { try await alice.retry(ghost) }
            await expectError(.unknownMessage, "markRead") { try await alice.markRead(ghost) }
            await expectError(.unknownMessage, "reply") { try await alice.send("re", in: h.room, replyTo: ghost) }
            await #expect(try alice.storedMessages(in: h.room).isEmpty)
            await #expect(try alice.pendingOperations().isEmpty)
            #expect(h.backend.faults.publishCallCount == 0)
        }
    }

    @Test("someone else's message cannot be edited or deleted", arguments: IDScheme.allCases)
    func notOwner(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let alice = try await h.opened(h.alice)
            let row = try await h.peerSend("bob's words")
            try #require(await eventually { try await alice.message(row.idempotencyKey) != nil })
            await expectError(.notOwner, "edit") { try await alice.edit(row.idempotencyKey, text: "alice's words") }
            await expectError(.notOwner, "delete") { try await alice.delete(row.idempotencyKey) }
            let message = try #require(try await alice.message(row.idempotencyKey))
            #expect(message.content.text == "bob's words")
            #expect(!message.isDeleted)
            #expect(h.row(key: row.idempotencyKey)?.text == "bob's words")
            #expect(h.row(key: row.idempotencyKey)?.deletedAt == nil)
            await expectError(.alreadyPublished, "discard") { try await alice.discard(row.idempotencyKey) }
            #expect(try await alice.message(row.idempotencyKey) != nil)
        }
    }

    @Test("an adapter that throws an error nobody classified before publishing: failed at once, not retried, never lost")
    func adapterThrowsBeforePublish() async throws {
        try await withHarness { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure { $0.throwBeforePublish = true }
            let alice = try await h.opened(h.alice, store: "alice", adapter: wrapped)
            let message = try await alice.send("fragile", in: h.room)
            try #require(await eventually { try await alice.delivery(message.id)?.isFailed == true })
            // Not a network blink: retrying the same call would throw the same, so the outbox does not.
            #expect(try await alice.delivery(message.id) == .failed(reason: "the adapter exploded", retryable: false))
            #expect(wrapped.publishCalls == 1)
            #expect(try await alice.message(message.id)?.content.text == "fragile")
            await #expect(try alice.outboxEntry(message.id)?.status == .failed)
            #expect(try await alice.timeline(of: h.room).map(\.id) == [message.id])
            #expect(h.rows.isEmpty)

            // Still there after a restart, still failed; a user's retry (the adapter fixed) sends it once.
            await alice.stop()
            let fixed = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            let again = try await h.opened(h.alice, store: "alice", adapter: fixed)
            #expect(try await again.delivery(message.id)?.isFailed == true)
            try await again.retry(message.id)
            try #require(await eventually { try await again.isPublished(message.id) })
            #expect(h.rows(key: message.id).count == 1)
            #expect(fixed.publishCalls == 1)
        }
    }

    @Test("an adapter that fails with a transport error after the backend stored the message: retried, failed, then one row after retry",
          arguments: IDScheme.allCases)
    func adapterThrowsAfterPublish(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure {
                $0.throwAfterPublish = true
                $0.thrown = SwitchboardError(.transport, "the answer was lost", retryable: true)
            }
            let alice = try await h.client(h.alice, adapter: wrapped)  // not opened: no echo comes to the rescue
            let message = try await alice.send("did it?", in: h.room)
            try #require(await eventually { try await alice.delivery(message.id)?.isFailed == true })
            #expect(try await alice.delivery(message.id)?.isRetryableFailure == true)
            #expect(wrapped.publishCalls == Harness.fastRetry.maxAttempts)
            #expect(h.rows(key: message.id).count == 1, "every retry must land on the same row")

            wrapped.configure { $0.throwAfterPublish = false }
            try await alice.retry(message.id)
            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.rows(key: message.id).count == 1)
            #expect(h.rows.count == 1)
            _ = try await alice.open(h.room)
            await #expect(try alice.storedMessages(in: h.room).map(\.id) == [message.id])
        }
    }

    @Test("a refusal that retrying cannot fix fails at once and is marked not retryable")
    func nonRetryableFailure() async throws {
        try await withHarness { h in
            let alice = try await h.opened(h.alice)
            h.backend.faults.failNextPublishes(1, retryable: false)
            let message = try await alice.send("refused", in: h.room)
            try #require(await eventually { try await alice.delivery(message.id)?.isFailed == true })
            #expect(h.backend.faults.publishCallCount == 1, "a non-retryable failure was retried")
            let state = try #require(try await alice.delivery(message.id))
            #expect(state == .failed(reason: state.failureReason ?? "", retryable: false), "\(state)")
            #expect(try await alice.message(message.id)?.content.text == "refused", "the failed message was lost")
            // The user may still insist: retry re-enters the ladder under the same ID.
            try await alice.retry(message.id)
            try #require(await eventually { try await alice.isPublished(message.id) })
            #expect(h.rows(key: message.id).count == 1)
        }
    }
}

extension DeliveryState {
    /// The reason of a `failed` state.
    var failureReason: String? { if case .failed(let reason, _) = self { reason } else { nil } }
}
