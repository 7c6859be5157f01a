import Dispatch
import Foundation
import SwitchboardCore
import SwitchboardSQLite

/// The server's durable state in one SQLite file (WAL): users and token hashes, conversations and members,
/// messages with reactions (and tombstones of removed or replaced ones) and receipts, uploads.
///
/// Every access is serialised by a mutex. Message IDs and versions come from one global sequence (the
/// `sequence` table), so "changed after position X" is `version > X`. SQL is always bound, never interpolated.
final class SocketIOStore: Sendable {
    private let database: Locked<SQLiteConnection?>

    /// Opens (creating) the database at `path` and applies the schema.
    init(path: String) throws {
        let sqlite = try SQLiteConnection.openServerStore(path: path)
        try sqlite.executeScript("""
            CREATE TABLE IF NOT EXISTS sequence (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
            INSERT OR IGNORE INTO sequence (name, value) VALUES ('global', 0);
            CREATE TABLE IF NOT EXISTS users (user_id TEXT PRIMARY KEY, created_ms INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS tokens (token_hash TEXT PRIMARY KEY,
                user_id TEXT NOT NULL REFERENCES users(user_id), created_ms INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, creator TEXT NOT NULL,
                created_ms INTEGER NOT NULL) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS members (conversation_id TEXT NOT NULL REFERENCES conversations(id),
                user_id TEXT NOT NULL REFERENCES users(user_id), PRIMARY KEY (conversation_id, user_id)) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS members_by_user ON members (user_id, conversation_id);
            CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY,
                conversation_id TEXT NOT NULL REFERENCES conversations(id), sender_id TEXT NOT NULL,
                client_message_id TEXT NOT NULL, text TEXT NOT NULL, reply_to INTEGER, attachments TEXT NOT NULL,
                metadata TEXT, created_ms INTEGER NOT NULL, edited_ms INTEGER, deleted_ms INTEGER,
                version INTEGER NOT NULL, UNIQUE (conversation_id, sender_id, client_message_id));
            CREATE INDEX IF NOT EXISTS messages_by_version ON messages (conversation_id, version);
            CREATE TABLE IF NOT EXISTS reactions (message_id INTEGER NOT NULL REFERENCES messages(id),
                user_id TEXT NOT NULL, emoji TEXT NOT NULL, at_ms INTEGER NOT NULL,
                PRIMARY KEY (message_id, user_id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS removed_reactions (message_id INTEGER NOT NULL REFERENCES messages(id),
                user_id TEXT NOT NULL, emoji TEXT NOT NULL, at_ms INTEGER NOT NULL,
                PRIMARY KEY (message_id, user_id, emoji)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS receipts (message_id INTEGER NOT NULL REFERENCES messages(id),
                user_id TEXT NOT NULL, state INTEGER NOT NULL, at_ms INTEGER NOT NULL,
                PRIMARY KEY (message_id, user_id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS uploads (id TEXT PRIMARY KEY, owner_id TEXT NOT NULL, content_type TEXT NOT NULL,
                size INTEGER NOT NULL, sha256 TEXT NOT NULL, created_ms INTEGER NOT NULL) WITHOUT ROWID;
            """)
        database = Locked(sqlite)
    }

    /// Runs `body` with the open connection under the lock; throws `SQLITE_MISUSE` once the store is closed.
    private func with<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try database.withLock { sqlite in
            guard let sqlite else { throw SQLiteError(extendedCode: 21, message: "the store is closed") }
            return try body(sqlite)
        }
    }

    /// The next value of the global sequence (inside the caller's transaction).
    private static func nextValue(_ db: SQLiteConnection) throws -> Int64 {
        guard let value = try db.queryFirst("UPDATE sequence SET value = value + 1 WHERE name = 'global' RETURNING value", [],
                                            { $0.int64(at: 0) }) else {
            throw SQLiteError(extendedCode: 1, message: "the sequence row is missing")
        }
        return value
    }

    // MARK: Users

    /// Creates the user with a first token hash; false when the user exists.
    func registerUser(_ userID: String, tokenHash: String, nowMs: Int64) throws -> Bool {
        try with { db in
            try db.immediateTransaction {
                try db.execute("INSERT OR IGNORE INTO users (user_id, created_ms) VALUES (?, ?)", [userID, nowMs])
                guard db.changes == 1 else { return false }
                try db.execute("INSERT INTO tokens (token_hash, user_id, created_ms) VALUES (?, ?, ?)", [tokenHash, userID, nowMs])
                return true
            }
        }
    }

    /// Adds a further token hash to an existing user.
    func addToken(userID: String, tokenHash: String, nowMs: Int64) throws {
        try with { db in
            try db.execute("INSERT INTO tokens (token_hash, user_id, created_ms) VALUES (?, ?, ?)", [tokenHash, userID, nowMs])
        }
    }

    /// The user a token hash belongs to.
    func user(forTokenHash tokenHash: String) throws -> String? {
        try with { db in try db.queryFirst("SELECT user_id FROM tokens WHERE token_hash = ?", [tokenHash]) { $0.string(at: 0) } }
    }

    /// The IDs among `userIDs` that are not registered.
    func unknownUsers(_ userIDs: [String]) throws -> [String] {
        try with { db in
            try userIDs.filter { try db.queryFirst("SELECT 1 FROM users WHERE user_id = ?", [$0]) { _ in true } == nil }
        }
    }

    // MARK: Conversations

    /// Creates a conversation with its members; nil when the ID exists.
    func createConversation(_ id: String, creator: String, members: [String], nowMs: Int64) throws -> SocketIOConversation? {
        try with { db in
            try db.immediateTransaction {
                try db.execute("INSERT OR IGNORE INTO conversations (id, creator, created_ms) VALUES (?, ?, ?)", [id, creator, nowMs])
                guard db.changes == 1 else { return nil }
                for member in members {
                    try db.execute("INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?, ?)", [id, member])
                }
                return try Self.conversation(db, id)
            }
        }
    }

    private static func conversation(_ db: SQLiteConnection, _ id: String) throws -> SocketIOConversation? {
        guard let created = try db.queryFirst("SELECT created_ms FROM conversations WHERE id = ?", [id], { $0.int64(at: 0) }) else {
            return nil
        }
        let members = try db.query("SELECT user_id FROM members WHERE conversation_id = ? ORDER BY user_id", [id]) {
            $0.string(at: 0)
        }
        return SocketIOConversation(id: id, members: members, createdMs: created)
    }

    /// The conversation with its sorted members, nil when unknown.
    func conversation(_ id: String) throws -> SocketIOConversation? {
        try with { db in try Self.conversation(db, id) }
    }

    /// Adds members (existing ones are kept) and returns the conversation.
    func addMembers(_ userIDs: [String], to id: String) throws -> SocketIOConversation? {
        try with { db in
            try db.immediateTransaction {
                for member in userIDs {
                    try db.execute("INSERT OR IGNORE INTO members (conversation_id, user_id) VALUES (?, ?)", [id, member])
                }
                return try Self.conversation(db, id)
            }
        }
    }

    // MARK: Messages

    private static let columns = """
        id, conversation_id, client_message_id, sender_id, text, reply_to, attachments, metadata, created_ms, edited_ms,
        deleted_ms, version
        """

    /// The message of the current row of a `columns` query, with its reactions and receipts.
    private static func decode(_ db: SQLiteConnection, _ row: SQLiteStatement) throws -> SocketIOMessage {
        SocketIOMessage(id: row.int64(at: 0), conversationID: row.string(at: 1), clientMessageID: row.string(at: 2),
                        senderID: row.string(at: 3), text: row.string(at: 4), replyTo: row.optionalInt64(at: 5),
                        attachments: JSONValue.parseOrNil(row.string(at: 6)) ?? .array([]),
                        metadata: row.optionalString(at: 7).flatMap { JSONValue.parseOrNil($0) },
                        createdMs: row.int64(at: 8), editedMs: row.optionalInt64(at: 9), deletedMs: row.optionalInt64(at: 10),
                        reactions: [], removedReactions: [], receipts: [], version: row.int64(at: 11))
    }

    /// Fills in reactions, removed reactions and receipts.
    private static func complete(_ db: SQLiteConnection, _ message: SocketIOMessage) throws -> SocketIOMessage {
        var message = message
        message.reactions = try db.query("""
            SELECT user_id, emoji, at_ms FROM reactions WHERE message_id = ? ORDER BY at_ms, user_id
            """, [message.id]) { SocketIOReaction(userID: $0.string(at: 0), emoji: $0.string(at: 1), atMs: $0.int64(at: 2)) }
        message.removedReactions = try db.query("""
            SELECT user_id, emoji, at_ms FROM removed_reactions WHERE message_id = ? ORDER BY at_ms, user_id, emoji
            """, [message.id]) { SocketIOReaction(userID: $0.string(at: 0), emoji: $0.string(at: 1), atMs: $0.int64(at: 2)) }
        message.receipts = try db.query("SELECT user_id, state, at_ms FROM receipts WHERE message_id = ? ORDER BY user_id",
                                        [message.id]) { row in
            SocketIOReceipt(userID: row.string(at: 0), state: SocketIOReceiptState(rawValue: row.int(at: 1)) ?? .delivered,
                            atMs: row.int64(at: 2))
        }
        return message
    }

    /// Runs a `columns` query and completes every message.
    private static func messages(_ db: SQLiteConnection, _ sql: String, _ arguments: [(any SQLiteBindable)?]) throws
        -> [SocketIOMessage] {
        let rows = try db.query(sql, arguments) { try decode(db, $0) }
        return try rows.map { try complete(db, $0) }
    }

    private static func message(_ db: SQLiteConnection, conversation: String, id: Int64) throws -> SocketIOMessage? {
        try messages(db, "SELECT \(columns) FROM messages WHERE conversation_id = ? AND id = ?", [conversation, id]).first
    }

    /// One message of a conversation.
    func message(conversation: String, id: Int64) throws -> SocketIOMessage? {
        try with { db in try Self.message(db, conversation: conversation, id: id) }
    }

    /// The message `sender` already stored in `conversation` under `clientMessageID`, if any.
    func message(conversation: String, sender: String, clientMessageID: String) throws -> SocketIOMessage? {
        try with { db in
            try Self.messages(db, """
                SELECT \(Self.columns) FROM messages WHERE conversation_id = ? AND sender_id = ? AND client_message_id = ?
                """, [conversation, sender, clientMessageID]).first
        }
    }

    /// Stores a new message from `sender`, or returns the one already stored under its `clientMessageId`
    /// (`created` false then).
    func insertMessage(_ input: SocketIOMessageInput, conversation: String, sender: String, nowMs: Int64) throws
        -> (message: SocketIOMessage, created: Bool) {
        try with { db in
            try db.immediateTransaction {
                if let existing = try Self.messages(db, """
                    SELECT \(Self.columns) FROM messages WHERE conversation_id = ? AND sender_id = ? AND client_message_id = ?
                    """, [conversation, sender, input.clientMessageID]).first {
                    return (existing, false)
                }
                let id = try Self.nextValue(db)
                try db.execute("""
                    INSERT INTO messages (id, conversation_id, sender_id, client_message_id, text, reply_to, attachments,
                        metadata, created_ms, version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, [id, conversation, sender, input.clientMessageID, input.text, input.replyTo, input.attachments.serialized,
                          input.metadata?.serialized, nowMs, id])
                guard let stored = try Self.message(db, conversation: conversation, id: id) else {
                    throw SQLiteError(extendedCode: 1, message: "the inserted message is missing")
                }
                return (stored, true)
            }
        }
    }

    /// A history page: the newest `limit` messages with `id < before` (all when nil), newest first, plus whether
    /// more exist.
    func page(conversation: String, before: Int64?, limit: Int) throws -> (messages: [SocketIOMessage], hasMore: Bool) {
        try with { db in
            let found = try Self.messages(db, """
                SELECT \(Self.columns) FROM messages WHERE conversation_id = ? AND id < ? ORDER BY id DESC LIMIT ?
                """, [conversation, before ?? Int64.max, limit + 1])
            return (Array(found.prefix(limit)), found.count > limit)
        }
    }

    /// The number of messages in `conversation`, deleted ones included.
    func messageCount(conversation: String) throws -> Int {
        try with { db in
            try db.queryFirst("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", [conversation]) { $0.int(at: 0) } ?? 0
        }
    }

    /// Messages with `version > after`, by version ascending, at most `limit`, plus whether more exist.
    func changes(conversation: String, after: Int64, limit: Int) throws -> (messages: [SocketIOMessage], hasMore: Bool) {
        try with { db in
            let found = try Self.messages(db, """
                SELECT \(Self.columns) FROM messages WHERE conversation_id = ? AND version > ? ORDER BY version ASC LIMIT ?
                """, [conversation, after, limit + 1])
            return (Array(found.prefix(limit)), found.count > limit)
        }
    }

    /// Runs `change` in a transaction; when it reports a change, bumps the message's version; returns the message.
    private func mutate(conversation: String, id: Int64, _ change: (SQLiteConnection) throws -> Bool) throws -> SocketIOMessage? {
        try with { db in
            try db.immediateTransaction {
                guard try Self.message(db, conversation: conversation, id: id) != nil else { return nil }
                if try change(db) {
                    try db.execute("UPDATE messages SET version = ? WHERE id = ?", [try Self.nextValue(db), id])
                }
                return try Self.message(db, conversation: conversation, id: id)
            }
        }
    }

    /// Replaces the text and sets `editedAt`.
    func edit(conversation: String, id: Int64, text: String, nowMs: Int64) throws -> SocketIOMessage? {
        try mutate(conversation: conversation, id: id) { db in
            try db.execute("UPDATE messages SET text = ?, edited_ms = ? WHERE id = ?", [text, nowMs, id])
            return true
        }
    }

    /// Marks the message deleted: text `""`, no attachments, `deletedAt` set (a second delete changes nothing).
    func delete(conversation: String, id: Int64, nowMs: Int64) throws -> SocketIOMessage? {
        try mutate(conversation: conversation, id: id) { db in
            try db.execute("""
                UPDATE messages SET text = '', attachments = '[]', deleted_ms = ? WHERE id = ? AND deleted_ms IS NULL
                """, [nowMs, id])
            return db.changes == 1
        }
    }

    /// Sets `userID`'s reaction (replacing another emoji, which becomes a tombstone; the same one again changes
    /// nothing); a tombstone of the new emoji is revived.
    func setReaction(conversation: String, id: Int64, userID: String, emoji: String, nowMs: Int64) throws -> SocketIOMessage? {
        try mutate(conversation: conversation, id: id) { db in
            let current = try db.queryFirst("SELECT emoji FROM reactions WHERE message_id = ? AND user_id = ?", [id, userID]) {
                $0.string(at: 0)
            }
            guard current != emoji else { return false }
            if let current { try Self.bury(db, id: id, userID: userID, emoji: current, nowMs: nowMs) }
            try db.execute("DELETE FROM removed_reactions WHERE message_id = ? AND user_id = ? AND emoji = ?", [id, userID, emoji])
            try db.execute("""
                INSERT INTO reactions (message_id, user_id, emoji, at_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (message_id, user_id) DO UPDATE SET emoji = excluded.emoji, at_ms = excluded.at_ms
                """, [id, userID, emoji, nowMs])
            return true
        }
    }

    /// Removes `userID`'s reaction, keeping it as a tombstone (none: changes nothing).
    func removeReaction(conversation: String, id: Int64, userID: String, nowMs: Int64) throws -> SocketIOMessage? {
        try mutate(conversation: conversation, id: id) { db in
            guard let current = try db.queryFirst("DELETE FROM reactions WHERE message_id = ? AND user_id = ? RETURNING emoji",
                                                  [id, userID], { $0.string(at: 0) }) else { return false }
            try Self.bury(db, id: id, userID: userID, emoji: current, nowMs: nowMs)
            return true
        }
    }

    /// Records (or re-dates) the tombstone of `userID`'s `emoji` on message `id`, removed at `nowMs`.
    private static func bury(_ db: SQLiteConnection, id: Int64, userID: String, emoji: String, nowMs: Int64) throws {
        try db.execute("""
            INSERT INTO removed_reactions (message_id, user_id, emoji, at_ms) VALUES (?, ?, ?, ?)
            ON CONFLICT (message_id, user_id, emoji) DO UPDATE SET at_ms = excluded.at_ms
            """, [id, userID, emoji, nowMs])
    }

    /// Moves `userID`'s receipt forward to `state` (a step back or the same state changes nothing).
    func setReceipt(conversation: String, id: Int64, userID: String, state: SocketIOReceiptState, nowMs: Int64) throws
        -> SocketIOMessage? {
        try mutate(conversation: conversation, id: id) { db in
            try db.execute("""
                INSERT INTO receipts (message_id, user_id, state, at_ms) VALUES (?, ?, ?, ?)
                ON CONFLICT (message_id, user_id) DO UPDATE SET state = excluded.state, at_ms = excluded.at_ms
                WHERE excluded.state > receipts.state
                """, [id, userID, state.rawValue, nowMs])
            return db.changes == 1
        }
    }

    // MARK: Uploads

    /// Records an upload whose bytes are already in place.
    func saveUpload(_ upload: SocketIOUpload, nowMs: Int64) throws {
        try with { db in
            try db.execute("""
                INSERT INTO uploads (id, owner_id, content_type, size, sha256, created_ms) VALUES (?, ?, ?, ?, ?, ?)
                """, [upload.id, upload.ownerID, upload.contentType, upload.size, upload.sha256, nowMs])
        }
    }

    /// The upload with this ID.
    func upload(_ id: String) throws -> SocketIOUpload? {
        try with { db in
            try db.queryFirst("SELECT owner_id, content_type, size, sha256 FROM uploads WHERE id = ?", [id]) { row in
                SocketIOUpload(id: id, ownerID: row.string(at: 0), contentType: row.string(at: 1), size: row.int(at: 2),
                               sha256: row.string(at: 3))
            }
        }
    }

    /// Closes the database; later calls fail.
    func close() {
        database.withLock { sqlite in
            sqlite?.close()
            sqlite = nil
        }
    }
}
