import Foundation
import SupabaseAdapter
import SwitchboardCore
import Testing

/// The row IDs the adapter gives messages (no server needed).
@Suite("Supabase rows")
struct SupabaseRowsTests {
    @Test("A UUID key is its own row ID, lowercased; any other key gets a UUIDv5 of its own")
    func rowIDs() {
        let key = "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11"
        #expect(SupabaseRows.rowID(for: MessageID(key)) == key)
        #expect(SupabaseRows.rowID(for: MessageID(key.uppercased())) == key)
        // Texts that Foundation's sscanf-based parser stretches into that UUID are different keys with rows of
        // their own, never the UUID's row.
        for near in [" f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11", "0x1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11",
                     "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a 1"] {
            let row = SupabaseRows.rowID(for: MessageID(near))
            #expect(UUIDText.isCanonical(row))
            #expect(row != key && row != near)
            #expect(row == UUIDv5.make(namespace: UUIDv5.switchboardNamespace, name: "supabase-key\u{1F}" + near))
        }
        #expect(SupabaseRows.rowID(for: MessageID("m-1")) != SupabaseRows.rowID(for: MessageID("m-2")))
    }

    @Test("A plain message's row leaves attachments and reply_to to their column defaults; others carry them")
    func messageRowColumns() {
        let key = "6f1c9a52-7d1e-4f6b-9a55-3e2b8c0d4a11"
        let plain = OutgoingMessage(id: MessageID(key), conversation: "c", sender: "alice", text: "hi", createdAt: Date())
        let row = SupabaseRows.messageRow(plain)
        #expect(row.members?.map(\.key) == ["id", "conversation_id", "sender_id", "body", "metadata"])
        var reply = plain
        reply.replyTo = RemoteID(key)
        reply.attachments = [Attachment(id: "a1", filename: "f.txt", mimeType: "text/plain", byteCount: 1, sha256: "00")]
        let full = SupabaseRows.messageRow(reply)
        #expect(full.members?.map(\.key) == ["id", "conversation_id", "sender_id", "body", "attachments", "metadata", "reply_to"])
        #expect(full["reply_to"]?.stringValue == key && full["attachments"]?.arrayValue?.count == 1)
    }
}

/// Anyone may write a row's metadata, but only one row can have a given ID: a carried `switchboard.key` counts
/// only when the row ID follows from it.
@Suite("SupabaseRows: a metadata key must agree with the row ID")
struct SupabaseRowKeyConsistencyTests {
    private func row(id: String, key: String?) -> JSONValue {
        var metadata: [(key: String, value: JSONValue)] = [(key: "mood", value: .string("calm"))]
        if let key { metadata.append((key: SupabaseRows.keyMetadata, value: .string(key))) }
        return .object([
            (key: "id", value: .string(id)), (key: "conversation_id", value: .string("c")),
            (key: "sender_id", value: .string("s")), (key: "created_at", value: .string("2026-12-03T10:00:00Z")),
            (key: "body", value: .string("hi")), (key: "metadata", value: .object(metadata)),
        ])
    }

    @Test("a non-UUID key whose UUIDv5 is the row ID is honoured")
    func consistentKey() throws {
        let id = SupabaseRows.rowID(for: MessageID("py-7"))
        let message = try #require(SupabaseRows.message(row(id: id, key: "py-7")))
        #expect(message.idempotencyKey == MessageID("py-7"))
        #expect(message.metadata["switchboard.key"] == nil)
    }

    @Test("a key the row ID does not follow from is ignored: the row speaks for itself", arguments: [
        "0190f0aa-1111-7000-8000-000000000001", "py-7", "", String(repeating: "é", count: 200),
    ])
    func inconsistentKey(key: String) throws {
        let id = "0190f0aa-2222-7000-8000-000000000002"
        let message = try #require(SupabaseRows.message(row(id: id, key: key)))
        #expect(message.idempotencyKey == MessageID(id))
        #expect(message.metadata["switchboard.key"] == nil, "the claim is not passed on as metadata either")
        #expect(message.metadata["mood"] == "calm")
    }
}
