import Foundation
import MemoryAdapter
import SwitchboardCore
import Testing

@Suite("Memory journal")
struct JournalTests {
    @Test("a fresh backend on the same journal sees the same state", arguments: IDScheme.allCases)
    func freshBackendReplaysJournal(scheme: IDScheme) async throws {
        let url = temporaryJournalURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let f = try Fixture(scheme, journal: url)
        let (kept, keptID) = try await f.send("kept", from: f.alice)
        let (_, goneID) = try await f.send("gone", from: f.bob)
        try await f.alice.edit(keptID, in: f.room, text: "kept, edited")
        try await f.bob.delete(goneID, in: f.room)
        try await f.bob.setReaction("👍", isActive: true, on: keptID, in: f.room)
        try await f.bob.setReaction("👍", isActive: false, on: keptID, in: f.room)
        try await f.bob.sendReceipt(.read, for: keptID, in: f.room)
        let bytes = Data("journaled bytes".utf8)
        let attachment = try await f.alice.upload(
            SwitchboardCore.Attachment(filename: "j.txt", mimeType: "text/plain", byteCount: Int64(bytes.count), sha256: Digest.sha256Hex(bytes)),
            data: bytes, in: f.room, progress: { _ in })
        try f.backend.createConversation("second", members: ["alice", "carol"])

        let clock = f.clock
        let replayed = try MemoryBackend(scheme: scheme, clock: { clock.now }, journal: url)
        let alice = replayed.makeAdapter(for: "alice")
        #expect(replayed.messages(in: f.room) == f.backend.messages(in: f.room))
        #expect(replayed.members(of: "second") == ["alice", "carol"])
        #expect(try await alice.latestCursor(in: f.room) == (try await f.alice.latestCursor(in: f.room)))
        let original = try await f.allChanges(after: nil, as: f.alice)
        let fresh = try await alice.changes(in: f.room, after: nil, limit: 100)
        #expect(fresh.changes == original)
        #expect(try await alice.history(in: f.room, before: nil, limit: 10) == (try await f.alice.history(in: f.room, before: nil, limit: 10)))
        #expect(try await alice.download(attachment) == bytes)

        let republished = try await alice.publish(try await f.alice.prepare(f.outgoing("kept", from: f.alice, id: kept.id),
                                                                            noSend: false))
        #expect(republished.remoteID == keptID, "idempotency survives a restart")
        let next = try await alice.publish(try await alice.prepare(f.outgoing("next", from: alice), noSend: false))
        let rows = replayed.messages(in: f.room)
        #expect(rows.count == 3)
        #expect(rows.map(\.seq) == rows.map(\.seq).sorted())
        #expect(rows.last?.version == rows.map(\.version).max())
        if scheme == .serverAssigned { #expect(next.remoteID == "srv-3") }
    }

    @Test("every mutation is one line; a truncated last line is ignored and repaired")
    func truncatedLastLineIsIgnored() async throws {
        let url = temporaryJournalURL()
        defer { try? FileManager.default.removeItem(at: url) }
        let f = try Fixture(.serverAssigned, journal: url)
        try await f.send("one", from: f.alice)
        try await f.send("two", from: f.alice)
        let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 4, "header, conversation, two messages")

        let handle = try FileHandle(forWritingTo: url)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"message":{"_0":{"seq":3,"remoteID":"srv-3","conv"#.utf8))
        try handle.close()

        let afterCrash = try MemoryBackend(scheme: .serverAssigned, journal: url)
        #expect(afterCrash.messages(in: f.room).map(\.text) == ["one", "two"])
        let adapter = afterCrash.makeAdapter(for: "bob")
        _ = try await adapter.publish(try await adapter.prepare(f.outgoing("three", from: adapter), noSend: false))

        let again = try MemoryBackend(scheme: .serverAssigned, journal: url)
        #expect(again.messages(in: f.room).map(\.text) == ["one", "two", "three"])
        #expect(again.messages(in: f.room).map(\.remoteID) == ["srv-1", "srv-2", "srv-3"])
    }

    @Test("a journal written under another scheme is refused")
    func schemeMismatchIsRefused() async throws {
        let url = temporaryJournalURL()
        defer { try? FileManager.default.removeItem(at: url) }
        _ = try MemoryBackend(scheme: .contentDerived, journal: url)
        await expectError(.invalidArgument) { _ = try MemoryBackend(scheme: .clientAssigned, journal: url) }
        try Data("not json\n".utf8).write(to: url)
        await expectError(.corruptStore) { _ = try MemoryBackend(scheme: .contentDerived, journal: url) }
    }
}
