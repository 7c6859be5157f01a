import Foundation
import MemoryAdapter
import SwitchboardCore
import Testing

@Suite("Memory edits, deletes, reactions and receipts")
struct MutationTests {
    @Test("edits follow the server clock's 15-minute window", arguments: IDScheme.allCases)
    func editWindowUsesServerClock(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let (prepared, remoteID) = try await f.send("draft", from: f.alice)
        f.clock.advance(by: 14 * 60)
        try await f.alice.edit(remoteID, in: f.room, text: "fixed")
        let row = try #require(f.backend.messages(in: f.room).first)
        #expect(row.text == "fixed")
        #expect(row.editedAt == f.clock.now)
        #expect(row.idempotencyKey == prepared.id)
        #expect(row.remoteID == remoteID, "an edit never renames the message")
        f.clock.advance(by: 2 * 60)
        await expectError(.refused) { try await f.alice.edit(remoteID, in: f.room, text: "too late") }
        #expect(f.backend.messages(in: f.room).first?.text == "fixed")
        await expectError(.emptyMessage) {
            let (_, other) = try await f.send("other", from: f.alice)
            try await f.alice.edit(other, in: f.room, text: " ")
        }
        await expectError(.notFound) { try await f.alice.edit("nope", in: f.room, text: "x") }
    }

    @Test("deletes tombstone within the 2-hour window and are idempotent", arguments: IDScheme.allCases)
    func deleteWindowAndTombstone(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let (_, early) = try await f.send("early", from: f.alice)
        let (_, late) = try await f.send("late", from: f.alice)
        f.clock.advance(by: 2 * 3600 - 1)
        try await f.alice.delete(early, in: f.room)
        let cursor = try await f.alice.latestCursor(in: f.room)
        try await f.alice.delete(early, in: f.room)
        #expect(try await f.alice.latestCursor(in: f.room) == cursor, "deleting again changes nothing")
        let tombstone = try #require(f.backend.messages(in: f.room).first)
        #expect(tombstone.deletedAt == f.clock.now)
        #expect(tombstone.text.isEmpty)
        #expect(f.backend.storedMessageCount(in: f.room) == 2, "the row stays as a tombstone")
        await expectError(.refused) { try await f.alice.edit(early, in: f.room, text: "revive") }
        f.clock.advance(by: 2)
        await expectError(.refused) { try await f.alice.delete(late, in: f.room) }
        #expect(f.backend.messages(in: f.room).last?.deletedAt == nil)
    }

    @Test("only the sender may edit or delete; refusal faults refuse", arguments: IDScheme.allCases)
    func onlySenderAndRefusals(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let (_, remoteID) = try await f.send("mine", from: f.alice)
        await expectError(.refused) { try await f.bob.edit(remoteID, in: f.room, text: "yours") }
        await expectError(.refused) { try await f.bob.delete(remoteID, in: f.room) }
        f.backend.faults.refuseEdits = true
        f.backend.faults.refuseDeletes = true
        f.backend.faults.refuseReactions = true
        await expectError(.refused) { try await f.alice.edit(remoteID, in: f.room, text: "no") }
        await expectError(.refused) { try await f.alice.delete(remoteID, in: f.room) }
        await expectError(.refused) { try await f.bob.setReaction("👍", isActive: true, on: remoteID, in: f.room) }
        f.backend.faults.reset()
        try await f.alice.edit(remoteID, in: f.room, text: "yes")
        try await f.bob.setReaction("👍", isActive: true, on: remoteID, in: f.room)
        try await f.alice.delete(remoteID, in: f.room)
        await expectError(.refused) { try await f.bob.setReaction("👎", isActive: true, on: remoteID, in: f.room) }
    }

    /// Every call names the conversation it acts in; a message of another conversation (even one the caller
    /// belongs to) is not found there, and nothing of it or of either conversation changes.
    @Test("an edit, delete, reaction or receipt naming another conversation than its message's is notFound and changes nothing",
          arguments: IDScheme.allCases)
    func crossConversationRefused(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let other: ConversationID = "other"
        try f.backend.createConversation(other, members: ["alice", "bob"])
        let prepared = try await f.alice.prepare(f.outgoing("in the other room", from: f.alice, in: other), noSend: false)
        _ = try await f.alice.publish(prepared)
        let target = try #require(f.backend.messages(in: other).first).remoteID
        let roomCursor = try await f.alice.latestCursor(in: f.room)
        let otherCursor = try await f.alice.latestCursor(in: other)
        await expectError(.notFound) { try await f.alice.edit(target, in: f.room, text: "moved") }
        await expectError(.notFound) { try await f.alice.delete(target, in: f.room) }
        await expectError(.notFound) { try await f.bob.setReaction("👍", isActive: true, on: target, in: f.room) }
        await expectError(.notFound) { try await f.bob.sendReceipt(.read, for: target, in: f.room) }
        #expect(try await f.alice.latestCursor(in: f.room) == roomCursor)
        #expect(try await f.alice.latestCursor(in: other) == otherCursor)
        let row = try #require(f.backend.messages(in: other).first)
        #expect(row.text == "in the other room" && row.editedAt == nil && row.deletedAt == nil)
        #expect(f.backend.messages(in: f.room).isEmpty)
        let page = try await f.bob.history(in: other, before: nil, limit: 5)
        #expect(page.reactions.isEmpty && page.receipts.isEmpty)
    }

    /// A fixture with `policy`, a message of Alice's to react to, and Alice's live events recorded.
    private func reactionFixture(_ scheme: IDScheme, policy: ReactionPolicy) async throws
        -> (Fixture, RemoteID, EventRecorder) {
        let f = try Fixture(scheme, policy: policy)
        #expect(f.bob.reactionPolicy == policy)
        let (_, target) = try await f.send("react", from: f.alice)
        return (f, target, EventRecorder.recording(f.alice.liveEvents(in: f.room)))
    }

    @Test("one reaction per user per symbol: re-tapping toggles", arguments: IDScheme.allCases)
    func reactionsPerSymbol(scheme: IDScheme) async throws {
        let (f, target, live) = try await reactionFixture(scheme, policy: .onePerUserPerSymbol)
        defer { live.stop() }
        let cursor = try await f.bob.latestCursor(in: f.room)
        try await f.bob.setReaction("👍", isActive: true, on: target, in: f.room)
        try await f.bob.setReaction("❤️", isActive: true, on: target, in: f.room)
        try await f.bob.setReaction("👍", isActive: true, on: target, in: f.room)
        try await f.bob.setReaction("👍", isActive: false, on: target, in: f.room)
        try await f.bob.setReaction("🙃", isActive: false, on: target, in: f.room)
        let page = try await f.bob.history(in: f.room, before: nil, limit: 1)
        #expect(page.reactions.map(\.symbol) == ["❤️"])
        let changes = try await f.allChanges(after: cursor, as: f.bob).compactMap(\.reaction)
        #expect(changes.map(\.symbol) == ["❤️", "👍"])
        #expect(changes.map(\.isActive) == [true, false])
        #expect(await live.waitUntil { $0.compactMap(\.reaction).count == 3 })
        await live.settle()
        #expect(live.events.compactMap(\.reaction).map { "\($0.symbol)\($0.isActive)" } == ["👍true", "❤️true", "👍false"])
    }

    @Test("one reaction per user: a new symbol replaces the old one, reported removed", arguments: IDScheme.allCases)
    func reactionsOnePerUser(scheme: IDScheme) async throws {
        let (f, target, live) = try await reactionFixture(scheme, policy: .onePerUser)
        defer { live.stop() }
        try await f.alice.setReaction("🔥", isActive: true, on: target, in: f.room)
        let cursor = try await f.bob.latestCursor(in: f.room)
        try await f.bob.setReaction("👍", isActive: true, on: target, in: f.room)
        try await f.bob.setReaction("❤️", isActive: true, on: target, in: f.room)
        #expect(await live.waitUntil { $0.compactMap(\.reaction).count == 4 })
        #expect(live.events.compactMap(\.reaction).map { "\($0.user):\($0.symbol)\($0.isActive)" }
                == ["alice:🔥true", "bob:👍true", "bob:👍false", "bob:❤️true"])
        let page = try await f.bob.history(in: f.room, before: nil, limit: 1)
        #expect(Set(page.reactions.map { "\($0.user):\($0.symbol)" }) == ["alice:🔥", "bob:❤️"])
        let changes = try await f.allChanges(after: cursor, as: f.bob).compactMap(\.reaction)
        #expect(changes.map { "\($0.symbol)\($0.isActive)" } == ["👍false", "❤️true"])
    }

    @Test("receipts climb and never step back", arguments: IDScheme.allCases)
    func receiptsNeverStepBack(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let (_, target) = try await f.send("read me", from: f.alice)
        try await f.bob.sendReceipt(.delivered, for: target, in: f.room)
        try await f.bob.sendReceipt(.read, for: target, in: f.room)
        let cursor = try await f.bob.latestCursor(in: f.room)
        try await f.bob.sendReceipt(.delivered, for: target, in: f.room)
        try await f.bob.sendReceipt(.read, for: target, in: f.room)
        try await f.alice.sendReceipt(.read, for: target, in: f.room)
        #expect(try await f.bob.latestCursor(in: f.room) == cursor, "lower, equal and self receipts change nothing")
        let receipts = try await f.allChanges(after: nil, as: f.alice).compactMap(\.receipt)
        #expect(receipts.map(\.state) == [.read])
        #expect(receipts.map(\.user) == ["bob"])
        let page = try await f.alice.history(in: f.room, before: nil, limit: 5)
        #expect(page.receipts.map(\.state) == [.read])
    }
}
