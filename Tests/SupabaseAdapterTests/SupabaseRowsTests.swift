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
