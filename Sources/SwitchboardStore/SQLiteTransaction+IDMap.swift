import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// The ID map (`id_map`): `MessageID` ↔ backend ID, unique on both sides.
extension SQLiteTransaction {
    /// Records a mapping in one statement unless either unique side is taken; true when inserted.
    func insertMappingIfAbsent(_ mapping: IDMapping) throws -> Bool {
        try perform { connection in
            try connection.execute("""
                INSERT INTO id_map (message_id, backend, conversation, remote_id, part) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """, [mapping.messageID, mapping.backend, mapping.conversation, mapping.remoteID, mapping.part])
            return connection.changes > 0
        }
    }

    /// Records a mapping; a conflicting row on either unique side throws `conflict`; an identical row is a no-op.
    func insertMapping(_ mapping: IDMapping) throws {
        try perform { connection in
            let existing = try connection.query("""
                SELECT message_id, backend, conversation, remote_id, part FROM id_map
                WHERE (backend = ? AND remote_id = ?) OR (message_id = ? AND backend = ? AND part = ?)
                """, [mapping.backend, mapping.remoteID, mapping.messageID, mapping.backend, mapping.part]) {
                Self.decodeMapping($0)
            }
            if existing.isEmpty {
                try connection.execute("""
                    INSERT INTO id_map (message_id, backend, conversation, remote_id, part) VALUES (?, ?, ?, ?, ?)
                    """, [mapping.messageID, mapping.backend, mapping.conversation, mapping.remoteID, mapping.part])
                return
            }
            if existing == [mapping] { return }
            throw StoreColumns.mappingConflict(mapping, existing: existing)
        }
    }

    /// The message a backend ID maps to.
    func messageOwner(_ id: MessageID) throws -> MessageOwner? {
        try perform { connection in
            try connection.queryFirst("SELECT conversation, sender FROM messages WHERE id = ?", [id]) {
                MessageOwner(conversation: ConversationID($0.string(at: 0)), sender: UserID($0.string(at: 1)))
            }
        }
    }

    func messageID(backend: BackendID, remoteID: RemoteID) throws -> MessageID? {
        try perform { connection in
            try connection.queryFirst("SELECT message_id FROM id_map WHERE backend = ? AND remote_id = ?",
                                      [backend, remoteID]) { MessageID($0.string(at: 0)) }
        }
    }

    /// The backend ID of a message part.
    func remoteID(of message: MessageID, backend: BackendID, part: Int) throws -> RemoteID? {
        try perform { connection in
            try connection.queryFirst("""
                SELECT remote_id FROM id_map WHERE message_id = ? AND backend = ? AND part = ?
                """, [message, backend, part]) { RemoteID($0.string(at: 0)) }
        }
    }

    /// All mappings of a message, by backend then part.
    func mappings(of message: MessageID) throws -> [IDMapping] {
        try perform { connection in
            try connection.query("""
                SELECT message_id, backend, conversation, remote_id, part FROM id_map
                WHERE message_id = ? ORDER BY backend, part
                """, [message]) { Self.decodeMapping($0) }
        }
    }

    /// Decodes an `id_map` row selected as message_id, backend, conversation, remote_id, part.
    private static func decodeMapping(_ row: SQLiteStatement) -> IDMapping {
        IDMapping(messageID: MessageID(row.string(at: 0)), backend: BackendID(row.string(at: 1)),
                  conversation: ConversationID(row.string(at: 2)), remoteID: RemoteID(row.string(at: 3)),
                  part: row.int(at: 4))
    }
}
