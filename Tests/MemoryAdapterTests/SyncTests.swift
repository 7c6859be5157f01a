import Foundation
import MemoryAdapter
import SwitchboardCore
import Testing

@Suite("Memory history and delta sync")
struct SyncTests {
    @Test("changes after a cursor report later edits, deletes, reaction removals and receipts", arguments: IDScheme.allCases)
    func changesReportLaterUpdates(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let (kept, keptID) = try await f.send("kept", from: f.alice)
        let (gone, goneID) = try await f.send("gone", from: f.alice)
        let (quiet, _) = try await f.send("untouched", from: f.alice)
        try await f.bob.setReaction("👍", isActive: true, on: keptID, in: f.room)
        let cursor = try #require(try await f.bob.latestCursor(in: f.room))

        let nothing = try await f.bob.changes(in: f.room, after: cursor, limit: 10)
        #expect(nothing.changes.isEmpty)
        #expect(nothing.cursor == cursor)
        #expect(!nothing.hasMore)

        f.clock.advance(by: 60)
        try await f.alice.edit(keptID, in: f.room, text: "kept, edited")
        try await f.alice.delete(goneID, in: f.room)
        try await f.bob.setReaction("👍", isActive: false, on: keptID, in: f.room)
        try await f.bob.sendReceipt(.read, for: keptID, in: f.room)
        let (fresh, _) = try await f.send("fresh", from: f.alice)

        let batch = try await f.bob.changes(in: f.room, after: cursor, limit: 100)
        #expect(batch.cursor == (try await f.bob.latestCursor(in: f.room)))
        #expect(!batch.hasMore)
        let messages = batch.changes.compactMap(\.message)
        #expect(messages.map(\.idempotencyKey) == [kept.id, gone.id, fresh.id])
        #expect(!messages.contains { $0.idempotencyKey == quiet.id })
        let edited = try #require(messages.first { $0.idempotencyKey == kept.id })
        #expect(edited.text == "kept, edited")
        #expect(edited.editedAt == f.clock.now)
        let deleted = try #require(messages.first { $0.idempotencyKey == gone.id })
        #expect(deleted.deletedAt != nil)
        #expect(deleted.text.isEmpty)
        let reaction = try #require(batch.changes.compactMap(\.reaction).first)
        #expect(reaction.isActive == false)
        #expect(reaction.symbol == "👍")
        #expect(reaction.target == keptID)
        let receipt = try #require(batch.changes.compactMap(\.receipt).first)
        #expect(receipt.state == .read)
        #expect(receipt.user == "bob")
    }

    @Test("changes page by limit, each item once at its latest version", arguments: IDScheme.allCases)
    func changesPageByLimit(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let empty = try await f.alice.changes(in: f.room, after: nil, limit: 10)
        #expect(empty.changes.isEmpty)
        #expect(empty.cursor == nil)
        var ids: [RemoteID] = []
        for index in 0..<5 { ids.append(try await f.send("m\(index)", from: f.alice).remoteID) }
        try await f.alice.edit(ids[0], in: f.room, text: "m0 again")
        try await f.alice.edit(ids[0], in: f.room, text: "m0 thrice")

        var cursor: Cursor?
        var seen: [String] = []
        var pages = 0
        while true {
            let batch = try await f.alice.changes(in: f.room, after: cursor, limit: 2)
            pages += 1
            seen += batch.changes.compactMap(\.message).map(\.text)
            cursor = batch.cursor
            if !batch.hasMore { break }
        }
        #expect(pages == 3)
        #expect(seen == ["m1", "m2", "m3", "m4", "m0 thrice"])
        #expect(cursor == (try await f.alice.latestCursor(in: f.room)))
        await expectError(.invalidArgument) { _ = try await f.alice.changes(in: f.room, after: "abc", limit: 2) }
        await expectError(.invalidArgument) { _ = try await f.alice.changes(in: f.room, after: nil, limit: 0) }
    }

    @Test("history pages backwards stably while new messages arrive", arguments: IDScheme.allCases)
    func historyPagingIsStable(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        for index in 0..<10 { try await f.send("old \(index)", from: index.isMultiple(of: 2) ? f.alice : f.bob) }
        let newest = try await f.bob.history(in: f.room, before: nil, limit: 3)
        #expect(newest.messages.map(\.text) == ["old 7", "old 8", "old 9"])
        var collected = newest.messages.map(\.text)
        var cursor = newest.olderCursor
        var round = 0
        while let older = cursor {
            for index in 0..<2 { try await f.send("new \(round).\(index)", from: f.alice) }
            round += 1
            let page = try await f.bob.history(in: f.room, before: older, limit: 3)
            collected = page.messages.map(\.text) + collected
            cursor = page.olderCursor
        }
        #expect(collected == (0..<10).map { "old \($0)" })
        let latest = try await f.bob.history(in: f.room, before: nil, limit: 2)
        #expect(latest.messages.map(\.text) == ["new 2.0", "new 2.1"])
        await expectError(.invalidArgument) { _ = try await f.bob.history(in: f.room, before: "-1", limit: 2) }
    }

    @Test("history carries standing reactions, receipts and tombstones", arguments: IDScheme.allCases)
    func historyCarriesReactionsAndReceipts(scheme: IDScheme) async throws {
        let f = try Fixture(scheme)
        let (_, first) = try await f.send("first", from: f.alice)
        let (_, second) = try await f.send("second", from: f.alice)
        try await f.bob.setReaction("🎉", isActive: true, on: first, in: f.room)
        try await f.bob.setReaction("👀", isActive: true, on: first, in: f.room)
        try await f.bob.setReaction("👀", isActive: false, on: first, in: f.room)
        try await f.bob.sendReceipt(.delivered, for: second, in: f.room)
        try await f.alice.delete(second, in: f.room)
        let page = try await f.bob.history(in: f.room, before: nil, limit: 10)
        #expect(page.olderCursor == nil)
        #expect(page.messages.count == 2)
        #expect(page.messages.last?.deletedAt != nil)
        #expect(page.reactions.map(\.symbol) == ["🎉"])
        #expect(page.reactions.allSatisfy { $0.isActive })
        #expect(page.receipts.map(\.state) == [.delivered])
        #expect(page.receipts.first?.target == second)
    }
}
