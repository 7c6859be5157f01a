import Foundation
import Synchronization

/// The node's store in one SQLite file (WAL), every access serialised by a mutex, so ids follow commit order.
public final class SQLiteNodeStore: XMTPNodeStore {
    private let database: Mutex<NodeSQLite?>

    /// Opens (creating) the database at `path` and applies the schema.
    public init(path: String) throws {
        let sqlite = try NodeSQLite(path: path)
        try sqlite.execute("""
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
        database = Mutex(sqlite)
    }

    @discardableResult
    private func with<T>(_ body: (NodeSQLite) throws -> T) throws -> T {
        try database.withLock { sqlite in
            guard let sqlite else { throw NodeSQLiteError(code: 21, message: "the store is closed") }
            return try body(sqlite)
        }
    }

    /// Creates the inbox and its first token hash; false when it exists.
    public func registerInbox(_ inboxID: String, tokenHash: String, nowNs: UInt64) throws -> Bool {
        try with { db in
            try db.transaction {
                try db.query("INSERT OR IGNORE INTO inboxes (inbox_id, created_ns) VALUES (?, ?)", [.text(inboxID), .integer(Int64(nowNs))])
                guard db.changes == 1 else { return false }
                try db.query("INSERT INTO tokens (token_hash, inbox_id, created_ns) VALUES (?, ?, ?)",
                             [.text(tokenHash), .text(inboxID), .integer(Int64(nowNs))])
                return true
            }
        }
    }

    /// Adds a token hash to an existing inbox.
    public func addToken(inboxID: String, tokenHash: String, nowNs: UInt64) throws {
        try with { db in
            try db.query("INSERT INTO tokens (token_hash, inbox_id, created_ns) VALUES (?, ?, ?)",
                         [.text(tokenHash), .text(inboxID), .integer(Int64(nowNs))])
        }
    }

    /// The inbox of a token hash.
    public func inbox(forTokenHash tokenHash: String) throws -> String? {
        try with { db in try db.query("SELECT inbox_id FROM tokens WHERE token_hash = ?", [.text(tokenHash)]).first?[0].text }
    }

    /// Whether the inbox is registered.
    public func inboxExists(_ inboxID: String) throws -> Bool {
        try with { db in !(try db.query("SELECT 1 FROM inboxes WHERE inbox_id = ?", [.text(inboxID)]).isEmpty) }
    }

    /// Creates a group with its members; false when it exists.
    public func createGroup(_ groupID: XMTPNodeGroupID, creator: String, members: [String], nowNs: UInt64) throws -> Bool {
        try with { db in
            try db.transaction {
                try db.query("INSERT OR IGNORE INTO chat_groups (group_id, creator, created_ns) VALUES (?, ?, ?)",
                             [.text(groupID.hex), .text(creator), .integer(Int64(nowNs))])
                guard db.changes == 1 else { return false }
                for member in members {
                    try db.query("INSERT OR IGNORE INTO group_members (group_id, inbox_id) VALUES (?, ?)",
                                 [.text(groupID.hex), .text(member)])
                }
                return true
            }
        }
    }

    /// The sorted members, nil for an unknown group.
    public func members(of groupID: XMTPNodeGroupID) throws -> [String]? {
        try with { db in
            guard !(try db.query("SELECT 1 FROM chat_groups WHERE group_id = ?", [.text(groupID.hex)]).isEmpty) else { return nil }
            return try db.query("SELECT inbox_id FROM group_members WHERE group_id = ? ORDER BY inbox_id",
                                [.text(groupID.hex)]).map { $0[0].text }
        }
    }

    /// Adds members.
    public func addMembers(_ inboxIDs: [String], to groupID: XMTPNodeGroupID) throws {
        try with { db in
            try db.transaction {
                for member in inboxIDs {
                    try db.query("INSERT OR IGNORE INTO group_members (group_id, inbox_id) VALUES (?, ?)",
                                 [.text(groupID.hex), .text(member)])
                }
            }
        }
    }

    /// Removes members.
    public func removeMembers(_ inboxIDs: [String], from groupID: XMTPNodeGroupID) throws {
        try with { db in
            try db.transaction {
                for member in inboxIDs {
                    try db.query("DELETE FROM group_members WHERE group_id = ? AND inbox_id = ?", [.text(groupID.hex), .text(member)])
                }
            }
        }
    }

    /// Stores the messages atomically in order.
    public func appendMessages(_ messages: [XMTPNodeMessageInput], nowNs: UInt64) throws -> [XMTPNodeStoredMessage] {
        try with { db in
            try db.transaction {
                try messages.map { message in
                    let rows = try db.query("""
                        INSERT INTO group_messages (group_id, created_ns, data, sender_hmac, should_push)
                        VALUES (?, ?, ?, ?, ?) RETURNING id
                        """, [.text(message.groupID.hex), .integer(Int64(nowNs)), .blob(message.data), .blob(message.senderHMAC),
                              .integer(message.shouldPush ? 1 : 0)])
                    return XMTPNodeStoredMessage(id: UInt64(rows[0][0].int64), createdNs: nowNs, groupID: message.groupID,
                                                 data: message.data, senderHMAC: message.senderHMAC, shouldPush: message.shouldPush)
                }
            }
        }
    }

    private static let columns = "id, group_id, created_ns, data, sender_hmac, should_push"

    private static func decode(_ row: [NodeSQLValue]) throws -> XMTPNodeStoredMessage {
        guard let groupID = XMTPNodeGroupID(hex: row[1].text) else { throw NodeSQLiteError(code: 11, message: "bad group id in row") }
        return XMTPNodeStoredMessage(id: UInt64(row[0].int64), createdNs: UInt64(row[2].int64), groupID: groupID,
                                     data: row[3].blob, senderHMAC: row[4].blob, shouldPush: row[5].int64 != 0)
    }

    /// One page of a group's messages.
    public func queryMessages(_ groupID: XMTPNodeGroupID, page: XMTPNodePage) throws -> [XMTPNodeStoredMessage] {
        let sql: String
        var arguments: [NodeSQLValue] = [.text(groupID.hex)]
        switch page.direction {
        case .ascending:
            sql = "SELECT \(Self.columns) FROM group_messages WHERE group_id = ? AND id > ? ORDER BY id ASC LIMIT ?"
            arguments.append(.integer(Int64(clamping: page.cursor)))
        case .descending where page.cursor == 0:
            sql = "SELECT \(Self.columns) FROM group_messages WHERE group_id = ? ORDER BY id DESC LIMIT ?"
        case .descending:
            sql = "SELECT \(Self.columns) FROM group_messages WHERE group_id = ? AND id < ? ORDER BY id DESC LIMIT ?"
            arguments.append(.integer(Int64(clamping: page.cursor)))
        }
        arguments.append(.integer(Int64(page.limit)))
        return try with { db in try db.query(sql, arguments).map(Self.decode) }
    }

    /// The next messages after each group's cursor, ascending.
    public func messages(after cursors: [XMTPNodeGroupID: UInt64], limit: Int) throws -> [XMTPNodeStoredMessage] {
        guard !cursors.isEmpty else { return [] }
        let sorted = cursors.sorted { $0.key < $1.key }
        let condition = Array(repeating: "(group_id = ? AND id > ?)", count: sorted.count).joined(separator: " OR ")
        var arguments: [NodeSQLValue] = []
        for (group, cursor) in sorted { arguments += [.text(group.hex), .integer(Int64(clamping: cursor))] }
        arguments.append(.integer(Int64(limit)))
        return try with { db in
            try db.query("SELECT \(Self.columns) FROM group_messages WHERE \(condition) ORDER BY id ASC LIMIT ?", arguments)
                .map(Self.decode)
        }
    }

    /// Saves an upload grant.
    public func saveUploadGrant(_ grant: XMTPNodeUploadGrant) throws {
        try with { db in
            try db.query("""
                INSERT INTO upload_grants (token_hash, content_digest, content_length, expires_ns, inbox_id) VALUES (?, ?, ?, ?, ?)
                """, [.text(grant.tokenHash), .text(grant.contentDigest), .integer(Int64(clamping: grant.contentLength)),
                      .integer(Int64(clamping: grant.expiresNs)), .text(grant.inboxID)])
        }
    }

    /// The grant of a token hash.
    public func uploadGrant(tokenHash: String) throws -> XMTPNodeUploadGrant? {
        try with { db in
            try db.query("""
                SELECT content_digest, content_length, expires_ns, inbox_id FROM upload_grants WHERE token_hash = ?
                """, [.text(tokenHash)]).first.map { row in
                XMTPNodeUploadGrant(tokenHash: tokenHash, contentDigest: row[0].text, contentLength: UInt64(row[1].int64),
                                    expiresNs: UInt64(row[2].int64), inboxID: row[3].text)
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
