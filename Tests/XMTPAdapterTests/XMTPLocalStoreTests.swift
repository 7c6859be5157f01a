import Foundation
import SwitchboardSQLite
import Testing
@testable import XMTPAdapter

/// The adapter's local database on its own.
@Suite("XMTP local store")
struct XMTPLocalStoreTests {
    /// A published row of group `g`.
    func row(_ id: String, _ type: String, reference: String? = nil, sequence: Int64) -> XMTPMessageRow {
        XMTPMessageRow(id: id, groupID: "g", content: [1], sentAtNs: sequence, sender: "alice", status: .published,
                       contentType: type, referenceID: reference, sequenceID: sequence, idempotencyKey: "k-\(id)")
    }

    /// A published row of group `h` (another group than `row`'s).
    func elsewhere(_ id: String, _ type: String, reference: String? = nil, sequence: Int64) -> XMTPMessageRow {
        var other = row(id, type, reference: reference, sequence: sequence)
        other.groupID = "h"
        return other
    }

    @Test("storeReceived returns the stored rows; a known ID keeps its earliest sequence and time")
    func storeReceivedReturnsTheStoredRow() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-local-\(UUID()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try XMTPLocalStore(path: path)
        let first = try store.storeReceived(row("a", "text", sequence: 7), payloadHash: "h")
        #expect(first == row("a", "text", sequence: 7))
        #expect(try store.message("a") == first)
        // The same message again from a later envelope keeps the earlier one; from an earlier one, takes it.
        #expect(try store.storeReceived(row("a", "text", sequence: 9), payloadHash: "h") == first)
        let earlier = try store.storeReceived(row("a", "text", sequence: 3), payloadHash: "h")
        #expect(earlier.sequenceID == 3 && earlier.sentAtNs == 3)
        #expect(try store.message("a") == earlier)
        // An unpublished local row becomes published with the node's sequence and time.
        _ = try store.insertPrepared(XMTPMessageRow(id: "b", groupID: "g", content: [1], sentAtNs: 100, sender: "alice",
                                                    status: .unpublished, contentType: "text", referenceID: nil,
                                                    sequenceID: nil, idempotencyKey: "k-b"))
        let published = try store.storeReceived(row("b", "text", sequence: 11), payloadHash: "hb")
        #expect(published.status == .published && published.sequenceID == 11 && published.sentAtNs == 11)
        #expect(published.idempotencyKey == "k-b")
        #expect(try store.message("b") == published)
    }

    @Test("a page of received envelopes marks the intents of those it matches processed, by payload or message ID")
    func receivedPagesProcessIntents() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-local-\(UUID()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try XMTPLocalStore(path: path)
        // No intent at all: a page is stored without hashing anything.
        _ = try store.storeReceived([(row("a", "text", sequence: 1), [0xA])])
        #expect(try store.message("a")?.sequenceID == 1)
        // Our own sends: one read back by its exact bytes, one by its message ID (bytes re-sealed), one not yet.
        let sealedB: [UInt8] = [0xB, 0xB], sealedC: [UInt8] = [0xC], sealedD: [UInt8] = [0xD]
        for (id, sealed) in [("b", sealedB), ("c", sealedC), ("d", sealedD)] {
            _ = try store.insertPrepared(XMTPMessageRow(id: id, groupID: "g", content: [1], sentAtNs: 0, sender: "alice",
                                                        status: .unpublished, contentType: "text", referenceID: nil,
                                                        sequenceID: nil, idempotencyKey: "k-\(id)"))
            _ = try store.insertIntent(groupID: "g", data: sealed, messageID: id)
        }
        _ = try store.storeReceived([(row("x", "text", sequence: 2), [0xE]), (row("b", "text", sequence: 3), sealedB),
                                     (row("c", "text", sequence: 4), [0xC, 0xC])])
        #expect(try store.intent(for: "b")?.state == .processed)
        #expect(try store.intent(for: "c")?.state == .processed)
        #expect(try store.intent(for: "d")?.state == .toPublish)
        #expect(try store.message("b")?.status == .published && store.message("c")?.sequenceID == 4)
        #expect(try store.message("d")?.status == .unpublished)
    }

    @Test("publishedRows(sequences:) finds exactly the published rows of the group at those sequences, dense or sparse")
    func publishedRowsBySequence() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-local-\(UUID()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try XMTPLocalStore(path: path)
        _ = try store.storeReceived((1...40).map { (row("m\($0)", "text", sequence: Int64($0)), [UInt8]("h\($0)".utf8)) })
        var other = row("o", "text", sequence: 20)
        other.id = "o"
        other.groupID = "h"
        _ = try store.storeReceived([(other, [1]), (row("far", "text", sequence: 100_000), [2])])
        _ = try store.insertPrepared(XMTPMessageRow(id: "u", groupID: "g", content: [1], sentAtNs: 1, sender: "alice",
                                                    status: .unpublished, contentType: "text", referenceID: nil,
                                                    sequenceID: nil, idempotencyKey: "k-u"))
        let dense = try store.publishedRows(groupID: "g", sequences: [18, 19, 20, 21, 22, 41])
        #expect(dense.keys.sorted() == [18, 19, 20, 21, 22])
        #expect(dense[20]?.id == "m20", "another group's row at the same sequence is not this group's")
        let sparse = try store.publishedRows(groupID: "g", sequences: [3, 100_000, 7, 5_000])
        #expect(sparse.keys.sorted() == [3, 7, 100_000])
        #expect(sparse[100_000]?.id == "far")
        #expect(try store.publishedRows(groupID: "g", sequences: []).isEmpty)
    }

    @Test("references(to:in:) returns the published edits, deletes and reactions of a message in its group, not its replies")
    func referencesAreControlRowsOnly() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-local-\(UUID()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try XMTPLocalStore(path: path)
        let stored = try store.storeReceived([
            (row("a", "text", sequence: 1), [1]),
            (row("r1", "reply", reference: "a", sequence: 2), [2]),
            (row("x1", "reaction", reference: "a", sequence: 3), [3]),
            (row("e1", "editMessage", reference: "a", sequence: 4), [4]),
            (row("rr", "readReceipt", reference: "a", sequence: 5), [5]),
            (row("d1", "deleteMessage", reference: "a", sequence: 6), [6]),
            (row("x2", "reaction", reference: "b", sequence: 7), [7]),
            (elsewhere("e2", "editMessage", reference: "a", sequence: 8), [8]),
            (elsewhere("x4", "reaction", reference: "a", sequence: 9), [9]),
        ])
        _ = try store.insertPrepared(XMTPMessageRow(
            id: "x3", groupID: "g", content: [1], sentAtNs: 8, sender: "alice", status: .unpublished,
            contentType: "reaction", referenceID: "a", sequenceID: nil, idempotencyKey: "k-x3"))
        for row in stored { #expect(try store.message(row.id) == row, "storeReceived returned what it stored") }
        #expect(try store.references(to: "a", in: "g").map(\.id) == ["x1", "e1", "d1"],
                "an edit or reaction sent in another group pointing at the message is not one of its references")
        #expect(try store.references(to: "a", in: "h").map(\.id) == ["e2", "x4"])
        #expect(try store.references(to: "b", in: "g").map(\.id) == ["x2"])
        #expect(try store.references(to: "r1", in: "g").isEmpty)
    }

    @Test("references(to:in:) probes the partial index of rows that point at a message; a database with the old full index gets the new one")
    func referencesUseThePartialIndex() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("xmtp-local-\(UUID()).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        do {
            // A database as earlier versions left it: the full index over every row.
            let old = try SQLiteConnection(path: path)
            try old.executeScript("""
                CREATE TABLE group_messages (id TEXT PRIMARY KEY NOT NULL, group_id TEXT NOT NULL,
                    decrypted_message_bytes BLOB NOT NULL, sent_at_ns INTEGER NOT NULL, kind INTEGER NOT NULL,
                    sender_inbox_id TEXT NOT NULL, delivery_status INTEGER NOT NULL, content_type TEXT NOT NULL,
                    reference_id TEXT, sequence_id INTEGER, idempotency_key TEXT NOT NULL);
                CREATE INDEX group_messages_reference ON group_messages (reference_id, content_type);
                """)
            old.close()
        }
        _ = try XMTPLocalStore(path: path)
        let connection = try SQLiteConnection(path: path)
        defer { connection.close() }
        let indexes = try connection.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'group_messages'") {
            $0.string(at: 0)
        }
        #expect(indexes.contains("group_messages_references") && !indexes.contains("group_messages_reference"))
        let plan = try connection.query("EXPLAIN QUERY PLAN " + XMTPLocalStore.referencesSQL, ["a"]) { $0.string(at: 3) }
        #expect(plan.contains { $0.hasPrefix("SEARCH group_messages USING INDEX group_messages_references (reference_id=?)") },
                "\(plan)")
    }
}
