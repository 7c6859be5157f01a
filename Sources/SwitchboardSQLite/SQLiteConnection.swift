import CSQLite
import Foundation

/// A thin wrapper over one `sqlite3*`: open, execute, prepare (with a statement cache) and close.
///
/// Not thread-safe: its owner (`SQLiteStore`) serialises every access.
public final class SQLiteConnection {
    /// The database handle; nil once closed.
    private var handle: OpaquePointer?
    /// The file this connection opened (or `:memory:`).
    public let path: String
    /// Prepared statements by SQL text, reused across calls.
    private var statements: [StatementKey: SQLiteStatement] = [:]
    /// While true, every statement that would change the database file is refused before it runs (a read
    /// transaction). Checked per statement instead of with `PRAGMA query_only`: that PRAGMA, like every flag PRAGMA,
    /// expires all prepared statements of the connection, so each statement was compiled again after each read.
    public var refusesWrites = false

    /// The process-wide SQLite settings, applied once before the first connection opens (SQLite reads them when it
    /// initialises): no memory statistics, whose upkeep serialises every allocation of every connection on one
    /// global mutex (with several stores busy on different threads, a contended lock per allocation). Nothing
    /// here reads `sqlite3_memory_used`. Returns SQLite's result code.
    public static let processSettings: Int32 = csqlite_disable_memory_statistics()

    /// The bytes SQLite's memory statistics count as in use: 0 while they are off (see `processSettings`).
    public static var countedMemoryBytes: Int64 { sqlite3_memory_used() }

    /// Opens (creating if needed) the database at `path` for reading and writing.
    public init(path: String) throws {
        _ = Self.processSettings
        self.path = path
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError(connection: handle, code: code == SQLITE_OK ? SQLITE_CANTOPEN : code)
            sqlite3_close_v2(handle)
            throw error
        }
        sqlite3_extended_result_codes(handle, 1)
        self.handle = handle
    }

    deinit { close() }

    /// Whether the connection is still open.
    public var isOpen: Bool { handle != nil }

    /// The open handle, or a misuse error once closed.
    private func openHandle(sql: String? = nil) throws -> OpaquePointer {
        guard let handle else {
            throw SQLiteError(extendedCode: SQLITE_MISUSE, message: "the database connection is closed", sql: sql)
        }
        return handle
    }

    /// Finalises every cached statement and closes the handle; safe to call twice.
    public func close() {
        statements.removeAll()
        if let handle {
            sqlite3_close_v2(handle)
            self.handle = nil
        }
    }

    /// Runs one or more SQL statements that take no arguments (schema scripts, transaction control).
    public func executeScript(_ sql: String) throws {
        let handle = try openHandle(sql: sql)
        if refusesWrites { throw Self.writeRefused(sql) }
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw SQLiteError(connection: handle, code: code, sql: sql) }
    }

    /// The cached prepared statement for `sql`, ready to bind and run (reset if it was left mid-run).
    public func cachedStatement(_ sql: String) throws -> SQLiteStatement {
        let key = StatementKey(sql)
        let statement: SQLiteStatement
        if let cached = statements[key] {
            // `execute` and the queries reset (and clear) a statement when they are done with it: only one left
            // mid-run is reset here, not every statement twice.
            if cached.isBusy { cached.reset() }
            statement = cached
        } else {
            statement = try SQLiteStatement(connection: try openHandle(sql: sql), sql: sql)
            statements[key] = statement
        }
        if refusesWrites && !statement.isReadOnly { throw Self.writeRefused(sql) }
        return statement
    }

    /// Times SQLite compiled the cached statements again since each was prepared, summed.
    public var cachedStatementReprepares: Int { statements.values.reduce(0) { $0 + $1.reprepareCount } }

    /// The error for a statement that would write while `refusesWrites` is set (SQLITE_READONLY, as
    /// `PRAGMA query_only` reports it).
    private static func writeRefused(_ sql: String) -> SQLiteError {
        SQLiteError(extendedCode: SQLITE_READONLY, message: "attempt to write in a read-only transaction", sql: sql)
    }

    /// Runs one statement with `arguments`, discarding any rows.
    public func execute(_ sql: String, _ arguments: [(any SQLiteBindable)?] = []) throws {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        while try statement.step() {}
    }

    /// Runs one query with `arguments` and decodes every row with `decode`.
    public func query<Row>(_ sql: String, _ arguments: [(any SQLiteBindable)?] = [],
                    _ decode: (SQLiteStatement) throws -> Row) throws -> [Row] {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        var rows: [Row] = []
        while try statement.step() { rows.append(try decode(statement)) }
        return rows
    }

    /// Runs one query with `arguments` and decodes its first row, nil when there is none.
    public func queryFirst<Row>(_ sql: String, _ arguments: [(any SQLiteBindable)?] = [],
                         _ decode: (SQLiteStatement) throws -> Row) throws -> Row? {
        let statement = try cachedStatement(sql)
        defer { statement.reset() }
        try statement.bind(arguments)
        return try statement.step() ? try decode(statement) : nil
    }

    /// Runs `body` in `BEGIN IMMEDIATE` … `COMMIT`, rolling back and rethrowing when it throws.
    public func immediateTransaction<T>(_ body: () throws -> T) throws -> T {
        try executeScript("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try executeScript("COMMIT")
            return value
        } catch {
            try? executeScript("ROLLBACK")
            throw error
        }
    }

    /// Rows changed by the latest INSERT, UPDATE or DELETE (cascades not counted).
    public var changes: Int {
        guard let handle else { return 0 }
        return Int(sqlite3_changes64(handle))
    }

    /// The rowid of the latest successful INSERT.
    public var lastInsertRowID: Int64 {
        guard let handle else { return 0 }
        return sqlite3_last_insert_rowid(handle)
    }

    /// Whether no transaction is open (autocommit mode).
    public var isAutocommit: Bool {
        guard let handle else { return true }
        return sqlite3_get_autocommit(handle) != 0
    }

    /// Sets how long a statement waits for another connection's lock before failing with `SQLITE_BUSY`.
    public func setBusyTimeout(milliseconds: Int32) throws {
        let handle = try openHandle()
        let code = sqlite3_busy_timeout(handle, milliseconds)
        guard code == SQLITE_OK else { throw SQLiteError(connection: handle, code: code) }
    }

    /// Sets how long a statement waits for another connection's lock before failing with `SQLITE_BUSY`, retrying
    /// every 50 µs for the first 20 ms and every millisecond after. (SQLite's own timeout sleeps 1, 2, 5, 10 ms…
    /// between retries, so a lock held for a fraction of a millisecond costs a whole one or more.)
    public func setBusyWait(milliseconds: Int32) throws {
        let handle = try openHandle()
        let context = UnsafeMutableRawPointer(bitPattern: Int(max(1, milliseconds)))
        let code = sqlite3_busy_handler(handle, { context, count in
            let limit = Int(bitPattern: context)
            let fineSteps = 400  // 400 × 50 µs = 20 ms
            let waited = count < fineSteps ? Int(count) / 20 : 20 + Int(count) - fineSteps
            guard waited < limit else { return 0 }
            usleep(count < fineSteps ? 50 : 1000)
            return 1
        }, context)
        guard code == SQLITE_OK else { throw SQLiteError(connection: handle, code: code) }
    }

    /// Turns SQLite's defensive mode on, which forbids writes that could corrupt the file (writable_schema...).
    public func enableDefensiveMode() throws {
        let handle = try openHandle()
        let code = csqlite_set_defensive(handle, 1)
        guard code == SQLITE_OK else { throw SQLiteError(connection: handle, code: code) }
    }
}

/// The statement cache's key: SQL text hashed by its length and its last bytes only, where the texts of one
/// program's statements differ (the full texts are compared on a match). A lookup per statement run no longer
/// hashes hundreds of bytes of SQL with SipHash.
struct StatementKey: Hashable {
    /// The SQL text.
    let sql: String
    /// FNV-1a over the text's last `tailBytes` UTF-8 bytes, mixed with its length.
    let digest: UInt64

    /// How many trailing bytes the digest reads.
    static let tailBytes = 64

    /// The key of `sql`.
    init(_ sql: String) {
        self.sql = sql
        let utf8 = sql.utf8
        let seed: UInt64 = 0xcbf2_9ce4_8422_2325 ^ UInt64(utf8.count)
        digest = utf8.withContiguousStorageIfAvailable { Self.mix(seed, $0.suffix(Self.tailBytes)) }
            ?? Self.mix(seed, utf8.suffix(Self.tailBytes))
    }

    /// FNV-1a steps over `bytes`, starting from `digest`.
    private static func mix(_ digest: UInt64, _ bytes: some Sequence<UInt8>) -> UInt64 {
        var value = digest
        for byte in bytes { value = (value ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return value
    }

    /// Same text (the digests are compared first, the texts only when they match).
    static func == (lhs: StatementKey, rhs: StatementKey) -> Bool {
        lhs.digest == rhs.digest && lhs.sql == rhs.sql
    }

    /// Hashes the digest only.
    func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }
}
