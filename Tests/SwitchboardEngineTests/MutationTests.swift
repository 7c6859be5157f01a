import Foundation
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

@Suite("Edits, deletes, reactions, receipts, typing")
struct MutationTests {
    /// Alice and bob with the conversation open, and one message of alice that bob has received.
    private static func sentMessage(_ h: Harness, text: String = "original",
                                    aliceAdapter: (any ChatAdapter)? = nil) async throws -> (ChatClient, ChatClient, MessageID) {
        let alice = try await h.opened(h.alice, adapter: aliceAdapter)
        let bob = try await h.opened(h.bob)
        let id = try await alice.send(text, in: h.room).id
        try #require(await eventually { try await alice.isPublished(id) })
        try #require(await eventually { try await bob.message(id) != nil })
        // The live stream is ordered: once alice sees a later message, her own echo has been handled too.
        let marker = try await h.peerSend("marker")
        try #require(await eventually { try await alice.message(marker.idempotencyKey) != nil })
        return (alice, bob, id)
    }

    /// The texts carried by the text-changing events of one message, in order.
    private static func editTexts(_ log: EventLog, _ id: MessageID) -> [String] {
        log.events(of: id).compactMap { event in
            if case .contentEdited(let message) = event { message.content.text } else { nil }
        }
    }

    // MARK: Edit

    @Test("an edit within the window shows at once and reaches the peer", arguments: IDScheme.allCases)
    func editWithinWindow(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            h.clock.advance(by: 14 * 60)
            try await alice.edit(id, text: "corrected")
            let local = try #require(try await alice.message(id))
            #expect(local.content.text == "corrected")
            #expect(local.editedAt != nil)
            #expect(h.row(key: id)?.text == "corrected")
            try #require(await eventually { try await bob.message(id)?.content.text == "corrected" })
            #expect(try await bob.message(id)?.editedAt != nil)
            await #expect(try bob.storedMessages(in: h.room).filter { $0.content.text != "marker" }.map(\.id) == [id],
                    "the edit arrived as a new message")
        }
    }

    @Test("an edit after 16 minutes is refused before any request and leaves the text")
    func editWindowExpired() async throws {
        try await withHarness { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            let log = try await EventLog.recording(alice, h.room)
            h.clock.advance(by: 16 * 60)
            await expectError(.editWindowExpired, "late edit") { try await alice.edit(id, text: "too late") }
            #expect(try await alice.message(id)?.content.text == "original")
            #expect(try await alice.message(id)?.editedAt == nil)
            #expect(h.row(key: id)?.text == "original")
            #expect(h.row(key: id)?.editedAt == nil)
            #expect(try await bob.message(id)?.content.text == "original")
            #expect(Self.editTexts(log, id).isEmpty, "a refused-before-sending edit still emitted events")
        }
    }

    @Test("an edit the backend refuses rolls back; the events show the edit then the rollback")
    func editRefusedRollsBack() async throws {
        try await withHarness { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            let log = try await EventLog.recording(alice, h.room)
            h.backend.faults.refuseEdits = true
            await expectError(.refused, "refused edit") { try await alice.edit(id, text: "not allowed") }
            #expect(try await alice.message(id)?.content.text == "original")
            #expect(try await alice.message(id)?.editedAt == nil)
            #expect(try await alice.timeline(of: h.room).first { $0.id == id }?.content.text == "original")
            #expect(await log.waitUntil { _ in Self.editTexts(log, id).count >= 2 })
            #expect(Self.editTexts(log, id) == ["not allowed", "original"])
            #expect(h.row(key: id)?.text == "original")
            #expect(try await bob.message(id)?.content.text == "original")
        }
    }

    // MARK: Delete

    @Test("a delete within the window leaves a tombstone on both sides", arguments: IDScheme.allCases)
    func deleteWithinWindow(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            h.clock.advance(by: 119 * 60)
            try await alice.delete(id)
            let local = try #require(try await alice.message(id))
            #expect(local.isDeleted)
            #expect(local.content.text.isEmpty)
            #expect(h.row(key: id)?.deletedAt != nil)
            try #require(await eventually { try await bob.message(id)?.isDeleted == true })
            #expect(try await bob.message(id)?.content.text.isEmpty == true)
            await #expect(try bob.storedMessages(in: h.room).filter { $0.content.text != "marker" }.map(\.id) == [id],
                    "the tombstone must stay as the same row")
        }
    }

    @Test("a late copy of a message arriving after its delete does not bring the text back")
    func lateCopyAfterDeleteKeepsTombstone() async throws {
        try await withHarness { h in
            // Alice's own echo is delayed (out-of-order delivery): it arrives only after she deleted the message.
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            wrapped.configure { $0.heldTexts = ["original"] }
            let (alice, _, id) = try await Self.sentMessage(h, aliceAdapter: wrapped)
            try await alice.delete(id)
            #expect(try await alice.message(id)?.content.text == "")
            wrapped.releaseHeld()
            let marker = try await h.peerSend("after the late copy")
            try #require(await eventually { try await alice.message(marker.idempotencyKey) != nil })
            let tombstone = try #require(try await alice.message(id))
            #expect(tombstone.isDeleted)
            #expect(tombstone.content.text == "", "the deleted message shows \"\(tombstone.content.text)\" again")
        }
    }

    @Test("a delete after two hours is refused before any request and leaves the message")
    func deleteWindowExpired() async throws {
        try await withHarness { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            h.clock.advance(by: 2 * 3600 + 60)
            await expectError(.deleteWindowExpired, "late delete") { try await alice.delete(id) }
            #expect(try await alice.message(id)?.isDeleted == false)
            #expect(try await alice.message(id)?.content.text == "original")
            #expect(h.row(key: id)?.deletedAt == nil)
            #expect(try await bob.message(id)?.isDeleted == false)
        }
    }

    @Test("a delete the backend refuses rolls back; the events show the delete then the restore")
    func deleteRefusedRollsBack() async throws {
        try await withHarness { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            let log = try await EventLog.recording(alice, h.room)
            h.backend.faults.refuseDeletes = true
            await expectError(.refused, "refused delete") { try await alice.delete(id) }
            let restored = try #require(try await alice.message(id))
            #expect(!restored.isDeleted)
            #expect(restored.content.text == "original")
            #expect(try await alice.timeline(of: h.room).first { $0.id == id }?.isDeleted == false)
            let deletes = { log.events(of: id).compactMap { event -> Message? in
                if case .deleted(let message) = event { message } else { nil }
            } }
            #expect(await log.waitUntil { _ in deletes().count >= 2 })
            #expect(deletes().map(\.isDeleted) == [true, false])
            #expect(deletes().last?.content.text == "original")
            #expect(h.row(key: id)?.deletedAt == nil)
            #expect(try await bob.message(id)?.isDeleted == false)
        }
    }

    // MARK: Reactions

    /// The symbols of alice's reactions to `id` as `client` shows them, sorted.
    private static func aliceSymbols(on id: MessageID, in client: ChatClient, _ h: Harness) async throws -> [String] {
        (try await client.message(id)?.reactions.filter { $0.user == h.alice }.map(\.symbol) ?? []).sorted()
    }

    /// Alice taps `symbol` on `id`; expects her client to show `expected` at once and bob's to come to show it.
    private static func react(_ symbol: String, on id: MessageID, alice: ChatClient, bob: ChatClient, _ h: Harness,
                              expecting expected: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws {
        try await alice.react(id, symbol: symbol)
        #expect(try await aliceSymbols(on: id, in: alice, h) == expected, sourceLocation: sourceLocation)
        try #require(await eventually { try await aliceSymbols(on: id, in: bob, h) == expected }, sourceLocation: sourceLocation)
    }

    @Test("one reaction per user per symbol: re-tapping toggles, symbols add up; the peer agrees")
    func reactionsToggle() async throws {
        try await withHarness(policy: .onePerUserPerSymbol) { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            try await Self.react("👍", on: id, alice: alice, bob: bob, h, expecting: ["👍"])
            try await Self.react("👍", on: id, alice: alice, bob: bob, h, expecting: [])
            try await alice.react(id, symbol: "👍")
            try await Self.react("❤️", on: id, alice: alice, bob: bob, h, expecting: ["❤️", "👍"].sorted())
            // The echo of the changes settles on the same set on alice's side.
            try await alice.synchronize(h.room)
            #expect(try await Self.aliceSymbols(on: id, in: alice, h) == ["❤️", "👍"].sorted())
        }
    }

    @Test("one reaction per user: a new symbol replaces the old, re-tapping removes it; the peer agrees")
    func reactionsReplace() async throws {
        try await withHarness(policy: .onePerUser) { h in
            let (alice, bob, id) = try await Self.sentMessage(h)
            try await Self.react("👍", on: id, alice: alice, bob: bob, h, expecting: ["👍"])
            try await Self.react("❤️", on: id, alice: alice, bob: bob, h, expecting: ["❤️"])
            try await alice.synchronize(h.room)
            try await bob.synchronize(h.room)
            #expect(try await Self.aliceSymbols(on: id, in: alice, h) == ["❤️"])
            #expect(try await Self.aliceSymbols(on: id, in: bob, h) == ["❤️"])
            try await Self.react("❤️", on: id, alice: alice, bob: bob, h, expecting: [])
        }
    }

    @Test("an echo of an earlier reaction that arrives while a newer one is on its way does not undo the newer one",
          arguments: [ReactionPolicy.onePerUser, .onePerUserPerSymbol])
    func staleReactionEchoWhileInFlight(_ policy: ReactionPolicy) async throws {
        try await withHarness(policy: policy) { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            let (alice, bob, id) = try await Self.sentMessage(h, aliceAdapter: wrapped)
            func symbols(_ client: ChatClient) async throws -> [String] {
                (try await client.message(id)?.reactions.filter { $0.user == h.alice }.map(\.symbol) ?? []).sorted()
            }
            try await alice.react(id, symbol: "👍")
            // The first change's echo, held up on the way, arrives while the second change is being sent.
            let remote = try #require(h.row(key: id)?.remoteID)
            let stale = RemoteReaction(target: remote, conversation: h.room, user: h.alice, symbol: "👍", isActive: true,
                                       at: h.clock.now)
            wrapped.configure { knobs in
                knobs.beforeReaction = { [weak wrapped] in
                    wrapped?.inject(.change(.reaction(stale)))
                    try? await Task.sleep(for: .milliseconds(100))  // time for the engine to take the echo in
                }
            }
            // One per user: ❤️ replaces 👍. One per symbol: re-tapping 👍 removes it.
            let second = policy == .onePerUser ? "❤️" : "👍"
            let expected = policy == .onePerUser ? ["❤️"] : []
            try await alice.react(id, symbol: second)
            #expect(try await symbols(alice) == expected, "right after the change returns")
            wrapped.configure { $0.beforeReaction = nil }
            try #require(await eventually { try await symbols(bob) == expected })
            try await alice.synchronize(h.room)
            #expect(try await symbols(alice) == expected)
        }
    }

    @Test("a refused reaction rolls back")
    func reactionRefusedRollsBack() async throws {
        try await withHarness { h in
            let (alice, _, id) = try await Self.sentMessage(h)
            h.backend.faults.refuseReactions = true
            await expectError(.refused, "refused reaction") { try await alice.react(id, symbol: "👍") }
            #expect(try await alice.message(id)?.reactions.isEmpty == true)
        }
    }

    // MARK: Receipts

    @Test("receipts climb delivered then read, and a late delivered never lowers the state", arguments: IDScheme.allCases)
    func receiptsClimb(scheme: IDScheme) async throws {
        try await withHarness(scheme) { h in
            let wrapped = WrappedAdapter(h.backend.makeAdapter(for: h.alice))
            let (alice, bob, id) = try await Self.sentMessage(h, aliceAdapter: wrapped)
            let log = try await EventLog.recording(alice, h.room)
            #expect(try await alice.delivery(id) == .sent)

            try await bob.markDelivered(id)
            try #require(await eventually { try await alice.delivery(id) == .delivered })
            try await bob.markRead(id)
            try #require(await eventually { try await alice.delivery(id) == .read })
            try await bob.markDelivered(id)  // a no-op for bob's client and the backend

            // A stale "delivered" (a replay from before the read) reaches alice anyway.
            let remote = try #require(h.row(key: id)?.remoteID)
            wrapped.inject(.change(.receipt(RemoteReceipt(target: remote, conversation: h.room, user: h.bob,
                                                          state: .delivered, at: h.clock.now))))
            try await alice.synchronize(h.room)
            let marker = try await h.peerSend("after the stale receipt")
            try #require(await eventually { try await alice.message(marker.idempotencyKey) != nil })

            #expect(try await alice.delivery(id) == .read)
            #expect(try await alice.receipts(of: id).map(\.state) == [.read])
            #expect(try await bob.receipts(of: id).map(\.state) == [.read])
            let climbed = log.events(of: id).compactMap { event -> DeliveryState? in
                if case .receiptChanged(let message, _) = event { message.delivery } else { nil }
            }
            #expect(climbed == [.delivered, .read], "the sender saw \(climbed)")
        }
    }

    // MARK: Typing

    @Test("typing is debounced, cleared after idle, and never stored")
    func typingIsEphemeral() async throws {
        try await withHarness { h in
            let aliceConfiguration = h.configuration(for: h.alice, typingDebounce: 5, typingIdleTimeout: 0.3)
            let bobConfiguration = h.configuration(for: h.bob, remoteTypingTimeout: 60)
            let alice = try await h.opened(h.alice, configuration: aliceConfiguration)
            let bob = try await h.opened(h.bob, configuration: bobConfiguration)
            let seen = try await EventLog.recording(bob, h.room)
            let own = try await EventLog.recording(alice, h.room)
            func typing(_ log: EventLog) -> [Bool] {
                log.events.compactMap { event in
                    if case .typingChanged(let user, let isTyping) = event.event, user == h.alice { isTyping } else { nil }
                }
            }

            try await alice.setTyping(true, in: h.room)
            try await alice.setTyping(true, in: h.room)
            try #require(await seen.waitUntil { _ in typing(seen).contains(true) })
            // Nobody said "stopped": the clear comes from alice's idle timer (bob's own timeout is a minute).
            try #require(await seen.waitUntil(timeout: 30) { _ in typing(seen).contains(false) }, "typing never cleared")
            #expect(typing(seen) == [true, false], "bob saw \(typing(seen))")
            #expect(typing(own).isEmpty, "alice was shown her own typing")

            await #expect(try alice.storedMessages(in: h.room).isEmpty)
            await #expect(try bob.storedMessages(in: h.room).isEmpty)
            #expect(h.rows.isEmpty)
            #expect(try await alice.pendingOperations().isEmpty)
            #expect(try await bob.pendingOperations().isEmpty)
            #expect(try await bob.timeline(of: h.room).isEmpty)
        }
    }
}
