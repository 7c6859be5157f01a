import Foundation
import SwitchboardSQLite

/// A plain SQLite connection set up like the store's (WAL, synchronous NORMAL): the baselines' side.
enum SQLiteBaseline {
    /// The `id_map` table exactly as the store creates it.
    static let idMapSchema = """
        CREATE TABLE id_map (
            message_id TEXT NOT NULL,
            backend TEXT NOT NULL,
            conversation TEXT NOT NULL,
            remote_id TEXT NOT NULL,
            part INTEGER NOT NULL DEFAULT 0,
            UNIQUE (backend, remote_id),
            UNIQUE (message_id, backend, part)
        ) STRICT;
        """

    /// The `messages` table and timeline index as the store creates them.
    static let messagesSchema = """
        CREATE TABLE messages (
            id TEXT PRIMARY KEY NOT NULL, conversation TEXT NOT NULL, sender TEXT NOT NULL, text TEXT NOT NULL,
            reply_to TEXT, metadata TEXT NOT NULL DEFAULT '{}', ts INTEGER NOT NULL,
            has_server_ts INTEGER NOT NULL, edited_at INTEGER, deleted_at INTEGER, delivery TEXT NOT NULL,
            delivery_progress REAL, failure_reason TEXT, failure_retryable INTEGER, is_outgoing INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX messages_timeline ON messages (conversation, ts, id);
        """

    /// Opens `path` in WAL mode with synchronous NORMAL and runs `schema`.
    static func open(_ path: String, schema: String) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(path: path)
        try connection.executeScript("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        try connection.executeScript(schema)
        return connection
    }
}
