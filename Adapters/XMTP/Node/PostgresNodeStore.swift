import Foundation
import SwitchboardCore
import SwitchboardPostgres

/// The node's store in PostgreSQL, schema `xmtp_node`, through a small connection pool.
///
/// Sequence ids come from a one-row counter updated inside the append transaction: its row lock serialises
/// appends until commit, so ids are assigned in commit order (a plain sequence would not guarantee that).
public final class PostgresNodeStore: XMTPNodeStore {
    private let pool: PostgresPool

    /// Connects to `url`, applies the schema and keeps up to `poolSize` connections.
    public init(url: String, poolSize: Int = 4) throws {
        pool = PostgresPool(url: url, size: poolSize)
        do {
            try pool.run { connection in try connection.transaction { connection in
                // Serialises concurrent first starts against the same database.
                try connection.execute("SELECT pg_advisory_xact_lock(7262737)")
                try connection.execute("""
                    CREATE SCHEMA IF NOT EXISTS xmtp_node;
                    CREATE TABLE IF NOT EXISTS xmtp_node.inboxes (inbox_id TEXT PRIMARY KEY, created_ns BIGINT NOT NULL);
                    CREATE TABLE IF NOT EXISTS xmtp_node.tokens (token_hash TEXT PRIMARY KEY,
                        inbox_id TEXT NOT NULL REFERENCES xmtp_node.inboxes(inbox_id), created_ns BIGINT NOT NULL);
                    CREATE TABLE IF NOT EXISTS xmtp_node.chat_groups (group_id TEXT PRIMARY KEY, creator TEXT NOT NULL,
                        created_ns BIGINT NOT NULL);
                    CREATE TABLE IF NOT EXISTS xmtp_node.group_members (
                        group_id TEXT NOT NULL REFERENCES xmtp_node.chat_groups(group_id),
                        inbox_id TEXT NOT NULL, PRIMARY KEY (group_id, inbox_id));
                    CREATE TABLE IF NOT EXISTS xmtp_node.message_sequence (
                        singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton), last_id BIGINT NOT NULL);
                    INSERT INTO xmtp_node.message_sequence (singleton, last_id) VALUES (TRUE, 0) ON CONFLICT DO NOTHING;
                    CREATE TABLE IF NOT EXISTS xmtp_node.group_messages (id BIGINT PRIMARY KEY, group_id TEXT NOT NULL,
                        created_ns BIGINT NOT NULL, data BYTEA NOT NULL, sender_hmac BYTEA NOT NULL,
                        should_push BOOLEAN NOT NULL);
                    CREATE INDEX IF NOT EXISTS group_messages_by_group ON xmtp_node.group_messages (group_id, id);
                    CREATE TABLE IF NOT EXISTS xmtp_node.upload_grants (token_hash TEXT PRIMARY KEY,
                        content_digest TEXT NOT NULL, content_length BIGINT NOT NULL, expires_ns BIGINT NOT NULL,
                        inbox_id TEXT NOT NULL);
                    """)
            } }
        } catch {
            pool.close()
            throw error
        }
    }

    /// Runs `body` with a pooled connection (blocking); a broken connection is dropped.
    @discardableResult
    private func with<T>(_ body: (PostgresConnection) throws -> T) throws -> T { try pool.run(body) }

    /// `\x…` bytea input text.
    private static func bytea(_ bytes: [UInt8]) -> String { "\\x" + Digest.hex(bytes) }

    /// Parses bytea output text (hex format).
    private static func bytes(_ text: String?) throws -> [UInt8] {
        guard let text, text.hasPrefix("\\x"), let bytes = NodeHex.decode(String(text.dropFirst(2))) else {
            throw PostgresError(code: .queryFailed, message: "unexpected bytea text")
        }
        return bytes
    }

    /// Creates the inbox and its first token hash; false when it exists.
    public func registerInbox(_ inboxID: String, tokenHash: String, nowNs: UInt64) throws -> Bool {
        try with { connection in
            try connection.transaction { connection in
                let inserted = try connection.query(
                    "INSERT INTO xmtp_node.inboxes (inbox_id, created_ns) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                    [inboxID, String(nowNs)])
                guard inserted.affectedRows == 1 else { return false }
                try connection.query("INSERT INTO xmtp_node.tokens (token_hash, inbox_id, created_ns) VALUES ($1, $2, $3)",
                                     [tokenHash, inboxID, String(nowNs)])
                return true
            }
        }
    }

    /// Adds a token hash to an existing inbox.
    public func addToken(inboxID: String, tokenHash: String, nowNs: UInt64) throws {
        try with { connection in
            try connection.query("INSERT INTO xmtp_node.tokens (token_hash, inbox_id, created_ns) VALUES ($1, $2, $3)",
                                 [tokenHash, inboxID, String(nowNs)])
        }
    }

    /// The inbox of a token hash.
    public func inbox(forTokenHash tokenHash: String) throws -> String? {
        try with { connection in
            try connection.query("SELECT inbox_id FROM xmtp_node.tokens WHERE token_hash = $1", [tokenHash]).rows.first?[0]
        }
    }

    /// Whether the inbox is registered.
    public func inboxExists(_ inboxID: String) throws -> Bool {
        try with { connection in
            !(try connection.query("SELECT 1 FROM xmtp_node.inboxes WHERE inbox_id = $1", [inboxID]).rows.isEmpty)
        }
    }

    /// Creates a group with its members; false when it exists.
    public func createGroup(_ groupID: XMTPNodeGroupID, creator: String, members: [String], nowNs: UInt64) throws -> Bool {
        try with { connection in
            try connection.transaction { connection in
                let inserted = try connection.query("""
                    INSERT INTO xmtp_node.chat_groups (group_id, creator, created_ns) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
                    """, [groupID.hex, creator, String(nowNs)])
                guard inserted.affectedRows == 1 else { return false }
                for member in members {
                    try connection.query("""
                        INSERT INTO xmtp_node.group_members (group_id, inbox_id) VALUES ($1, $2) ON CONFLICT DO NOTHING
                        """, [groupID.hex, member])
                }
                return true
            }
        }
    }

    /// The sorted members, nil for an unknown group.
    public func members(of groupID: XMTPNodeGroupID) throws -> [String]? {
        try with { connection in
            guard !(try connection.query("SELECT 1 FROM xmtp_node.chat_groups WHERE group_id = $1", [groupID.hex]).rows.isEmpty) else {
                return nil
            }
            return try connection.query("""
                SELECT inbox_id FROM xmtp_node.group_members WHERE group_id = $1 ORDER BY inbox_id COLLATE "C"
                """, [groupID.hex]).rows.map { $0[0] ?? "" }
        }
    }

    /// Adds members.
    public func addMembers(_ inboxIDs: [String], to groupID: XMTPNodeGroupID) throws {
        try with { connection in
            try connection.transaction { connection in
                for member in inboxIDs {
                    try connection.query("""
                        INSERT INTO xmtp_node.group_members (group_id, inbox_id) VALUES ($1, $2) ON CONFLICT DO NOTHING
                        """, [groupID.hex, member])
                }
            }
        }
    }

    /// Removes members.
    public func removeMembers(_ inboxIDs: [String], from groupID: XMTPNodeGroupID) throws {
        try with { connection in
            try connection.transaction { connection in
                for member in inboxIDs {
                    try connection.query("DELETE FROM xmtp_node.group_members WHERE group_id = $1 AND inbox_id = $2",
                                         [groupID.hex, member])
                }
            }
        }
    }

    /// Stores the messages atomically in order, ids from the locked counter row.
    public func appendMessages(_ messages: [XMTPNodeMessageInput], nowNs: UInt64) throws -> [XMTPNodeStoredMessage] {
        guard !messages.isEmpty else { return [] }
        return try with { connection in
            try connection.transaction { connection in
                let counter = try connection.query("""
                    UPDATE xmtp_node.message_sequence SET last_id = last_id + $1 RETURNING last_id
                    """, [String(messages.count)])
                guard let text = counter.rows.first?[0], let last = UInt64(text) else {
                    throw PostgresError(code: .queryFailed, message: "the message sequence row is missing")
                }
                let first = last - UInt64(messages.count) + 1
                var stored: [XMTPNodeStoredMessage] = []
                for (offset, message) in messages.enumerated() {
                    let id = first + UInt64(offset)
                    try connection.query("""
                        INSERT INTO xmtp_node.group_messages (id, group_id, created_ns, data, sender_hmac, should_push)
                        VALUES ($1, $2, $3, $4::bytea, $5::bytea, $6)
                        """, [String(id), message.groupID.hex, String(nowNs), Self.bytea(message.data), Self.bytea(message.senderHMAC),
                              message.shouldPush ? "true" : "false"])
                    stored.append(XMTPNodeStoredMessage(id: id, createdNs: nowNs, groupID: message.groupID, data: message.data,
                                                        senderHMAC: message.senderHMAC, shouldPush: message.shouldPush))
                }
                return stored
            }
        }
    }

    private static let columns = "id, group_id, created_ns, data, sender_hmac, should_push"

    private static func decode(_ row: [String?]) throws -> XMTPNodeStoredMessage {
        guard let id = row[0].flatMap({ UInt64($0) }), let groupID = row[1].flatMap({ XMTPNodeGroupID(hex: $0) }),
              let created = row[2].flatMap({ UInt64($0) }) else {
            throw PostgresError(code: .queryFailed, message: "unexpected message row")
        }
        return XMTPNodeStoredMessage(id: id, createdNs: created, groupID: groupID, data: try bytes(row[3]),
                                     senderHMAC: try bytes(row[4]), shouldPush: row[5] == "t")
    }

    /// One page of a group's messages.
    public func queryMessages(_ groupID: XMTPNodeGroupID, page: XMTPNodePage) throws -> [XMTPNodeStoredMessage] {
        let sql: String
        var parameters: [String?] = [groupID.hex]
        switch page.direction {
        case .ascending:
            sql = "SELECT \(Self.columns) FROM xmtp_node.group_messages WHERE group_id = $1 AND id > $2 ORDER BY id ASC LIMIT $3"
            parameters.append(String(Int64(clamping: page.cursor)))
        case .descending where page.cursor == 0:
            sql = "SELECT \(Self.columns) FROM xmtp_node.group_messages WHERE group_id = $1 ORDER BY id DESC LIMIT $2"
        case .descending:
            sql = "SELECT \(Self.columns) FROM xmtp_node.group_messages WHERE group_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3"
            parameters.append(String(Int64(clamping: page.cursor)))
        }
        parameters.append(String(page.limit))
        return try with { connection in try connection.query(sql, parameters).rows.map(Self.decode) }
    }

    /// The next messages after each group's cursor, ascending.
    public func messages(after cursors: [XMTPNodeGroupID: UInt64], limit: Int) throws -> [XMTPNodeStoredMessage] {
        guard !cursors.isEmpty else { return [] }
        let sorted = cursors.sorted { $0.key < $1.key }
        let groups = "{" + sorted.map(\.key.hex).joined(separator: ",") + "}"
        let afters = "{" + sorted.map { String(Int64(clamping: $0.value)) }.joined(separator: ",") + "}"
        return try with { connection in
            try connection.query("""
                SELECT m.id, m.group_id, m.created_ns, m.data, m.sender_hmac, m.should_push
                FROM xmtp_node.group_messages m
                JOIN unnest($1::text[], $2::bigint[]) AS c(group_id, after) ON m.group_id = c.group_id AND m.id > c.after
                ORDER BY m.id ASC LIMIT $3
                """, [groups, afters, String(limit)]).rows.map(Self.decode)
        }
    }

    /// Saves an upload grant.
    public func saveUploadGrant(_ grant: XMTPNodeUploadGrant) throws {
        try with { connection in
            try connection.query("""
                INSERT INTO xmtp_node.upload_grants (token_hash, content_digest, content_length, expires_ns, inbox_id)
                VALUES ($1, $2, $3, $4, $5)
                """, [grant.tokenHash, grant.contentDigest, String(Int64(clamping: grant.contentLength)),
                      String(Int64(clamping: grant.expiresNs)), grant.inboxID])
        }
    }

    /// The grant of a token hash.
    public func uploadGrant(tokenHash: String) throws -> XMTPNodeUploadGrant? {
        try with { connection in
            try connection.query("""
                SELECT content_digest, content_length, expires_ns, inbox_id FROM xmtp_node.upload_grants WHERE token_hash = $1
                """, [tokenHash]).rows.first.map { row in
                XMTPNodeUploadGrant(tokenHash: tokenHash, contentDigest: row[0] ?? "", contentLength: UInt64(row[1] ?? "") ?? 0,
                                    expiresNs: UInt64(row[2] ?? "") ?? 0, inboxID: row[3] ?? "")
            }
        }
    }

    /// Closes every idle connection.
    public func close() { pool.close() }
}
