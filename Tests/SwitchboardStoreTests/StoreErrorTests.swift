import CSQLite
import Foundation
import SwitchboardCore
import SwitchboardPostgres
@testable import SwitchboardPostgresStore
import SwitchboardSQLite
@testable import SwitchboardStore
import Testing
import TestSupport

/// Storage errors stay storage errors: each store classifies its database's failures where they are raised, by
/// SQLite result code or PostgreSQL SQLSTATE, and only lock contention, concurrent transactions and a lost
/// connection are retryable.
@Suite("Store errors: classified at the source")
struct StoreErrorTests {
    static let sqliteCases: [(String, Int32, SwitchboardError.Code, Bool)] = [
        ("busy", SQLITE_BUSY, .storage, true),
        ("locked", SQLITE_LOCKED, .storage, true),
        ("unique constraint", SQLiteError.constraintUnique, .conflict, false),
        ("primary key constraint", SQLiteError.constraintPrimaryKey, .conflict, false),
        ("foreign key constraint: the row refers to a message not stored", SQLiteError.constraintForeignKey, .unknownMessage, false),
        ("CHECK constraint: a value the schema forbids, a bug", SQLITE_CONSTRAINT | (1 << 8), .internal, false),
        ("full", SQLITE_FULL, .storage, false),
        ("read-only", SQLITE_READONLY, .storage, false),
        ("I/O error", SQLITE_IOERR, .storage, false),
        ("corrupt", SQLITE_CORRUPT, .corruptStore, false),
        ("not a database", SQLITE_NOTADB, .corruptStore, false),
    ]

    @Test("SQLite result codes, as the store reports them", arguments: sqliteCases)
    func sqliteCodes(_ name: String, _ code: Int32, _ expected: SwitchboardError.Code, _ retryable: Bool) {
        let error = SQLiteError(extendedCode: code, message: "failed", sql: "INSERT INTO messages VALUES (?)")
            .switchboardError(path: "store.sqlite")
        #expect(error.code == expected, "\(name): \(error)")
        #expect(error.isRetryable == retryable, "\(name): \(error)")
        #expect(error.message.contains("INSERT INTO messages"), "\(name): \(error)")
    }

    static let postgresCases: [(String, PostgresError, SwitchboardError.Code, Bool)] = [
        ("40001 serialization failure", PostgresError(code: .queryFailed, message: "m", sqlState: "40001"), .storage, true),
        ("40P01 deadlock", PostgresError(code: .queryFailed, message: "m", sqlState: "40P01"), .storage, true),
        ("08006 connection failure", PostgresError(code: .connectionClosed, message: "m", sqlState: "08006"), .storage, true),
        ("57P01 admin shutdown", PostgresError(code: .queryFailed, message: "m", sqlState: "57P01"), .storage, true),
        ("57P03 cannot connect now", PostgresError(code: .connectionFailed, message: "m", sqlState: "57P03"), .storage, true),
        ("connection refused", PostgresError(code: .connectionFailed, message: "m"), .storage, true),
        ("57014 statement timeout", PostgresError(code: .queryFailed, message: "m", sqlState: "57014"), .storage, true),
        ("23505 unique violation", PostgresError(code: .queryFailed, message: "m", sqlState: "23505"), .conflict, false),
        ("23503 foreign key violation", PostgresError(code: .queryFailed, message: "m", sqlState: "23503"), .unknownMessage, false),
        ("23502 not null violation, a bug", PostgresError(code: .queryFailed, message: "m", sqlState: "23502"), .internal, false),
        ("23514 check violation, a bug", PostgresError(code: .queryFailed, message: "m", sqlState: "23514"), .internal, false),
        ("53100 disk full", PostgresError(code: .queryFailed, message: "m", sqlState: "53100"), .storage, false),
        ("53200 out of memory", PostgresError(code: .queryFailed, message: "m", sqlState: "53200"), .storage, false),
        ("58030 I/O error", PostgresError(code: .queryFailed, message: "m", sqlState: "58030"), .storage, false),
        ("25006 read-only transaction", PostgresError(code: .queryFailed, message: "m", sqlState: "25006"), .storage, false),
        ("XX001 data corrupted", PostgresError(code: .queryFailed, message: "m", sqlState: "XX001"), .corruptStore, false),
        ("42P01 table missing", PostgresError(code: .queryFailed, message: "m", sqlState: "42P01"), .corruptStore, false),
        ("22021 untranslatable character", PostgresError(code: .queryFailed, message: "m", sqlState: "22021"), .invalidArgument, false),
    ]

    @Test("PostgreSQL SQLSTATEs, as the store reports them", arguments: postgresCases)
    func postgresStates(_ name: String, _ failure: PostgresError, _ expected: SwitchboardError.Code, _ retryable: Bool) {
        let error = failure.switchboardError(schema: "switchboard")
        #expect(error.code == expected, "\(name): \(error)")
        #expect(error.isRetryable == retryable, "\(name): \(error)")
        // The client layer classifies alike; the store only words it and names what the Switchboard schema means.
        #expect(failure.switchboardError.isRetryable == retryable, "\(name)")
    }

    /// Expects `error` to be `code`, retryable or not, with `detail` (the source's code or SQLSTATE) in its message.
    static func expect(_ error: SwitchboardError?, _ code: SwitchboardError.Code, retryable: Bool, mentioning detail: String,
                       sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(error?.code == code, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.isRetryable == retryable, "\(String(describing: error))", sourceLocation: sourceLocation)
        #expect(error?.message.contains(detail) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
    }

    /// A message holding the same attachment twice: its second row breaks the attachments' primary key.
    static let twiceAttached: Message = {
        var message = Fixtures.message()
        let attachment = Fixtures.attachment("twice.png", upload: .pending)
        message.content.attachments = [attachment, attachment]
        return message
    }()

    /// Runs `sql` on the store's connection inside a transaction of `store` (a test reaching below the contract).
    private static func pragma(_ store: SQLiteStore, _ sql: String) throws {
        try store.writeBlocking { transaction in
            let sqlite = try #require(transaction as? SQLiteTransaction)
            _ = try sqlite.perform { try $0.queryFirst(sql) { $0.int(at: 0) } }
        }
    }

    @Test("A real PRIMARY KEY violation is a conflict no retry fixes; the transaction leaves nothing behind")
    func realConstraintViolation() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        let error = #expect(throws: SwitchboardError.self) {
            try store.writeBlocking { try $0.upsertMessage(Self.twiceAttached) }
        }
        Self.expect(error, .conflict, retryable: false, mentioning: "SQLite error 1555")
        #expect(try store.readBlocking { try $0.message(Self.twiceAttached.id) } == nil)
    }

    @Test("A real SQLITE_FULL (the page limit reached) is a storage error no retry fixes; the store stays usable")
    func realFullDatabase() throws {
        let file = try SQLiteFile()
        defer { file.remove() }
        let store = file.store
        try store.writeBlocking { try $0.insertNewMessage(Fixtures.message()) }
        try Self.pragma(store, "PRAGMA max_page_count = 1")  // no lower than the pages in use: the file cannot grow
        let big = String(repeating: "x", count: 64 * 1024)
        let error = #expect(throws: SwitchboardError.self) {
            try store.writeBlocking { try $0.insertNewMessage(Fixtures.message(text: big)) }
        }
        Self.expect(error, .storage, retryable: false, mentioning: "SQLite error 13")
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 1)
        try Self.pragma(store, "PRAGMA max_page_count = 1073741823")
        try store.writeBlocking { try $0.insertNewMessage(Fixtures.message(text: big)) }
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 2)
    }

    @Test("A real SQLITE_READONLY (the connection made read-only) is a storage error no retry fixes")
    func realReadOnlyDatabase() throws {
        let store = try SQLiteStore(path: ":memory:")
        defer { store.close() }
        try store.writeBlocking { try $0.insertNewMessage(Fixtures.message()) }
        try Self.pragma(store, "PRAGMA query_only = 1")
        let error = #expect(throws: SwitchboardError.self) {
            try store.writeBlocking { try $0.insertNewMessage(Fixtures.message()) }
        }
        Self.expect(error, .storage, retryable: false, mentioning: "SQLite error 8")
        #expect(try store.readBlocking { try $0.messageCount(in: "room-1") } == 1)
    }

    @Test("A real SQLITE_BUSY (another connection holds the write lock) is a retryable storage error")
    func realBusyDatabase() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let holder = try SQLiteStore(path: directory.path("store.sqlite"))
        let waiter = try SQLiteStore(path: directory.path("store.sqlite"))
        defer {
            holder.close()
            waiter.close()
        }
        try Self.pragma(waiter, "PRAGMA busy_timeout = 10")
        let error = try holder.writeBlocking { transaction in
            try transaction.insertNewMessage(Fixtures.message())
            return #expect(throws: SwitchboardError.self) {
                try waiter.writeBlocking { try $0.insertNewMessage(Fixtures.message()) }
            }
        }
        Self.expect(error, .storage, retryable: true, mentioning: "SQLite error 5")
        try waiter.writeBlocking { try $0.insertNewMessage(Fixtures.message()) }  // once the lock is free, the retry succeeds
        #expect(try waiter.readBlocking { try $0.messageCount(in: "room-1") } == 2)
    }
}

extension PostgresStoreTests {
    @Test("A real unique violation is a conflict no retry fixes; a real NOT NULL violation is a bug, not retried")
    func realConstraintViolations() throws {
        let cluster = try PostgresTestCluster.required()
        let schema = PostgresTestCluster.freshSchema()
        defer { cluster.dropSchema(schema) }
        let store = try PostgresStore(url: cluster.url, schema: schema)
        defer { store.close() }
        let conflict = #expect(throws: SwitchboardError.self) {
            try store.writeBlocking { try $0.upsertMessage(StoreErrorTests.twiceAttached) }
        }
        StoreErrorTests.expect(conflict, .conflict, retryable: false, mentioning: "23505")

        // Below the contract: the server's own NOT NULL refusal, as the store classifies it.
        let connection = try PostgresConnection(url: cluster.url)
        defer { connection.close() }
        let refusal = #expect(throws: PostgresError.self) {
            try connection.execute("INSERT INTO \"\(schema)\".id_map (message_id) VALUES (NULL)")
        }
        #expect(refusal?.sqlState == "23502")
        let classified = try #require(refusal).switchboardError(schema: schema)
        #expect(classified.code == .internal)
        #expect(!classified.isRetryable)
    }
}
