import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// The embedded `Store`: one SQLite file in WAL mode, one connection, every access serialised through a `Locked`.
///
/// Async `read` and `write` calls run one after another on the store's own thread, which owns the connection
/// for them; blocking calls from other threads take the same lock. Do not call the store again from inside a
/// `read` or `write` body: the lock is not reentrant.
public final class SQLiteStore: TransactionalLeaseStore {
    /// The `application_id` in the header of every Switchboard database ("SBRD").
    public static let applicationID: Int32 = SwitchboardSchema.applicationID

    /// The database file (or `:memory:`).
    public let path: String
    /// The one connection; whoever holds the lock owns it.
    private let connection: Locked<SQLiteConnection>
    /// The migrations this `init` applied (empty when the file was already up to date).
    let migrationsAppliedAtOpen: [String]
    /// Checkpoints the WAL off the commit path (nil for `:memory:`).
    private let checkpointer: WALCheckpointer?
    /// The one thread async `read` and `write` run on: the connection serves one transaction at a time anyway.
    public let executor = BlockingExecutor(name: "sb-sqlite")

    /// Opens (creating and migrating if needed) the Switchboard database at `path`; `:memory:` gives a private one.
    ///
    /// Throws `corruptStore` when the file is damaged, is not a database, belongs to another application or was
    /// written by a newer version of Switchboard; the file is left untouched in those cases.
    public init(path: String) throws {
        self.path = path
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path)
        } catch let error as SQLiteError {
            throw Self.openingError(error, path: path)
        }
        do {
            migrationsAppliedAtOpen = try Self.configure(connection, path: path)
        } catch let error as SQLiteError {
            connection.close()
            throw Self.openingError(error, path: path)
        } catch {
            connection.close()
            throw error
        }
        var checkpointer: WALCheckpointer?
        if !Self.isInMemory(path) {
            // Without the second connection the store still works: SQLite then checkpoints on commit as usual.
            checkpointer = try? WALCheckpointer(path: path)
            if checkpointer != nil {
                // The background checkpoint can only restart the WAL once it catches up with the writer; under
                // writes without pause it never does, so a commit still checkpoints once the WAL is this large.
                _ = try? connection.queryFirst("PRAGMA wal_autocheckpoint = \(WALCheckpointer.fallbackPages)") { $0.int(at: 0) }
            }
        }
        self.checkpointer = checkpointer
        self.connection = Locked(connection)
    }

    /// Runs `body` in one write transaction (BEGIN IMMEDIATE) on the calling thread; any throw rolls back and
    /// rethrows the first error.
    public func writeBlocking<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try transaction(isReadOnly: false) { try body($0) }
    }

    /// Runs `body` against a consistent read snapshot (BEGIN DEFERRED with writes refused) on the calling thread.
    public func readBlocking<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try transaction(isReadOnly: true) { try body($0) }
    }

    /// Runs a lease operation's `body` in one transaction on the calling thread (the lease methods are shared).
    package func leaseTransaction<T>(isReadOnly: Bool, _ body: (any LeaseTransaction) throws -> T) throws -> T {
        try transaction(isReadOnly: isReadOnly) { try body($0) }
    }

    /// Closes the connection now instead of at deinit; every later call throws a `storage` error.
    public func close() {
        checkpointer?.close()
        connection.withLock { $0.close() }
    }

    /// The page cache of the store's connection, in KiB (SQLite's default is 2,000).
    static let pageCacheKiB = 8192

    /// The migration names recorded in the database, in the order they were applied.
    func appliedMigrations() throws -> [String] {
        try withConnection { try Migrations.appliedNames(in: $0) }
    }

    /// The store connection's `cache_size` setting (negative: KiB).
    func pageCacheSize() throws -> Int {
        try withConnection { try $0.queryFirst("PRAGMA cache_size") { $0.int(at: 0) } ?? 0 }
    }

    /// The store connection's automatic checkpoint threshold in pages (the fallback while `WALCheckpointer` works).
    func walAutocheckpoint() throws -> Int {
        try withConnection { try $0.queryFirst("PRAGMA wal_autocheckpoint") { $0.int(at: 0) } ?? -1 }
    }

    /// Times SQLite compiled the connection's cached statements again since each was prepared, summed.
    func statementReprepares() throws -> Int {
        try withConnection { $0.cachedStatementReprepares }
    }

    /// The journal mode the connection reports (`wal` for files, `memory` for `:memory:`).
    func journalMode() throws -> String {
        try withConnection { try $0.queryFirst("PRAGMA journal_mode") { $0.string(at: 0) } ?? "" }
    }

    /// Runs `work` on the connection under the lock, outside any transaction, mapping SQLite failures.
    private func withConnection<T: Sendable>(_ work: (SQLiteConnection) throws -> T) throws -> T {
        try connection.withLock { connection in
            do {
                return try work(connection)
            } catch let error as SQLiteError {
                throw error.switchboardError(path: path)
            }
        }
    }

    /// Runs `body` in a transaction, committing when it returns and rolling back when anything throws.
    private func transaction<T>(isReadOnly: Bool, _ body: (SQLiteTransaction) throws -> T) throws -> T {
        try connection.withLock { connection in
            // The connection is lent to `body` only through a `SQLiteTransaction`, which drops its reference when
            // the transaction ends, so the connection never escapes the lock. Region analysis cannot see that.
            nonisolated(unsafe) let lent = connection
            let transaction = SQLiteTransaction(connection: lent, path: path, isReadOnly: isReadOnly)
            try transaction.begin()
            do {
                nonisolated(unsafe) let result = try body(transaction)
                try transaction.commit()
                if !isReadOnly { checkpointer?.didCommit() }
                return result
            } catch {
                transaction.rollback()
                throw error
            }
        }
    }

    // MARK: Opening

    /// Whether `path` names a private in-memory database rather than a file.
    private static func isInMemory(_ path: String) -> Bool { path == ":memory:" || path.isEmpty }

    /// Checks the file is ours, sets the connection up and migrates; returns the migrations applied now.
    private static func configure(_ connection: SQLiteConnection, path: String) throws -> [String] {
        try connection.setBusyWait(milliseconds: 5000)
        // Identify the file before changing anything in it: a foreign file must be left as it was.
        try checkIdentity(connection, path: path)
        if !isInMemory(path) {
            let mode = try connection.queryFirst("PRAGMA journal_mode = WAL") { $0.string(at: 0) } ?? ""
            guard mode.lowercased() == "wal" else {
                throw SwitchboardError(.storage, "cannot use write-ahead logging on \(path): journal mode is '\(mode)'")
            }
        }
        try connection.execute("PRAGMA synchronous = NORMAL")
        // A burst of new messages (a replay after a reconnect, a long catch-up) writes at scattered places in the
        // ID indexes; with SQLite's default 2 MB cache one large transaction spills dirty pages to the WAL and
        // reads them back before it commits.
        try connection.execute("PRAGMA cache_size = -\(pageCacheKiB)")
        try connection.execute("PRAGMA foreign_keys = ON")
        let foreignKeys = try connection.queryFirst("PRAGMA foreign_keys") { $0.int(at: 0) } ?? 0
        guard foreignKeys == 1 else {
            throw SwitchboardError(.storage, "this SQLite library cannot enforce foreign keys (opening \(path))")
        }
        try connection.enableDefensiveMode()
        return try SwitchboardSchema.migrations.migrate(connection)
    }

    /// Throws `corruptStore` unless the database is empty or a Switchboard database this version can read.
    private static func checkIdentity(_ connection: SQLiteConnection, path: String) throws {
        let applicationID = try connection.queryFirst("PRAGMA application_id") { Int32(truncatingIfNeeded: $0.int64(at: 0)) } ?? 0
        let objectCount = try connection.queryFirst("SELECT COUNT(*) FROM sqlite_schema") { $0.int(at: 0) } ?? 0
        if applicationID == 0 && objectCount == 0 { return }  // A new, empty database: migrations will claim it.
        guard applicationID == SwitchboardSchema.applicationID else {
            let hexID = String(UInt32(bitPattern: applicationID), radix: 16)
            throw SwitchboardError(.corruptStore, """
                the database file \(path) is not a Switchboard database: it belongs to another application \
                (application id 0x\(hexID), \(objectCount) schema objects)
                """)
        }
        guard try Migrations.hasMigrationTable(connection) else {
            throw SwitchboardError(.corruptStore,
                                   "the database file \(path) is marked as Switchboard's but has no schema_migrations table")
        }
        let unknown = try SwitchboardSchema.migrations.unknownNames(in: connection)
        guard unknown.isEmpty else {
            throw SwitchboardError(.corruptStore, """
                the database file \(path) was written by a newer version of Switchboard \
                (unknown migrations: \(unknown.joined(separator: ", ")))
                """)
        }
    }

    /// The public error for a SQLite failure while opening `path`.
    private static func openingError(_ error: SQLiteError, path: String) -> SwitchboardError {
        if error.isCorruption {
            return SwitchboardError(.corruptStore, "the database file \(path) is damaged or is not a database: \(error)")
        }
        return SwitchboardError(.storage, "cannot open the database file \(path): \(error)", retryable: error.isBusy)
    }
}
