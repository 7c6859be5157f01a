import Foundation
import SwitchboardCore
import SwitchboardPostgres

/// The PostgreSQL form of the Switchboard schema: the same tables as `SwitchboardSchema`, in a schema of its own.
///
/// Every text column that takes part in ordering uses `COLLATE "C"`, so rows sort bytewise as in SQLite; times
/// are whole microseconds in `bigint` columns, exactly as SQLite stores them.
enum PostgresStoreSchema {
    /// The first key of the advisory lock that serialises migrations ("SBRD"); the second is the schema's hash.
    static let migrationLockKey: Int32 = 0x5342_5244

    /// One named migration: its name and its DDL for the schema prefix (`"schema".`).
    struct Migration: Sendable {
        /// The stable name recorded once applied (the same names as the SQLite migrations).
        let name: String
        /// The statements, given the quoted schema name followed by a dot.
        let sql: @Sendable (String) -> String
    }

    /// Every migration, in the order they must run. Append only; never edit or reorder a shipped one.
    static let migrations: [Migration] = [
        Migration(name: "v1-initial-schema", sql: initialSchema),
        Migration(name: "v2-leases", sql: leases),
        Migration(name: "v5-bridge-records", sql: bridgeRecords),
    ]

    /// The names of every migration, in order.
    static var names: [String] { migrations.map(\.name) }

    /// Creates the schema if needed and applies every migration not yet recorded, all in one transaction under
    /// an advisory lock, so processes starting together migrate once; returns the names applied now.
    ///
    /// Throws `corruptStore` when the schema holds tables that are not Switchboard's or was migrated by a newer
    /// version.
    static func migrate(_ connection: PostgresConnection, schema: String) throws -> [String] {
        let prefix = quoted(schema) + "."
        return try connection.transaction { connection in
            try connection.query("SELECT pg_advisory_xact_lock($1::integer, hashtext($2))",
                                 [String(migrationLockKey), schema])
            let encoding = try connection.query("SHOW server_encoding").rows.first?.first ?? nil
            guard encoding?.uppercased() == "UTF8" else {
                throw SwitchboardError(.storage, """
                    the PostgreSQL database must use the UTF8 encoding (it uses \(encoding ?? "an unknown one"))
                    """)
            }
            let applied = try appliedNames(connection, schema: schema)
            let known = Set(names)
            let unknown = applied.filter { !known.contains($0) }
            guard unknown.isEmpty else {
                throw SwitchboardError(.corruptStore, """
                    the PostgreSQL schema \(schema) was written by a newer version of Switchboard \
                    (unknown migrations: \(unknown.joined(separator: ", ")))
                    """)
            }
            try connection.execute("""
                CREATE SCHEMA IF NOT EXISTS \(quoted(schema));
                CREATE TABLE IF NOT EXISTS \(prefix)schema_migrations (
                    name TEXT COLLATE "C" PRIMARY KEY,
                    applied_order INTEGER NOT NULL,
                    applied_at BIGINT NOT NULL
                );
                """)
            var appliedNow: [String] = []
            for migration in migrations where !applied.contains(migration.name) {
                try connection.execute(migration.sql(prefix))
                try connection.query("""
                    INSERT INTO \(prefix)schema_migrations (name, applied_order, applied_at)
                    VALUES ($1, (SELECT COALESCE(MAX(applied_order), 0) + 1 FROM \(prefix)schema_migrations), $2::bigint)
                    """, [migration.name, Date().postgresText])
                appliedNow.append(migration.name)
            }
            return appliedNow
        }
    }

    /// The migration names recorded in `schema`, in order; empty for a new schema.
    ///
    /// Throws `corruptStore` when the schema exists and holds tables but no `schema_migrations` table.
    static func appliedNames(_ connection: PostgresConnection, schema: String) throws -> [String] {
        let tables = try connection.query("""
            SELECT c.relname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
            """, [schema]).rows.compactMap { $0.first ?? nil }
        if tables.isEmpty { return [] }
        guard tables.contains("schema_migrations") else {
            throw SwitchboardError(.corruptStore, """
                the PostgreSQL schema \(schema) is not a Switchboard schema: it holds \(tables.count) tables \
                but no schema_migrations table
                """)
        }
        return try connection.query("""
            SELECT name FROM \(quoted(schema)).schema_migrations ORDER BY applied_order
            """).rows.compactMap { $0.first ?? nil }
    }

    /// `name` as a quoted SQL identifier.
    static func quoted(_ name: String) -> String {
        "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    /// The tables and indexes of the first version (`p` is the quoted schema followed by a dot).
    private static func initialSchema(_ p: String) -> String {
        """
        CREATE TABLE \(p)messages (
            id TEXT COLLATE "C" PRIMARY KEY,
            conversation TEXT COLLATE "C" NOT NULL,
            sender TEXT COLLATE "C" NOT NULL,
            text TEXT NOT NULL,
            text_exact BYTEA,
            reply_to TEXT COLLATE "C",
            metadata TEXT NOT NULL DEFAULT '{}',
            ts BIGINT NOT NULL,
            has_server_ts BOOLEAN NOT NULL,
            edited_at BIGINT,
            deleted_at BIGINT,
            delivery TEXT COLLATE "C" NOT NULL,
            delivery_progress DOUBLE PRECISION,
            failure_reason TEXT,
            failure_retryable BOOLEAN,
            is_outgoing BOOLEAN NOT NULL
        );
        COMMENT ON COLUMN \(p)messages.text_exact IS
            'UTF-8 bytes of the text when it holds NUL characters, which PostgreSQL text cannot; text then has U+FFFD';
        CREATE INDEX messages_timeline ON \(p)messages (conversation, ts, id);
        CREATE INDEX messages_unfinished ON \(p)messages (ts, id)
            WHERE delivery IN ('draft', 'pending', 'uploading', 'sending', 'failed');

        CREATE TABLE \(p)attachments (
            message_id TEXT COLLATE "C" NOT NULL REFERENCES \(p)messages (id) ON DELETE CASCADE,
            id TEXT COLLATE "C" NOT NULL,
            position INTEGER NOT NULL,
            filename TEXT NOT NULL,
            mime_type TEXT NOT NULL,
            byte_count BIGINT NOT NULL,
            sha256 TEXT NOT NULL,
            local_path TEXT,
            remote_location TEXT,
            remote_parameters TEXT NOT NULL DEFAULT '{}',
            upload_state TEXT NOT NULL,
            upload_progress DOUBLE PRECISION,
            upload_error TEXT,
            PRIMARY KEY (message_id, id),
            UNIQUE (message_id, position)
        );

        CREATE TABLE \(p)reactions (
            message_id TEXT COLLATE "C" NOT NULL REFERENCES \(p)messages (id) ON DELETE CASCADE,
            user_id TEXT COLLATE "C" NOT NULL,
            symbol TEXT COLLATE "C" NOT NULL,
            at BIGINT NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (message_id, user_id, symbol)
        );

        CREATE TABLE \(p)receipts (
            message_id TEXT COLLATE "C" NOT NULL REFERENCES \(p)messages (id) ON DELETE CASCADE,
            user_id TEXT COLLATE "C" NOT NULL,
            state TEXT NOT NULL,
            at BIGINT NOT NULL,
            PRIMARY KEY (message_id, user_id)
        );

        -- No foreign key to messages: a bridge maps messages it never stores.
        CREATE TABLE \(p)id_map (
            message_id TEXT COLLATE "C" NOT NULL,
            backend TEXT COLLATE "C" NOT NULL,
            conversation TEXT COLLATE "C" NOT NULL,
            remote_id TEXT COLLATE "C" NOT NULL,
            part INTEGER NOT NULL DEFAULT 0,
            UNIQUE (backend, remote_id),
            UNIQUE (message_id, backend, part)
        );

        CREATE TABLE \(p)outbox (
            message_id TEXT COLLATE "C" PRIMARY KEY,
            backend TEXT COLLATE "C" NOT NULL,
            conversation TEXT COLLATE "C" NOT NULL,
            prepared BYTEA,
            no_send BOOLEAN NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at BIGINT NOT NULL,
            last_error TEXT,
            status TEXT COLLATE "C" NOT NULL,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX outbox_due ON \(p)outbox (backend, status, no_send, created_at, message_id, next_attempt_at);

        CREATE TABLE \(p)sync_cursors (
            conversation TEXT COLLATE "C" NOT NULL,
            backend TEXT COLLATE "C" NOT NULL,
            kind TEXT COLLATE "C" NOT NULL,
            cursor TEXT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (conversation, backend, kind)
        );

        CREATE TABLE \(p)pending_operations (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            wait_key TEXT COLLATE "C" NOT NULL,
            kind TEXT NOT NULL,
            payload BYTEA NOT NULL,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX pending_operations_wait_key ON \(p)pending_operations (wait_key, id);
        """
    }

    /// The lease table of the second version: one row per held lease.
    private static func leases(_ p: String) -> String {
        """
        CREATE TABLE \(p)leases (
            name TEXT COLLATE "C" PRIMARY KEY,
            owner TEXT COLLATE "C" NOT NULL,
            expires_at BIGINT NOT NULL
        );
        """
    }

    /// The per-pair bridge records of `SwitchboardSchema`'s fifth version (the SQLite-only third and fourth have no
    /// PostgreSQL counterpart). A copy's text is kept as bytes, like `messages.text_exact`, so any text round-trips.
    private static func bridgeRecords(_ p: String) -> String {
        """
        CREATE TABLE \(p)bridge_copies (
            pair TEXT COLLATE "C" NOT NULL,
            message_id TEXT COLLATE "C" NOT NULL,
            origin TEXT COLLATE "C",
            sender TEXT COLLATE "C" NOT NULL,
            text BYTEA NOT NULL,
            sent_at BIGINT NOT NULL,
            edited_at BIGINT,
            deleted_at BIGINT,
            pending_towards TEXT COLLATE "C",
            prepared BYTEA,
            PRIMARY KEY (pair, message_id)
        );
        CREATE INDEX bridge_copies_message ON \(p)bridge_copies (message_id);

        CREATE TABLE \(p)bridge_cursors (
            pair TEXT COLLATE "C" NOT NULL,
            backend TEXT COLLATE "C" NOT NULL,
            cursor TEXT NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (pair, backend)
        );

        CREATE TABLE \(p)bridge_operations (
            id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            pair TEXT COLLATE "C" NOT NULL,
            wait_key TEXT COLLATE "C" NOT NULL,
            kind TEXT NOT NULL,
            payload BYTEA NOT NULL,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX bridge_operations_wait_key ON \(p)bridge_operations (pair, wait_key, id);
        """
    }
}
