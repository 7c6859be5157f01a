import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// The outbox (`outbox`): prepared copies waiting to be published.
extension SQLiteTransaction {
    /// The columns of `outbox` in the order `decodeOutbox` reads them.
    private static let outboxColumns = """
        message_id, backend, conversation, prepared, no_send, attempts, next_attempt_at, last_error, status, created_at
        """

    /// Inserts or replaces an outbox entry.
    func upsertOutbox(_ entry: OutboxEntry) throws {
        try perform { connection in
            let prepared = entry.prepared.map(StoreJSON.encode)
            try connection.execute("""
                INSERT INTO outbox (\(Self.outboxColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                \(StoreColumns.outboxUpsertConflict)
                """, [
                    entry.messageID, entry.backend, entry.conversation, prepared, entry.noSend, entry.attempts,
                    entry.nextAttemptAt, entry.lastError, entry.status.rawValue, entry.createdAt,
                ])
        }
    }

    /// The outbox entry of a message.
    func outboxEntry(_ message: MessageID) throws -> OutboxEntry? {
        try perform { connection in
            try connection.queryFirst("SELECT \(Self.outboxColumns) FROM outbox WHERE message_id = ?", [message]) {
                try decodeOutbox($0)
            }
        }
    }

    /// Removes a message's outbox entry.
    func removeOutbox(_ message: MessageID) throws {
        try perform { connection in
            try connection.execute("DELETE FROM outbox WHERE message_id = ?", [message])
        }
    }

    /// Queued, non-noSend entries of `backend` due at `now`, oldest created first.
    func dueOutbox(backend: BackendID, now: Date, limit: Int) throws -> [OutboxEntry] {
        guard limit > 0 else { return [] }
        return try perform { connection in
            try connection.query("""
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE backend = ? AND status = ? AND no_send = 0 AND next_attempt_at <= ?
                ORDER BY created_at, message_id LIMIT ?
                """, [backend, OutboxStatus.queued.rawValue, now, limit]) { try decodeOutbox($0) }
        }
    }

    /// Every outbox entry of `backend`, oldest created first.
    func outbox(backend: BackendID) throws -> [OutboxEntry] {
        try perform { connection in
            try connection.query("""
                SELECT \(Self.outboxColumns) FROM outbox WHERE backend = ? ORDER BY created_at, message_id
                """, [backend]) { try decodeOutbox($0) }
        }
    }

    /// Decodes an `outbox` row selected with `outboxColumns`.
    private func decodeOutbox(_ row: SQLiteStatement) throws -> OutboxEntry {
        let messageID = MessageID(row.string(at: 0))
        let statusName = row.string(at: 8)
        guard let status = OutboxStatus(rawValue: statusName) else {
            throw corruption("the outbox entry of \(messageID) has an unknown status '\(statusName)'")
        }
        var prepared: PreparedMessage?
        if let data = row.optionalData(at: 3) {
            guard let decoded = StoreJSON.decodePreparedMessage(data) else {
                throw corruption("the prepared request of outbox entry \(messageID) cannot be decoded")
            }
            prepared = decoded
        }
        return OutboxEntry(
            messageID: messageID, backend: BackendID(row.string(at: 1)), conversation: ConversationID(row.string(at: 2)),
            prepared: prepared, noSend: row.bool(at: 4), attempts: row.int(at: 5), nextAttemptAt: row.date(at: 6),
            lastError: row.optionalString(at: 7), status: status, createdAt: row.date(at: 9))
    }
}
