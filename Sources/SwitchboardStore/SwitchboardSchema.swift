import Foundation

/// The Switchboard database schema: its application id and its migrations, oldest first.
enum SwitchboardSchema {
    /// The `application_id` stamped in the header of every Switchboard database: "SBRD".
    static let applicationID: Int32 = 0x5342_5244

    /// Every migration, in the order they must run. Append only; never edit or reorder a shipped one.
    static let migrations: Migrations = {
        var migrations = Migrations()
        migrations.register("v1-initial-schema") { connection in
            try connection.executeScript("PRAGMA application_id = \(applicationID)")
            try connection.executeScript(initialSchema)
        }
        migrations.register("v2-leases") { connection in
            try connection.executeScript(leases)
        }
        migrations.register("v3-wal-restarts") { connection in
            try connection.executeScript(walRestarts)
        }
        migrations.register("v4-unfinished-index-without-in-list") { connection in
            try connection.executeScript(unfinishedIndex)
        }
        migrations.register("v5-bridge-records") { connection in
            try connection.executeScript(bridgeRecords)
        }
        return migrations
    }()

    /// The condition of the partial index `messages_unfinished` (a message not yet published, or failed); a query
    /// that means to use the index repeats it word for word. Shipped in v4: changing it needs a new migration.
    static let unfinishedCondition = "(delivery = 'draft' OR delivery = 'pending' OR delivery = 'uploading' "
        + "OR delivery = 'sending' OR delivery = 'failed')"

    /// The fifth version's per-pair bridge records (`BridgeRecordTransaction`): the ledger of copies (one entry per
    /// message, looked up across pairs by message ID), the change cursors of both sides, and the operations that
    /// wait. A bridge adopts what older versions kept in `messages`, `outbox`, `sync_cursors` and
    /// `pending_operations` when it first opens the store.
    private static let bridgeRecords = """
        CREATE TABLE bridge_copies (
            pair TEXT NOT NULL,
            message_id TEXT NOT NULL,
            origin TEXT,
            sender TEXT NOT NULL,
            text TEXT NOT NULL,
            sent_at INTEGER NOT NULL,
            edited_at INTEGER,
            deleted_at INTEGER,
            pending_towards TEXT,
            prepared BLOB,
            PRIMARY KEY (pair, message_id)
        ) STRICT;
        CREATE INDEX bridge_copies_message ON bridge_copies (message_id);

        CREATE TABLE bridge_cursors (
            pair TEXT NOT NULL,
            backend TEXT NOT NULL,
            cursor TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (pair, backend)
        ) STRICT;

        CREATE TABLE bridge_operations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            pair TEXT NOT NULL,
            wait_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload BLOB NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX bridge_operations_wait_key ON bridge_operations (pair, wait_key, id);
        """

    /// The fourth version's `messages_unfinished`: the same rows as the first's, under a condition SQLite evaluates
    /// directly. The first's `delivery IN ('draft', …)` has SQLite fill a temporary b-tree with the five names in
    /// every statement that writes a message row (twice in an UPDATE; about 2.4 µs of a 5.9 µs insert).
    private static let unfinishedIndex = """
        DROP INDEX messages_unfinished;
        CREATE INDEX messages_unfinished ON messages (ts, id) WHERE \(unfinishedCondition);
        """

    /// The third version's one-row table that `WALCheckpointer` writes right after a checkpoint that copied the
    /// whole WAL back, so that the WAL restarts (and its new header is synced) on the checkpoint's thread rather
    /// than inside the next commit.
    private static let walRestarts = """
        CREATE TABLE wal_restarts (
            id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
            count INTEGER NOT NULL
        ) STRICT;
        INSERT INTO wal_restarts (id, count) VALUES (1, 0);
        """

    /// The lease table of the second version: one row per held lease (`LeaseStore`).
    private static let leases = """
        CREATE TABLE leases (
            name TEXT PRIMARY KEY NOT NULL,
            owner TEXT NOT NULL,
            expires_at INTEGER NOT NULL
        ) STRICT;
        """

    /// The tables and indexes of the first version.
    private static let initialSchema = """
        CREATE TABLE messages (
            id TEXT PRIMARY KEY NOT NULL,
            conversation TEXT NOT NULL,
            sender TEXT NOT NULL,
            text TEXT NOT NULL,
            reply_to TEXT,
            metadata TEXT NOT NULL DEFAULT '{}',
            ts INTEGER NOT NULL,
            has_server_ts INTEGER NOT NULL CHECK (has_server_ts IN (0, 1)),
            edited_at INTEGER,
            deleted_at INTEGER,
            delivery TEXT NOT NULL,
            delivery_progress REAL,
            failure_reason TEXT,
            failure_retryable INTEGER CHECK (failure_retryable IN (0, 1)),
            is_outgoing INTEGER NOT NULL CHECK (is_outgoing IN (0, 1))
        ) STRICT;
        CREATE INDEX messages_timeline ON messages (conversation, ts, id);
        CREATE INDEX messages_unfinished ON messages (ts, id)
            WHERE delivery IN ('draft', 'pending', 'uploading', 'sending', 'failed');

        CREATE TABLE attachments (
            message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            position INTEGER NOT NULL,
            filename TEXT NOT NULL,
            mime_type TEXT NOT NULL,
            byte_count INTEGER NOT NULL,
            sha256 TEXT NOT NULL,
            local_path TEXT,
            remote_location TEXT,
            remote_parameters TEXT NOT NULL DEFAULT '{}',
            upload_state TEXT NOT NULL,
            upload_progress REAL,
            upload_error TEXT,
            PRIMARY KEY (message_id, id),
            UNIQUE (message_id, position)
        ) STRICT;

        CREATE TABLE reactions (
            message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            symbol TEXT NOT NULL,
            at INTEGER NOT NULL,
            position INTEGER NOT NULL,
            PRIMARY KEY (message_id, user_id, symbol)
        ) STRICT;

        CREATE TABLE receipts (
            message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
            user_id TEXT NOT NULL,
            state TEXT NOT NULL,
            at INTEGER NOT NULL,
            PRIMARY KEY (message_id, user_id)
        ) STRICT;

        -- No foreign key to messages: a bridge maps messages it never stores.
        CREATE TABLE id_map (
            message_id TEXT NOT NULL,
            backend TEXT NOT NULL,
            conversation TEXT NOT NULL,
            remote_id TEXT NOT NULL,
            part INTEGER NOT NULL DEFAULT 0,
            UNIQUE (backend, remote_id),
            UNIQUE (message_id, backend, part)
        ) STRICT;

        CREATE TABLE outbox (
            message_id TEXT PRIMARY KEY NOT NULL,
            backend TEXT NOT NULL,
            conversation TEXT NOT NULL,
            prepared BLOB,
            no_send INTEGER NOT NULL CHECK (no_send IN (0, 1)),
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            last_error TEXT,
            status TEXT NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX outbox_due ON outbox (backend, status, no_send, created_at, message_id, next_attempt_at);

        CREATE TABLE sync_cursors (
            conversation TEXT NOT NULL,
            backend TEXT NOT NULL,
            kind TEXT NOT NULL,
            cursor TEXT NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (conversation, backend, kind)
        ) STRICT;

        CREATE TABLE pending_operations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            wait_key TEXT NOT NULL,
            kind TEXT NOT NULL,
            payload BLOB NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX pending_operations_wait_key ON pending_operations (wait_key, id);
        """
}
