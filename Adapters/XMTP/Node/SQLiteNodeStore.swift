import Foundation
import SwitchboardSQLite
import SwitchboardCore

/// The node's store in one SQLite file (WAL), every access serialised by a mutex, so ids follow commit order.
public final class SQLiteNodeStore: XMTPNodeStore {
    private let database: Locked<SQLiteConnection?>

    /// Opens (creating) the database at `path` in WAL mode with a busy timeout and applies the schema.
    public init(path: String) throws {
        let sqlite = try SQLiteConnection.openServerStore(path: path)
        try sqlite.executeScript("""
            CREATE TABLE IF NOT EXISTS inboxes (inbox_id TEXT PRIMARY KEY, created_ns INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS tokens (token_hash TEXT PRIMARY KEY,
                inbox_id TEXT NOT NULL REFERENCES inboxes(inbox_id), created_ns INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS chat_groups (group_id TEXT PRIMARY KEY, creator TEXT NOT NULL,
                created_ns INTEGER NOT NULL);
            CREATE TABLE IF NOT EXISTS group_members (group_id TEXT NOT NULL REFERENCES chat_groups(group_id),
                inbox_id TEXT NOT NULL, PRIMARY KEY (group_id, inbox_id)) WITHOUT ROWID;
            CREATE TABLE IF NOT EXISTS group_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, group_id TEXT NOT NULL,
                created_ns INTEGER NOT NULL, data BLOB NOT NULL, sender_hmac BLOB NOT NULL, should_push INTEGER NOT NULL);
            CREATE INDEX IF NOT EXISTS group_messages_by_group ON group_messages (group_id, id);
            CREATE TABLE IF NOT EXISTS upload_grants (token_hash TEXT PRIMARY KEY, content_digest TEXT NOT NULL,
                content_length INTEGER NOT NULL, expires_ns INTEGER NOT NULL, inbox_id TEXT NOT NULL);
            """)
        database = Locked(sqlite)
    }

    /// Runs `body` with the open connection under the lock; throws `SQLITE_MISUSE` once the store is closed.
    @discardableResult
    private func with<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try database.withLock { sqlite in
            guard let sqlite else { throw SQLiteError(extendedCode: 21, message: "the store is closed") }
            return try body(sqlite)
        }
    }

    /// Creates the inbox and its first token hash; false when it exists.
    public func registerInbox(_ inboxID: String, tokenHash: String, nowNs: UInt64) throws -> Bool {
        try with { db in
            try db.immediateTransaction {
                try db.execute("INSERT OR IGNORE INTO inboxes (inbox_id, created_ns) VALUES (?, ?)", [inboxID, Int64(nowNs)])
                guard db.changes == 1 else { return false }
                try db.execute("INSERT INTO tokens (token_hash, inbox_id, created_ns) VALUES (?, ?, ?)",
                               [tokenHash, inboxID, Int64(nowNs)])
                return true
            }
        }
    }

    /// Adds a token hash to an existing inbox.
    public func addToken(inboxID: String, tokenHash: String, nowNs: UInt64) throws {
        try with { db in
            try db.execute("INSERT INTO tokens (token_hash, inbox_id, created_ns) VALUES (?, ?, ?)",
                           [tokenHash, inboxID, Int64(nowNs)])
        }
    }

    /// The inbox of a token hash.
    public func inbox(forTokenHash tokenHash: String) throws -> String? {
        try with { db in try db.queryFirst("SELECT inbox_id FROM tokens WHERE token_hash = ?", [tokenHash]) { $0.string(at: 0) } }
    }

    /// Whether the inbox is registered.
    public func inboxExists(_ inboxID: String) throws -> Bool {
        try with { db in try db.queryFirst("SELECT 1 FROM inboxes WHERE inbox_id = ?", [inboxID]) { _ in true } ?? false }
    }

    /// Creates a group with its members; false when it exists.
    public func createGroup(_ groupID: XMTPNodeGroupID, creator: String, members: [String], nowNs: UInt64) throws -> Bool {
        try with { db in
            try db.immediateTransaction {
                try db.execute("INSERT OR IGNORE INTO chat_groups (group_id, creator, created_ns) VALUES (?, ?, ?)",
                               [groupID.hex, creator, Int64(nowNs)])
                guard db.changes == 1 else { return false }
                for member in members {
                    try db.execute("INSERT OR IGNORE INTO group_members (group_id, inbox_id) VALUES (?, ?)", [groupID.hex, member])
                }
                return true
            }
        }
    }

    /// The sorted members, nil for an unknown group.
    public func members(of groupID: XMTPNodeGroupID) throws -> [String]? {
        try with { db in
            guard try db.queryFirst("SELECT 1 FROM chat_groups WHERE group_id = ?", [groupID.hex], { _ in true }) != nil else {
                return nil
            }
            return try db.query("SELECT inbox_id FROM group_members WHERE group_id = ? ORDER BY inbox_id", [groupID.hex]) {
                $0.string(at: 0)
            }
        }
    }

    /// Adds members.
    public func addMembers(_ inboxIDs: [String], to groupID: XMTPNodeGroupID) throws {
        try with { db in
            try db.immediateTransaction {
                for member in inboxIDs {
                    try db.execute("INSERT OR IGNORE INTO group_members (group_id, inbox_id) VALUES (?, ?)", [groupID.hex, member])
                }
            }
        }
    }

    /// Removes members.
    public func removeMembers(_ inboxIDs: [String], from groupID: XMTPNodeGroupID) throws {
        try with { db in
            try db.immediateTransaction {
                for member in inboxIDs {
                    try db.execute("DELETE FROM group_members WHERE group_id = ? AND inbox_id = ?", [groupID.hex, member])
                }
            }
        }
    }

    /// Stores the messages atomically in order.
    public func appendMessages(_ messages: [XMTPNodeMessageInput], nowNs: UInt64) throws -> [XMTPNodeStoredMessage] {
        try with { db in
            try db.immediateTransaction {
                try messages.map { message in
                    // The new row's ID from the connection, not `RETURNING id`: SQLite collects RETURNING rows in a
                    // temporary table, a third of an insert's cost here.
                    try db.execute("""
                        INSERT INTO group_messages (group_id, created_ns, data, sender_hmac, should_push)
                        VALUES (?, ?, ?, ?, ?)
                        """, [message.groupID.hex, Int64(nowNs), Data(message.data), Data(message.senderHMAC), message.shouldPush])
                    let id = db.lastInsertRowID
                    return XMTPNodeStoredMessage(id: UInt64(id), createdNs: nowNs, groupID: message.groupID,
                                                 data: message.data, senderHMAC: message.senderHMAC, shouldPush: message.shouldPush)
                }
            }
        }
    }

    private static let columns = "id, group_id, created_ns, data, sender_hmac, should_push"

    /// The message in the current row of a `columns` query; a malformed group id is `SQLITE_CORRUPT`.
    private static func decode(_ row: SQLiteStatement) throws -> XMTPNodeStoredMessage {
        guard let groupID = XMTPNodeGroupID(hex: row.string(at: 1)) else {
            throw SQLiteError(extendedCode: 11, message: "bad group id in row")
        }
        return XMTPNodeStoredMessage(id: UInt64(row.int64(at: 0)), createdNs: UInt64(row.int64(at: 2)), groupID: groupID,
                                     data: [UInt8](row.data(at: 3)), senderHMAC: [UInt8](row.data(at: 4)), shouldPush: row.bool(at: 5))
    }

    /// One page of a group's messages.
    public func queryMessages(_ groupID: XMTPNodeGroupID, page: XMTPNodePage) throws -> [XMTPNodeStoredMessage] {
        let sql: String
        var arguments: [(any SQLiteBindable)?] = [groupID.hex]
        switch page.direction {
        case .ascending:
            sql = "SELECT \(Self.columns) FROM group_messages WHERE group_id = ? AND id > ? ORDER BY id ASC LIMIT ?"
            arguments.append(Int64(clamping: page.cursor))
        case .descending where page.cursor == 0:
            sql = "SELECT \(Self.columns) FROM group_messages WHERE group_id = ? ORDER BY id DESC LIMIT ?"
        case .descending:
            sql = "SELECT \(Self.columns) FROM group_messages WHERE group_id = ? AND id < ? ORDER BY id DESC LIMIT ?"
            arguments.append(Int64(clamping: page.cursor))
        }
        arguments.append(page.limit)
        return try with { db in try db.query(sql, arguments, Self.decode) }
    }

    /// The next messages after each group's cursor, ascending.
    public func messages(after cursors: [XMTPNodeGroupID: UInt64], limit: Int) throws -> [XMTPNodeStoredMessage] {
        guard !cursors.isEmpty else { return [] }
        let sorted = cursors.sorted { $0.key < $1.key }
        let condition = Array(repeating: "(group_id = ? AND id > ?)", count: sorted.count).joined(separator: " OR ")
        var arguments: [(any SQLiteBindable)?] = []
        for (group, cursor) in sorted { arguments += [group.hex, Int64(clamping: cursor)] }
        arguments.append(limit)
        return try with { db in
            try db.query("SELECT \(Self.columns) FROM group_messages WHERE \(condition) ORDER BY id ASC LIMIT ?", arguments,
                         Self.decode)
        }
    }

    /// Saves an upload grant.
    public func saveUploadGrant(_ grant: XMTPNodeUploadGrant) throws {
        try with { db in
            try db.execute("""
                INSERT INTO upload_grants (token_hash, content_digest, content_length, expires_ns, inbox_id) VALUES (?, ?, ?, ?, ?)
                """, [grant.tokenHash, grant.contentDigest, Int64(clamping: grant.contentLength), Int64(clamping: grant.expiresNs),
                      grant.inboxID])
        }
    }

    /// The grant of a token hash.
    public func uploadGrant(tokenHash: String) throws -> XMTPNodeUploadGrant? {
        try with { db in
            try db.queryFirst("""
                SELECT content_digest, content_length, expires_ns, inbox_id FROM upload_grants WHERE token_hash = ?
                """, [tokenHash]) { row in
                XMTPNodeUploadGrant(tokenHash: tokenHash, contentDigest: row.string(at: 0), contentLength: UInt64(row.int64(at: 1)),
                                    expiresNs: UInt64(row.int64(at: 2)), inboxID: row.string(at: 3))
            }
        }
    }

    /// Closes the database.
    public func close() {
        database.withLock { sqlite in
            sqlite?.close()
            sqlite = nil
        }
    }
}
