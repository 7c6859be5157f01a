import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore

/// The bridge's per-pair records in PostgreSQL (`bridge_copies`, `bridge_cursors`, `bridge_operations`).
extension PostgresTransaction {
    /// The columns of `bridge_copies` in the order `decodeBridgeCopy` reads them.
    private static let bridgeCopyColumns = """
        pair, message_id, origin, sender, encode(text, 'hex'), sent_at, edited_at, deleted_at, pending_towards,
        encode(prepared, 'hex')
        """

    /// The ledger entry of `id` in whichever pair holds it.
    func bridgeCopy(_ id: MessageID) throws -> BridgeCopy? {
        try first("""
            SELECT \(Self.bridgeCopyColumns) FROM \(p)bridge_copies WHERE message_id = $1 ORDER BY pair LIMIT 1
            """, [id]) { try decodeBridgeCopy($0) }
    }

    /// Inserts or replaces a ledger entry.
    func upsertBridgeCopy(_ copy: BridgeCopy) throws {
        try run("""
            INSERT INTO \(p)bridge_copies (pair, message_id, origin, sender, text, sent_at, edited_at, deleted_at,
                                           pending_towards, prepared)
            VALUES ($1, $2, $3, $4, decode($5, 'hex'), $6, $7, $8, $9, decode($10, 'hex'))
            ON CONFLICT (pair, message_id) DO UPDATE SET
                origin = excluded.origin, sender = excluded.sender, text = excluded.text, sent_at = excluded.sent_at,
                edited_at = excluded.edited_at, deleted_at = excluded.deleted_at,
                pending_towards = excluded.pending_towards, prepared = excluded.prepared
            """, [
                copy.pair, copy.messageID, copy.origin, copy.sender, Data(copy.text.utf8), copy.sentAt, copy.editedAt,
                copy.deletedAt, copy.pendingTowards, copy.prepared.map(StoreJSON.encode),
            ])
    }

    /// Removes the entry of `id` from `pair`'s ledger.
    func removeBridgeCopy(_ id: MessageID, pair: String) throws {
        try run("DELETE FROM \(p)bridge_copies WHERE pair = $1 AND message_id = $2", [pair, id])
    }

    /// One statement for the whole list (a text array).
    func markBridgeCopiesPublished(_ ids: [MessageID], pair: String) throws {
        guard !ids.isEmpty else { return }
        try run("""
            UPDATE \(p)bridge_copies SET pending_towards = NULL, prepared = NULL
            WHERE pair = $1 AND message_id = ANY($2::text[])
            """, [pair, PostgresArray.literal(ids.map(\.rawValue))])
    }

    /// Up to `limit` entries of `pair`'s ledger after `after`, in message ID order.
    func bridgeCopies(pair: String, after: MessageID?, limit: Int) throws -> [BridgeCopy] {
        guard limit > 0 else { return [] }
        return try rows("""
            SELECT \(Self.bridgeCopyColumns) FROM \(p)bridge_copies WHERE pair = $1 AND message_id > $2
            ORDER BY message_id LIMIT $3
            """, [pair, after?.rawValue ?? "", limit]) { try decodeBridgeCopy($0) }
    }

    /// Decodes a `bridge_copies` row selected with `bridgeCopyColumns`.
    private func decodeBridgeCopy(_ row: PostgresRow) throws -> BridgeCopy {
        let id = MessageID(try row.string(1))
        let prepared = try preparedMessage(row, at: 9, "the prepared copy of bridged message \(id)")
        return BridgeCopy(pair: try row.string(0), messageID: id, origin: row.optionalString(2).map(BackendID.init),
                          sender: UserID(try row.string(3)), text: String(decoding: try row.data(4), as: UTF8.self),
                          sentAt: try row.date(5), editedAt: try row.optionalDate(6), deletedAt: try row.optionalDate(7),
                          pendingTowards: row.optionalString(8).map(BackendID.init), prepared: prepared)
    }

    /// The change cursor of `pair`'s side on `backend`.
    func bridgeCursor(pair: String, backend: BackendID) throws -> Cursor? {
        try first("SELECT cursor FROM \(p)bridge_cursors WHERE pair = $1 AND backend = $2", [pair, backend]) {
            Cursor(try $0.string(0))
        }
    }

    /// Stores (or clears with nil) the change cursor of `pair`'s side on `backend`.
    func setBridgeCursor(_ cursor: Cursor?, pair: String, backend: BackendID) throws {
        guard let cursor else {
            try run("DELETE FROM \(p)bridge_cursors WHERE pair = $1 AND backend = $2", [pair, backend])
            return
        }
        try run("""
            INSERT INTO \(p)bridge_cursors (pair, backend, cursor, updated_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (pair, backend) DO UPDATE SET cursor = excluded.cursor, updated_at = excluded.updated_at
            """, [pair, backend, cursor, Date()])
    }

    /// Queues an operation of `pair`; returns its row id.
    @discardableResult func enqueueBridgeOperation(_ operation: PendingOperation, pair: String) throws -> Int64 {
        let id = try first("""
            INSERT INTO \(p)bridge_operations (pair, wait_key, kind, payload, created_at)
            VALUES ($1, $2, $3, decode($4, 'hex'), $5) RETURNING id
            """, [pair, operation.waitKey.rawValue, operation.kind, operation.payload, operation.createdAt]) { try $0.int64(0) }
        guard let id else { throw corruption("inserting a bridge operation returned no id") }
        return id
    }

    /// `pair`'s operations waiting on `waitKey`, oldest first.
    func bridgeOperations(pair: String, waitingOn waitKey: WaitKey) throws -> [PendingOperation] {
        try rows("""
            SELECT id, wait_key, kind, encode(payload, 'hex'), created_at FROM \(p)bridge_operations
            WHERE pair = $1 AND wait_key = $2 ORDER BY id
            """, [pair, waitKey.rawValue]) { try Self.decodePending($0) }
    }

    /// `pair`'s operations whose wait key is in `family`, oldest first (a range of the wait-key index).
    func bridgeOperations(pair: String, in family: WaitKey.Family) throws -> [PendingOperation] {
        let prefix = family.prefix
        return try rows("""
            SELECT id, wait_key, kind, encode(payload, 'hex'), created_at FROM \(p)bridge_operations
            WHERE pair = $1 AND wait_key >= $2 AND wait_key < $3 ORDER BY id
            """, [pair, prefix, prefixUpperBound(prefix)]) { try Self.decodePending($0) }
    }

    /// One statement for the whole list (a text array).
    func bridgeWaitKeys(pair: String, among keys: [WaitKey]) throws -> Set<WaitKey> {
        guard !keys.isEmpty else { return [] }
        return Set(try rows("""
            SELECT DISTINCT wait_key FROM \(p)bridge_operations WHERE pair = $1 AND wait_key = ANY($2::text[])
            """, [pair, PostgresArray.literal(keys.map(\.rawValue))]) { WaitKey(stored: try $0.string(0)) })
    }

    /// Removes an operation.
    func removeBridgeOperation(_ id: Int64) throws {
        try run("DELETE FROM \(p)bridge_operations WHERE id = $1", [id])
    }
}
