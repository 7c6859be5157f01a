import Foundation
import SwitchboardCore
import SwitchboardSQLite

/// The bridge's per-pair records in SQLite (`bridge_copies`, `bridge_cursors`, `bridge_operations`).
extension SQLiteTransaction {
    /// The columns of `bridge_copies` in the order `decodeBridgeCopy` reads them.
    private static let bridgeCopyColumns = """
        pair, message_id, origin, sender, text, sent_at, edited_at, deleted_at, pending_towards, prepared
        """

    /// The ledger entry of `id` in whichever pair holds it.
    func bridgeCopy(_ id: MessageID) throws -> BridgeCopy? {
        try perform { connection in
            try connection.queryFirst("""
                SELECT \(Self.bridgeCopyColumns) FROM bridge_copies WHERE message_id = ? ORDER BY pair LIMIT 1
                """, [id]) { try decodeBridgeCopy($0) }
        }
    }

    /// Inserts or replaces a ledger entry.
    func upsertBridgeCopy(_ copy: BridgeCopy) throws {
        try perform { connection in
            try connection.execute("""
                INSERT INTO bridge_copies (\(Self.bridgeCopyColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (pair, message_id) DO UPDATE SET
                    origin = excluded.origin, sender = excluded.sender, text = excluded.text, sent_at = excluded.sent_at,
                    edited_at = excluded.edited_at, deleted_at = excluded.deleted_at,
                    pending_towards = excluded.pending_towards, prepared = excluded.prepared
                """, [
                    copy.pair, copy.messageID, copy.origin, copy.sender, copy.text, copy.sentAt, copy.editedAt,
                    copy.deletedAt, copy.pendingTowards, copy.prepared.map(StoreJSON.encode),
                ])
        }
    }

    /// Removes the entry of `id` from `pair`'s ledger.
    func removeBridgeCopy(_ id: MessageID, pair: String) throws {
        try perform { connection in
            try connection.execute("DELETE FROM bridge_copies WHERE pair = ? AND message_id = ?", [pair, id])
        }
    }

    /// One statement for the whole list (passed as one JSON array), each ID a primary-key probe.
    func markBridgeCopiesPublished(_ ids: [MessageID], pair: String) throws {
        guard !ids.isEmpty else { return }
        let list = JSONValue.array(ids.map { .string($0.rawValue) }).serialized
        try perform { connection in
            try connection.execute("""
                UPDATE bridge_copies SET pending_towards = NULL, prepared = NULL
                WHERE pair = ? AND message_id IN (SELECT value FROM json_each(?))
                """, [pair, list])
        }
    }

    /// Up to `limit` entries of `pair`'s ledger after `after`, in message ID order.
    func bridgeCopies(pair: String, after: MessageID?, limit: Int) throws -> [BridgeCopy] {
        guard limit > 0 else { return [] }
        return try perform { connection in
            try connection.query("""
                SELECT \(Self.bridgeCopyColumns) FROM bridge_copies WHERE pair = ? AND message_id > ?
                ORDER BY message_id LIMIT ?
                """, [pair, after?.rawValue ?? "", limit]) { try decodeBridgeCopy($0) }
        }
    }

    /// Decodes a `bridge_copies` row selected with `bridgeCopyColumns`.
    private func decodeBridgeCopy(_ row: SQLiteStatement) throws -> BridgeCopy {
        let id = MessageID(row.string(at: 1))
        var prepared: PreparedMessage?
        if let data = row.optionalData(at: 9) {
            guard let decoded = StoreJSON.decodePreparedMessage(data) else {
                throw corruption("the prepared copy of bridged message \(id) cannot be decoded")
            }
            prepared = decoded
        }
        return BridgeCopy(pair: row.string(at: 0), messageID: id, origin: row.optionalString(at: 2).map(BackendID.init),
                          sender: UserID(row.string(at: 3)), text: row.string(at: 4), sentAt: row.date(at: 5),
                          editedAt: row.optionalDate(at: 6), deletedAt: row.optionalDate(at: 7),
                          pendingTowards: row.optionalString(at: 8).map(BackendID.init), prepared: prepared)
    }

    /// The change cursor of `pair`'s side on `backend`.
    func bridgeCursor(pair: String, backend: BackendID) throws -> Cursor? {
        try perform { connection in
            try connection.queryFirst("SELECT cursor FROM bridge_cursors WHERE pair = ? AND backend = ?", [pair, backend]) {
                Cursor($0.string(at: 0))
            }
        }
    }

    /// Stores (or clears with nil) the change cursor of `pair`'s side on `backend`.
    func setBridgeCursor(_ cursor: Cursor?, pair: String, backend: BackendID) throws {
        try perform { connection in
            guard let cursor else {
                try connection.execute("DELETE FROM bridge_cursors WHERE pair = ? AND backend = ?", [pair, backend])
                return
            }
            try connection.execute("""
                INSERT INTO bridge_cursors (pair, backend, cursor, updated_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (pair, backend) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at
                """, [pair, backend, cursor, Date()])
        }
    }

    /// Queues an operation of `pair`; returns its row id.
    @discardableResult func enqueueBridgeOperation(_ operation: PendingOperation, pair: String) throws -> Int64 {
        try perform { connection in
            try connection.execute("""
                INSERT INTO bridge_operations (pair, wait_key, kind, payload, created_at) VALUES (?, ?, ?, ?, ?)
                """, [pair, operation.waitKey.rawValue, operation.kind, operation.payload, operation.createdAt])
            return connection.lastInsertRowID
        }
    }

    /// `pair`'s operations waiting on `waitKey`, oldest first.
    func bridgeOperations(pair: String, waitingOn waitKey: WaitKey) throws -> [PendingOperation] {
        try perform { connection in
            try connection.query("""
                SELECT id, wait_key, kind, payload, created_at FROM bridge_operations WHERE pair = ? AND wait_key = ?
                ORDER BY id
                """, [pair, waitKey.rawValue]) { Self.decodePending($0) }
        }
    }

    /// `pair`'s operations whose wait key is in `family`, oldest first (a range of the wait-key index).
    func bridgeOperations(pair: String, in family: WaitKey.Family) throws -> [PendingOperation] {
        let prefix = family.prefix
        return try perform { connection in
            try connection.query("""
                SELECT id, wait_key, kind, payload, created_at FROM bridge_operations
                WHERE pair = ? AND wait_key >= ? AND wait_key < ? ORDER BY id
                """, [pair, prefix, prefixUpperBound(prefix)]) { Self.decodePending($0) }
        }
    }

    /// One statement for the whole list (passed as one JSON array), each key an index probe.
    func bridgeWaitKeys(pair: String, among keys: [WaitKey]) throws -> Set<WaitKey> {
        guard !keys.isEmpty else { return [] }
        let list = JSONValue.array(keys.map { .string($0.rawValue) }).serialized
        return try perform { connection in
            Set(try connection.query("""
                SELECT DISTINCT wait_key FROM bridge_operations
                WHERE pair = ? AND wait_key IN (SELECT value FROM json_each(?))
                """, [pair, list]) { WaitKey(stored: $0.string(at: 0)) })
        }
    }

    /// Removes an operation.
    func removeBridgeOperation(_ id: Int64) throws {
        try perform { connection in
            try connection.execute("DELETE FROM bridge_operations WHERE id = ?", [id])
        }
    }
}
