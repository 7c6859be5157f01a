import Dispatch
import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore

/// The shared `Store`: PostgreSQL, for several bridge processes working on one database.
///
/// Each store keeps its tables in a schema of its own (`switchboard` unless told otherwise), created and migrated
/// at `init` under an advisory lock, so processes may start together. `write` runs one SERIALIZABLE transaction and
/// `read` one REPEATABLE READ READ ONLY snapshot; a transaction PostgreSQL refuses because of a concurrent one
/// (serialization failure, deadlock) or whose connection dropped before COMMIT is rolled back and run again, so a
/// `write` body must not have effects outside the transaction it is given (it may run more than once).
/// Connections come from a small pool; a broken one is dropped and replaced, so the store survives a restart of
/// the server. Async `read` and `write` run on the store's own threads, one per connection, so waiting for a
/// connection, for a lock another session holds, or before a retry never holds a thread of Swift's cooperative
/// pool. Do not call the store again from inside a `read` or `write` body.
public final class PostgresStore: TransactionalLeaseStore {
    /// The schema holding the tables.
    public let schema: String
    /// The connections.
    private let pool: PostgresConnectionPool
    /// The migrations this `init` applied (empty when the schema was already up to date).
    let migrationsAppliedAtOpen: [String]
    /// The threads async `read` and `write` run on, as many as there are connections.
    public let executor: BlockingExecutor
    /// How many times a transaction runs at most when concurrent writers keep conflicting.
    private static let serializationAttempts = 20
    /// How many times a transaction runs at most when its connection keeps failing.
    private static let connectionAttempts = 5

    /// Connects to the database at `url` (a `postgresql://` URL or a libpq key=value string) and creates or
    /// migrates the Switchboard tables in `schema`; at most `maxConnections` connections are open at once. The
    /// server's notices (such as `schema "switchboard" already exists, skipping`) go to `logger` at debug level.
    ///
    /// Throws `corruptStore` when the schema holds foreign tables or was written by a newer version, and a
    /// retryable `storage` error when the server cannot be reached. Errors never contain the URL or password.
    public init(url: String, schema: String = "switchboard", maxConnections: Int = 4,
                logger: Logger = Logger(label: "postgres")) throws {
        guard !schema.isEmpty, schema.utf8.count <= 63, !schema.utf8.contains(0) else {
            throw SwitchboardError(.invalidArgument, "a PostgreSQL schema name has 1 to 63 bytes and no NUL")
        }
        self.schema = schema
        executor = BlockingExecutor(name: "sb-postgres", threads: max(1, maxConnections))
        pool = PostgresConnectionPool(url: url, maxConnections: max(1, maxConnections),
                                      notices: { notice in logger.debug(notice) })
        let connection: PostgresConnection
        do {
            connection = try pool.checkOut()
        } catch let error as PostgresError {
            throw error.switchboardError(schema: schema)
        }
        do {
            migrationsAppliedAtOpen = try PostgresStoreSchema.migrate(connection, schema: schema)
            pool.checkIn(connection, reusable: true)
        } catch let error as PostgresError {
            pool.checkIn(connection, reusable: !error.isConnectionFailure)
            throw error.switchboardError(schema: schema)
        } catch {
            pool.checkIn(connection, reusable: true)
            throw error
        }
    }

    /// Runs `body` in one SERIALIZABLE transaction on the calling thread, run again when a concurrent writer forces a
    /// retry; any throw of `body` rolls back and rethrows the same error.
    public func writeBlocking<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try transaction(isReadOnly: false) { try body($0) }
    }

    /// Runs `body` against a consistent read snapshot (REPEATABLE READ READ ONLY) on the calling thread.
    public func readBlocking<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try transaction(isReadOnly: true) { try body($0) }
    }

    /// Closes every connection now; later calls throw a `storage` error.
    public func close() {
        pool.close()
    }

    /// The migration names recorded in the schema, in the order they were applied.
    func appliedMigrations() throws -> [String] {
        do {
            let connection = try pool.checkOut()
            defer { pool.checkIn(connection, reusable: true) }
            return try PostgresStoreSchema.appliedNames(connection, schema: schema)
        } catch let error as PostgresError {
            throw error.switchboardError(schema: schema)
        }
    }

    // MARK: Leases

    /// Runs a lease operation's `body` in one transaction on the calling thread (the lease methods are shared).
    package func leaseTransaction<T>(isReadOnly: Bool, _ body: (any LeaseTransaction) throws -> T) throws -> T {
        try transaction(isReadOnly: isReadOnly) { try body($0) }
    }

    // MARK: Transactions

    /// Runs `body` in a transaction, committing when it returns and rolling back when anything throws; retries
    /// serialization failures, deadlocks and connection failures before COMMIT with a growing, jittered pause.
    private func transaction<T>(isReadOnly: Bool, _ body: (PostgresTransaction) throws -> T) throws -> T {
        var serializationFailures = 0
        var connectionFailures = 0
        while true {
            let connection: PostgresConnection
            do {
                connection = try pool.checkOut()
            } catch let error as PostgresError {
                connectionFailures += 1
                guard error.isConnectionFailure, connectionFailures < Self.connectionAttempts else {
                    throw error.switchboardError(schema: schema)
                }
                Self.pause(attempt: connectionFailures, base: 0.05, cap: 1)
                continue
            }
            let transaction = PostgresTransaction(connection: connection, schema: schema, isReadOnly: isReadOnly)
            do {
                try transaction.begin()
                let result = try body(transaction)
                try transaction.commit()
                pool.checkIn(connection, reusable: true)
                return result
            } catch {
                let failure = transaction.failure
                let commitSent = transaction.commitSent
                pool.checkIn(connection, reusable: transaction.rollback())
                guard let failure else { throw error }
                if failure.isSerializationFailure {
                    serializationFailures += 1
                    if serializationFailures < Self.serializationAttempts {
                        Self.pause(attempt: serializationFailures, base: 0.002, cap: 0.2)
                        continue
                    }
                } else if failure.isConnectionFailure {
                    pool.dropIdle()
                    if commitSent && !isReadOnly {
                        throw SwitchboardError(.storage, """
                            the PostgreSQL connection failed while committing; the transaction may or may not have \
                            been applied: \(failure)
                            """, retryable: true)
                    }
                    connectionFailures += 1
                    if connectionFailures < Self.connectionAttempts {
                        Self.pause(attempt: connectionFailures, base: 0.05, cap: 1)
                        continue
                    }
                }
                throw error
            }
        }
    }

    /// Sleeps about `base * 2^(attempt-1)` seconds (at most `cap`), randomised so retrying writers spread out.
    private static func pause(attempt: Int, base: Double, cap: Double) {
        let delay = min(cap, base * pow(2, Double(attempt - 1))) * Double.random(in: 0.5...1.5)
        Thread.sleep(forTimeInterval: delay)
    }
}

/// A small pool of libpq connections: at most `maxConnections` lent at once, idle ones kept for reuse.
final class PostgresConnectionPool: Sendable {
    /// What the pool holds besides the semaphore.
    private struct State {
        /// Connections ready for reuse.
        var idle: [PostgresConnection] = []
        /// Whether `close()` was called.
        var closed = false
    }

    /// The connection URL (never shown in errors).
    private let url: String
    /// Where every connection's server notices go.
    private let notices: @Sendable (String) -> Void
    /// Counts the connections that may still be lent.
    private let slots: DispatchSemaphore
    /// The idle connections and the closed flag.
    private let state = Locked(State())

    /// A pool for `url` lending at most `maxConnections` connections at once, their notices sent to `notices`.
    init(url: String, maxConnections: Int, notices: @escaping @Sendable (String) -> Void = { _ in }) {
        self.url = url
        self.notices = notices
        slots = DispatchSemaphore(value: maxConnections)
    }

    /// Lends a connection (an idle one or a new one), waiting while all are lent; throws when none can be opened.
    func checkOut() throws -> PostgresConnection {
        slots.wait()
        do {
            let idle = try state.withLock { state -> PostgresConnection? in
                guard !state.closed else {
                    throw SwitchboardError(.storage, "the PostgreSQL store was closed")
                }
                return state.idle.popLast()
            }
            if let idle { return idle }
            let connection = try PostgresConnection(url: url, notices: notices)
            // Every value crosses the wire as UTF-8, whatever the server's default client encoding.
            try connection.execute("SET client_encoding TO 'UTF8'")
            return connection
        } catch {
            slots.signal()
            throw error
        }
    }

    /// Takes a lent connection back: kept for reuse when `reusable`, else closed.
    func checkIn(_ connection: PostgresConnection, reusable: Bool) {
        let keep = state.withLock { state in
            guard reusable, !state.closed else { return false }
            state.idle.append(connection)
            return true
        }
        if !keep { connection.close() }
        slots.signal()
    }

    /// Closes the idle connections (after one failed, the others are likely broken too).
    func dropIdle() {
        let dropped = state.withLock { state in
            defer { state.idle.removeAll() }
            return state.idle
        }
        for connection in dropped { connection.close() }
    }

    /// Closes the idle connections and refuses every later `checkOut`.
    func close() {
        state.withLock { $0.closed = true }
        dropIdle()
    }
}
