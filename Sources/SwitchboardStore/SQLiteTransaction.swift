import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// The `StoreTransaction` of `SQLiteStore`: every call runs on the connection the store lent for one transaction.
///
/// The store ends the transaction when its body returns; later calls throw instead of touching the connection.
final class SQLiteTransaction: StoreTransaction {
    /// The lent connection; nil once the transaction has ended.
    private var connection: SQLiteConnection?
    /// The database file, for error messages.
    private let path: String
    /// Whether writes are refused (a `read` transaction).
    private let isReadOnly: Bool

    /// Prepares a transaction on `connection` (not yet begun) for the database at `path`.
    init(connection: SQLiteConnection, path: String, isReadOnly: Bool) {
        self.connection = connection
        self.path = path
        self.isReadOnly = isReadOnly
    }

    // MARK: Transaction control

    /// Opens the transaction: `BEGIN DEFERRED` with writes refused when read-only, else `BEGIN IMMEDIATE`.
    func begin() throws {
        do {
            try perform { connection in
                try connection.execute(isReadOnly ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE")
                connection.refusesWrites = isReadOnly
            }
        } catch {
            end()
            throw error
        }
    }

    /// Commits and ends the transaction; when COMMIT fails the transaction stays open for `rollback`.
    func commit() throws {
        try perform { try $0.execute("COMMIT") }
        end()
    }

    /// Rolls back whatever is still open and ends the transaction; never throws.
    func rollback() {
        // SQLite may already have rolled back (for example after SQLITE_FULL); only roll back what is open.
        if let connection, !connection.isAutocommit { try? connection.execute("ROLLBACK") }
        end()
    }

    /// Restores the connection's write access and drops the reference to it: later calls throw.
    private func end() {
        connection?.refusesWrites = false
        connection = nil
    }

    /// Runs `work` on the connection, turning SQLite failures into `SwitchboardError`s.
    func perform<T>(_ work: (SQLiteConnection) throws -> T) throws -> T {
        guard let connection else {
            throw SwitchboardError(.storage, "a store transaction was used after it ended")
        }
        do {
            return try work(connection)
        } catch let error as SQLiteError {
            throw error.switchboardError(path: path)
        }
    }

    // MARK: Helpers

    /// The error for a row this version cannot read.
    func corruption(_ detail: String) -> SwitchboardError {
        SwitchboardError(.corruptStore, "the database file \(path) holds an unreadable row: \(detail)")
    }
}
