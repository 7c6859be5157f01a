import Foundation
import SwitchboardCore
import SwitchboardSQLite

/// libxmtp's `DeliveryStatus` of a `group_messages` row.
enum XMTPDeliveryStatus: Int64, Sendable {
    /// Prepared locally, not (yet) seen on the network.
    case unpublished = 1
    /// Read back from the network.
    case published = 2
    /// Publishing gave up after the attempt limit (a later publish resets it).
    case failed = 3
}

/// libxmtp's `IntentState` of a `group_intents` row.
enum XMTPIntentState: Int64, Sendable {
    /// Waiting to be sent.
    case toPublish = 1
    /// Sent; not yet read back.
    case published = 2
    /// Gave up (the message is `Failed`).
    case error = 4
    /// Read back from the network (matched by payload hash).
    case processed = 5
}

/// One `group_messages` row: every envelope seen or prepared (content, reactions, edits, deletes, receipts).
struct XMTPMessageRow: Sendable, Hashable {
    /// The derived message ID (lowercase hex).
    var id: String
    /// The group ID (lowercase hex).
    var groupID: String
    /// The `EncodedContent` bytes (`decrypted_message_bytes`).
    var content: [UInt8]
    /// Local time while unpublished, the node's `created_ns` once published.
    var sentAtNs: Int64
    /// libxmtp's `GroupMessageKind` (always 1, Application).
    var kind: Int64 = 1
    /// The sender's inbox ID.
    var sender: String
    /// Where the row stands.
    var status: XMTPDeliveryStatus
    /// The content type's ID (`text`, `reply`, `reaction`, ... or `unknown`).
    var contentType: String
    /// The message this one points at (reply, reaction, edit, delete target).
    var referenceID: String?
    /// The node's sequence once seen.
    var sequenceID: Int64?
    /// The idempotency key the sender carried.
    var idempotencyKey: String

    /// Whether the row is a control message (it changes another message rather than showing itself).
    var isControl: Bool { XMTPContentKind.controlTypes.contains(contentType) }
}

/// One `group_intents` row: a sealed envelope waiting to be (re)sent with identical bytes.
struct XMTPIntentRow: Sendable, Hashable {
    /// The row ID (send order).
    var id: Int64
    /// The group ID (hex).
    var groupID: String
    /// Where the intent stands.
    var state: XMTPIntentState
    /// The `XMTPGroupEnvelope` bytes, sealed once.
    var data: [UInt8]
    /// Lowercase hex SHA-256 of `data`.
    var payloadHash: String
    /// How many sends were tried.
    var publishAttempts: Int64
    /// The message the envelope carries.
    var messageID: String
}

/// Classifies content types the way the adapter folds them.
enum XMTPContentKind {
    /// Content types that change another message (never shown as messages themselves).
    static let controlTypes: Set<String> = ["reaction", "readReceipt", "editMessage", "deleteMessage"]
}

/// The adapter's own SQLite database, laid out as libxmtp keeps it: `group_messages`, `group_intents`,
/// `refresh_state`. Every access is serialised by a lock; several adapters may share the file (WAL, busy timeout).
final class XMTPLocalStore: @unchecked Sendable {
    /// Serialises every access to the connection (recursive: `reading` holds it around calls that take it again).
    private let lock = NSRecursiveLock()
    private let db: SQLiteConnection

    /// Opens (creating) the database at `path` and applies the schema.
    init(path: String) throws {
        do {
            db = try SQLiteConnection(path: path)
            try db.setBusyTimeout(milliseconds: 10_000)
            try db.executeScript("""
                PRAGMA journal_mode=WAL;
                PRAGMA synchronous=NORMAL;
                CREATE TABLE IF NOT EXISTS group_messages (
                    id TEXT PRIMARY KEY NOT NULL,
                    group_id TEXT NOT NULL,
                    decrypted_message_bytes BLOB NOT NULL,
                    sent_at_ns INTEGER NOT NULL,
                    kind INTEGER NOT NULL,
                    sender_inbox_id TEXT NOT NULL,
                    delivery_status INTEGER NOT NULL,
                    content_type TEXT NOT NULL,
                    reference_id TEXT,
                    sequence_id INTEGER,
                    idempotency_key TEXT NOT NULL);
                -- Only control rows (edits, deletes, reactions) point at a message: a partial index leaves the
                -- content rows out (the full index of earlier versions is replaced).
                DROP INDEX IF EXISTS group_messages_reference;
                CREATE INDEX IF NOT EXISTS group_messages_references ON group_messages (reference_id, content_type)
                    WHERE reference_id IS NOT NULL;
                CREATE INDEX IF NOT EXISTS group_messages_sequence ON group_messages (group_id, sequence_id);
                CREATE TABLE IF NOT EXISTS group_intents (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    group_id TEXT NOT NULL,
                    state INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    payload_hash TEXT NOT NULL UNIQUE,
                    publish_attempts INTEGER NOT NULL DEFAULT 0,
                    message_id TEXT NOT NULL);
                CREATE INDEX IF NOT EXISTS group_intents_message ON group_intents (message_id);
                CREATE INDEX IF NOT EXISTS group_intents_open ON group_intents (state) WHERE state != 5;
                CREATE TABLE IF NOT EXISTS refresh_state (
                    entity_id TEXT NOT NULL,
                    entity_kind INTEGER NOT NULL,
                    cursor INTEGER NOT NULL,
                    PRIMARY KEY (entity_id, entity_kind));
                """)
        } catch {
            throw SwitchboardError(.storage, "cannot open the XMTP adapter database at \(path): \(error)")
        }
    }

    /// Runs `body` with the connection under the lock; a SQLite failure keeps the classification of its result code
    /// (only a busy or locked database is retryable), anything else is a non-retryable `storage` error.
    private func with<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        do {
            return try body(db)
        } catch let error as SwitchboardError {
            throw error
        } catch let error as SQLiteError {
            throw SwitchboardError(error.switchboardCode, "XMTP adapter database: \(error)", retryable: error.isTransient)
        } catch {
            throw SwitchboardError(.storage, "XMTP adapter database: \(error)")
        }
    }

    /// Runs `body`, which only reads, inside one read transaction: its queries share one snapshot and one taking of
    /// SQLite's WAL read lock (a statement outside a transaction takes and releases it, two `fcntl` calls, each time).
    func reading<T>(_ body: () throws -> T) throws -> T {
        try with { db in
            try db.executeScript("BEGIN DEFERRED")
            defer { try? db.executeScript("COMMIT") }
            return try body()
        }
    }

    /// Runs `body` in one immediate transaction.
    func transaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try with { db in
            try db.executeScript("BEGIN IMMEDIATE")
            do {
                let value = try body(db)
                try db.executeScript("COMMIT")
                return value
            } catch {
                try? db.executeScript("ROLLBACK")
                throw error
            }
        }
    }

    // MARK: group_messages

    /// The `group_messages` columns in row order.
    private static let columns = """
        id, group_id, decrypted_message_bytes, sent_at_ns, kind, sender_inbox_id, delivery_status, content_type,
        reference_id, sequence_id, idempotency_key
        """

    /// `storeReceived`'s insert of a new row (built once: it runs for every envelope read).
    private static let insertReceivedSQL = """
        INSERT INTO group_messages (\(columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT(id) DO NOTHING
        """

    /// `references(to:in:)`' query (built once: it runs for every message read).
    static let referencesSQL = """
        SELECT \(columns) FROM group_messages
        WHERE reference_id = ? AND delivery_status = 2
        ORDER BY sequence_id, id
        """

    /// Decodes a `group_messages` row.
    private static func row(_ statement: SQLiteStatement) -> XMTPMessageRow {
        XMTPMessageRow(id: statement.string(at: 0), groupID: statement.string(at: 1),
                       content: [UInt8](statement.data(at: 2)), sentAtNs: statement.int64(at: 3), kind: statement.int64(at: 4),
                       sender: statement.string(at: 5),
                       status: XMTPDeliveryStatus(rawValue: statement.int64(at: 6)) ?? .unpublished,
                       contentType: statement.string(at: 7), referenceID: statement.optionalString(at: 8),
                       sequenceID: statement.optionalInt64(at: 9), idempotencyKey: statement.string(at: 10))
    }

    /// The row with this ID.
    func message(_ id: String) throws -> XMTPMessageRow? {
        try with { db in try Self.message(id, db) }
    }

    /// The row with this ID on an already locked connection.
    private static func message(_ id: String, _ db: SQLiteConnection) throws -> XMTPMessageRow? {
        try db.queryFirst("SELECT \(columns) FROM group_messages WHERE id = ?", [id], row)
    }

    /// The published rows of group `groupID` (hex) stored from envelopes with these node sequences, by sequence.
    ///
    /// A page's sequences are usually a dense run: then one range scan of the sequence index, filtered here, is
    /// cheaper than `sequence_id IN (…)`, which SQLite answers by filling a temporary b-tree with the list.
    func publishedRows(groupID: String, sequences: [Int64]) throws -> [Int64: XMTPMessageRow] {
        guard let low = sequences.min(), let high = sequences.max() else { return [:] }
        if high - low < 2 * Int64(sequences.count) + 64 {
            let wanted = Set(sequences)
            return try with { db in
                var rows: [Int64: XMTPMessageRow] = [:]
                let found = try db.query("""
                    SELECT \(Self.columns) FROM group_messages
                    WHERE group_id = ? AND sequence_id BETWEEN ? AND ? AND delivery_status = ?
                    """, [groupID, low, high, XMTPDeliveryStatus.published.rawValue], Self.row)
                for row in found { if let sequence = row.sequenceID, wanted.contains(sequence) { rows[sequence] = row } }
                return rows
            }
        }
        return try with { db in
            var rows: [Int64: XMTPMessageRow] = [:]
            for start in stride(from: 0, to: sequences.count, by: 500) {
                let chunk = Array(sequences[start..<min(sequences.count, start + 500)])
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ", ")
                let found = try db.query("""
                    SELECT \(Self.columns) FROM group_messages
                    WHERE group_id = ? AND delivery_status = ? AND sequence_id IN (\(marks))
                    """, [groupID, XMTPDeliveryStatus.published.rawValue] + chunk, Self.row)
                for row in found { if let sequence = row.sequenceID { rows[sequence] = row } }
            }
            return rows
        }
    }

    /// The published rows of group `groupID` (hex) with a sequence in `after + 1 ... through`, in sequence order, at
    /// most `limit`.
    func publishedRows(groupID: String, after: Int64, through: Int64, limit: Int) throws -> [XMTPMessageRow] {
        try with { db in
            try db.query("""
                SELECT \(Self.columns) FROM group_messages
                WHERE group_id = ? AND sequence_id > ? AND sequence_id <= ? AND delivery_status = ?
                ORDER BY sequence_id LIMIT ?
                """, [groupID, after, through, XMTPDeliveryStatus.published.rawValue, Int64(limit)], Self.row)
        }
    }

    /// Inserts a locally prepared row unless one with its ID exists; returns the stored row.
    func insertPrepared(_ row: XMTPMessageRow) throws -> XMTPMessageRow {
        try with { db in
            try db.execute("""
                INSERT OR IGNORE INTO group_messages (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [row.id, row.groupID, Data(row.content), row.sentAtNs, row.kind, row.sender, row.status.rawValue,
                      row.contentType, row.referenceID, row.sequenceID, row.idempotencyKey])
            return try Self.message(row.id, db) ?? row
        }
    }

    /// Stores an envelope read from the network: insert-or-ignore by ID; a row not yet published becomes
    /// Published with the node's time and sequence; the earliest sequence wins for duplicates. Intents whose
    /// payload hash matches are Processed. Returns the stored row.
    func storeReceived(_ row: XMTPMessageRow, payloadHash: String) throws -> XMTPMessageRow {
        try transaction { db in try Self.storeReceived(row, payloadHash: payloadHash, db) }
    }

    /// `storeReceived` for a page of envelopes in one transaction (one commit, not one per envelope), given each
    /// envelope's bytes: they are hashed, and intents looked up, only while some intent is not yet processed (an
    /// account that has sent nothing, or whose sends have all been read back, has none to match).
    func storeReceived(_ rows: [(row: XMTPMessageRow, payload: [UInt8])]) throws -> [XMTPMessageRow] {
        guard !rows.isEmpty else { return [] }
        return try transaction { db in
            let intentsOpen = try db.queryFirst("SELECT 1 FROM group_intents WHERE state != 5 LIMIT 1") { _ in true } ?? false
            return try rows.map { item in
                try Self.storeReceived(item.row, payloadHash: intentsOpen ? Digest.sha256Hex(item.payload) : nil, db)
            }
        }
    }

    /// `storeReceived` on an already locked connection inside a transaction; a nil `payloadHash` means no intent is
    /// open, so none is looked up.
    private static func storeReceived(_ row: XMTPMessageRow, payloadHash: String?, _ db: SQLiteConnection) throws -> XMTPMessageRow {
        var row = row
        row.status = .published
        let values: [(any SQLiteBindable)?] = [row.id, row.groupID, Data(row.content), row.sentAtNs, row.kind, row.sender,
                                              XMTPDeliveryStatus.published.rawValue, row.contentType, row.referenceID,
                                              row.sequenceID, row.idempotencyKey]
        // A new ID (the usual case) is stored exactly as given, so it needs no read back.
        try db.execute(Self.insertReceivedSQL, values)
        let inserted = db.changes > 0
        if !inserted {
            // A known ID: an unpublished row becomes published with the node's time and sequence; the earliest
            // sequence wins for duplicates.
            try db.execute("""
                INSERT INTO group_messages (\(Self.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(id) DO UPDATE SET
                    delivery_status = 2,
                    sent_at_ns = CASE WHEN group_messages.delivery_status != 2 OR group_messages.sequence_id IS NULL
                                        OR excluded.sequence_id < group_messages.sequence_id
                                      THEN excluded.sent_at_ns ELSE group_messages.sent_at_ns END,
                    sequence_id = CASE WHEN group_messages.delivery_status != 2 OR group_messages.sequence_id IS NULL
                                         OR excluded.sequence_id < group_messages.sequence_id
                                       THEN excluded.sequence_id ELSE group_messages.sequence_id END
                """, values)
        }
        // Two single-index updates rather than one `payload_hash = ? OR message_id = ?`, which SQLite runs as a
        // union of both index scans collected in a temporary table.
        if let payloadHash {
            let processed = XMTPIntentState.processed.rawValue
            try db.execute("UPDATE group_intents SET state = ? WHERE payload_hash = ?", [processed, payloadHash])
            try db.execute("UPDATE group_intents SET state = ? WHERE message_id = ?", [processed, row.id])
        }
        return inserted ? row : try Self.message(row.id, db) ?? row
    }

    /// Sets a row's delivery status.
    func setStatus(_ id: String, _ status: XMTPDeliveryStatus) throws {
        try with { db in
            try db.execute("UPDATE group_messages SET delivery_status = ? WHERE id = ? AND delivery_status != 2",
                           [status.rawValue, id])
        }
    }

    /// libxmtp's `deleteMessageLocally`: removes the row and its intents.
    func deleteLocally(_ id: String) throws {
        try transaction { db in
            try db.execute("DELETE FROM group_intents WHERE message_id = ?", [id])
            try db.execute("DELETE FROM group_messages WHERE id = ?", [id])
        }
    }

    /// Published control rows of group `groupID` pointing at `id` (edits, deletes, reactions), in sequence order. A
    /// row sent in another group names a message that is not its group's, and changes nothing.
    func references(to id: String, in groupID: String) throws -> [XMTPMessageRow] {
        try with { db in
            // The content types and the group are picked here, not in SQL: `content_type IN (…)` has SQLite fill a
            // temporary b-tree with the names on every call (~40 % of a call that finds nothing, the usual case), and
            // the partial index on `reference_id` already narrows the rows to a handful.
            try db.query(Self.referencesSQL, [id], Self.row).filter {
                $0.groupID == groupID && Self.referenceTypes.contains($0.contentType)
            }
        }
    }

    /// The content types whose rows `references(to:in:)` returns.
    private static let referenceTypes: Set<String> = ["editMessage", "deleteMessage", "reaction"]

    /// The latest content message before `sequence` whose sender is not `sender` (a read receipt's target).
    func latestContent(before sequence: Int64, in groupID: String, notFrom sender: String) throws -> XMTPMessageRow? {
        try with { db in
            try db.queryFirst("""
                SELECT \(Self.columns) FROM group_messages
                WHERE group_id = ? AND sequence_id < ? AND sender_inbox_id != ? AND delivery_status = 2
                  AND content_type NOT IN ('editMessage', 'deleteMessage', 'reaction', 'readReceipt')
                ORDER BY sequence_id DESC LIMIT 1
                """, [groupID, sequence, sender], Self.row)
        }
    }

    /// Every row of a group (tests and diagnostics), by sequence then ID.
    func allMessages(in groupID: String) throws -> [XMTPMessageRow] {
        try with { db in
            try db.query("SELECT \(Self.columns) FROM group_messages WHERE group_id = ? ORDER BY sequence_id, id", [groupID], Self.row)
        }
    }

    // MARK: group_intents

    /// Decodes a `group_intents` row.
    private static func intent(_ statement: SQLiteStatement) -> XMTPIntentRow {
        XMTPIntentRow(id: statement.int64(at: 0), groupID: statement.string(at: 1),
                      state: XMTPIntentState(rawValue: statement.int64(at: 2)) ?? .toPublish,
                      data: [UInt8](statement.data(at: 3)), payloadHash: statement.string(at: 4),
                      publishAttempts: statement.int64(at: 5), messageID: statement.string(at: 6))
    }

    /// The newest intent of a message.
    func intent(for messageID: String) throws -> XMTPIntentRow? {
        try with { db in
            try db.queryFirst("""
                SELECT id, group_id, state, data, payload_hash, publish_attempts, message_id FROM group_intents
                WHERE message_id = ? ORDER BY id DESC LIMIT 1
                """, [messageID], Self.intent)
        }
    }

    /// Queued intents of a group in send order (libxmtp's `publishMessages`).
    func queuedIntents(in groupID: String) throws -> [XMTPIntentRow] {
        try with { db in
            try db.query("""
                SELECT id, group_id, state, data, payload_hash, publish_attempts, message_id FROM group_intents
                WHERE group_id = ? AND state IN (1, 2) ORDER BY id
                """, [groupID], Self.intent)
        }
    }

    /// Adds an intent (ToPublish) for a sealed envelope; returns it.
    func insertIntent(groupID: String, data: [UInt8], messageID: String) throws -> XMTPIntentRow {
        let hash = Digest.sha256Hex(data)
        return try with { db in
            try db.execute("""
                INSERT OR IGNORE INTO group_intents (group_id, state, data, payload_hash, publish_attempts, message_id)
                VALUES (?, 1, ?, ?, 0, ?)
                """, [groupID, Data(data), hash, messageID])
            return try db.queryFirst("""
                SELECT id, group_id, state, data, payload_hash, publish_attempts, message_id FROM group_intents
                WHERE payload_hash = ?
                """, [hash], Self.intent)!
        }
    }

    /// Updates an intent's state and attempt count.
    func updateIntent(_ id: Int64, state: XMTPIntentState, attempts: Int64) throws {
        try with { db in
            try db.execute("UPDATE group_intents SET state = ?, publish_attempts = ? WHERE id = ? AND state != 5",
                           [state.rawValue, attempts, id])
        }
    }

    // MARK: refresh_state

    /// The group's sync cursor (the last sequence processed contiguously from the start).
    func refreshCursor(_ groupID: String) throws -> Int64 {
        try with { db in
            try db.queryFirst("SELECT cursor FROM refresh_state WHERE entity_id = ? AND entity_kind = 1", [groupID]) {
                $0.int64(at: 0)
            } ?? 0
        }
    }

    /// The IDs of the group's published content messages (not edits, deletes, reactions or receipts) whose
    /// sequence is below `before`.
    func contentMessageIDs(groupID: String, before: Int64) throws -> [String] {
        try with { db in
            try db.query("""
                SELECT id, content_type FROM group_messages
                WHERE group_id = ? AND sequence_id < ? AND delivery_status = 2
                """, [groupID, before]) { ($0.string(at: 0), $0.string(at: 1)) }
        }.filter { !XMTPContentKind.controlTypes.contains($0.1) }.map(\.0)
    }

    /// Moves the cursor to `to` when a contiguous run processed after `from` covers it (never backwards).
    func advanceRefreshCursor(_ groupID: String, from: Int64, to: Int64) throws {
        try with { db in
            try db.execute("INSERT OR IGNORE INTO refresh_state (entity_id, entity_kind, cursor) VALUES (?, 1, 0)", [groupID])
            try db.execute("UPDATE refresh_state SET cursor = ? WHERE entity_id = ? AND entity_kind = 1 AND cursor >= ? AND cursor < ?",
                           [to, groupID, from, to])
        }
    }
}
