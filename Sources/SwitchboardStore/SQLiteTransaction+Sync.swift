import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// Sync cursors (`sync_cursors`) and operations waiting for their target (`pending_operations`).
extension SQLiteTransaction {
    // MARK: Cursors

    /// A stored sync cursor.
    func cursor(conversation: ConversationID, backend: BackendID, kind: CursorKind) throws -> Cursor? {
        try perform { connection in
            try connection.queryFirst("""
                SELECT cursor FROM sync_cursors WHERE conversation = ? AND backend = ? AND kind = ?
                """, [conversation, backend, kind.rawValue]) { Cursor($0.string(at: 0)) }
        }
    }

    /// Stores (or clears with nil) a sync cursor.
    func setCursor(_ cursor: Cursor?, conversation: ConversationID, backend: BackendID, kind: CursorKind) throws {
        try perform { connection in
            guard let cursor else {
                try connection.execute("""
                    DELETE FROM sync_cursors WHERE conversation = ? AND backend = ? AND kind = ?
                    """, [conversation, backend, kind.rawValue])
                return
            }
            try connection.execute("""
                INSERT INTO sync_cursors (conversation, backend, kind, cursor, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (conversation, backend, kind) DO UPDATE SET
                    cursor = excluded.cursor, updated_at = excluded.updated_at
                """, [conversation, backend, kind.rawValue, cursor, Date()])
        }
    }

    // MARK: Pending operations

    /// Queues an operation waiting for a mapping; returns its row id (the operation's own `id` is ignored).
    @discardableResult func enqueuePending(_ operation: PendingOperation) throws -> Int64 {
        try perform { connection in
            try connection.execute("""
                INSERT INTO pending_operations (wait_key, kind, payload, created_at) VALUES (?, ?, ?, ?)
                """, [operation.waitKey.rawValue, operation.kind, operation.payload, operation.createdAt])
            return connection.lastInsertRowID
        }
    }

    /// Operations waiting on `waitKey`, oldest first.
    func pendingOperations(waitingOn waitKey: WaitKey) throws -> [PendingOperation] {
        try perform { connection in
            try connection.query("""
                SELECT id, wait_key, kind, payload, created_at FROM pending_operations WHERE wait_key = ? ORDER BY id
                """, [waitKey.rawValue]) { Self.decodePending($0) }
        }
    }

    /// One statement for the whole list (passed as one JSON array), each key an index probe.
    func waitKeys(among keys: [WaitKey]) throws -> Set<WaitKey> {
        guard !keys.isEmpty else { return [] }
        let list = JSONValue.array(keys.map { .string($0.rawValue) }).serialized
        return try perform { connection in
            Set(try connection.query(Self.waitKeysSQL, [list]) { WaitKey(stored: $0.string(at: 0)) })
        }
    }

    /// `waitKeys(among:)`' statement: each listed key is looked up in `pending_operations_wait_key`.
    static let waitKeysSQL = """
        SELECT DISTINCT wait_key FROM pending_operations WHERE wait_key IN (SELECT value FROM json_each(?))
        """

    /// Every waiting operation, oldest first.
    func allPendingOperations() throws -> [PendingOperation] {
        try perform { connection in
            try connection.query("""
                SELECT id, wait_key, kind, payload, created_at FROM pending_operations ORDER BY id
                """) { Self.decodePending($0) }
        }
    }

    /// Removes a waiting operation.
    func removePending(_ id: Int64) throws {
        try perform { connection in
            try connection.execute("DELETE FROM pending_operations WHERE id = ?", [id])
        }
    }

    /// Decodes a `pending_operations` or `bridge_operations` row (`id, wait_key, kind, payload, created_at`).
    static func decodePending(_ row: SQLiteStatement) -> PendingOperation {
        PendingOperation(id: row.int64(at: 0), waitKey: WaitKey(stored: row.string(at: 1)), kind: row.string(at: 2),
                         payload: row.data(at: 3), createdAt: row.date(at: 4))
    }
}
