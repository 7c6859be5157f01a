import CSQLite
import Foundation

/// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the bind call returns.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// A value bound to, or read from, SQLite.
enum NodeSQLValue: Sendable, Hashable {
    /// NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// UTF-8 text.
    case text(String)
    /// A blob.
    case blob([UInt8])

    /// The integer, 0 otherwise.
    var int64: Int64 { if case .integer(let value) = self { value } else { 0 } }
    /// The text, empty otherwise.
    var text: String { if case .text(let value) = self { value } else { "" } }
    /// The blob, empty otherwise.
    var blob: [UInt8] { if case .blob(let value) = self { value } else { [] } }
}

/// A failed SQLite call.
struct NodeSQLiteError: Error, CustomStringConvertible {
    /// The extended result code.
    let code: Int32
    /// SQLite's message.
    let message: String
    /// `SQLite error N: message`.
    var description: String { "SQLite error \(code): \(message)" }
}

/// One SQLite connection: bound parameters only, statements finalised after each call. Not thread-safe: it is
/// `@unchecked Sendable` only so it can live in its owner's mutex, which serialises every access.
final class NodeSQLite: @unchecked Sendable {
    private var handle: OpaquePointer?

    /// Opens (creating) the database at `path` in WAL mode with a busy timeout.
    init(path: String) throws {
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            sqlite3_close_v2(handle)
            throw NodeSQLiteError(code: code, message: message)
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, 5000)
        _ = csqlite_set_defensive(handle, 1)
        try execute("PRAGMA journal_mode=WAL")
        try execute("PRAGMA synchronous=NORMAL")
        try execute("PRAGMA foreign_keys=ON")
    }

    deinit { close() }

    /// Closes the handle; safe to call twice.
    func close() {
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    private func open() throws -> OpaquePointer {
        guard let handle else { throw NodeSQLiteError(code: SQLITE_MISUSE, message: "the database is closed") }
        return handle
    }

    /// Runs a parameterless script (schema, transaction control).
    func execute(_ sql: String) throws {
        let handle = try open()
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw NodeSQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle))) }
    }

    /// Runs one statement with bound `arguments` and returns every row.
    @discardableResult
    func query(_ sql: String, _ arguments: [NodeSQLValue] = []) throws -> [[NodeSQLValue]] {
        let handle = try open()
        var statement: OpaquePointer?
        var code = sqlite3_prepare_v2(handle, sql, -1, &statement, nil)
        guard code == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw NodeSQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle)))
        }
        defer { sqlite3_finalize(statement) }
        for (offset, argument) in arguments.enumerated() {
            let index = Int32(offset + 1)
            switch argument {
            case .null:
                code = sqlite3_bind_null(statement, index)
            case .integer(let value):
                code = sqlite3_bind_int64(statement, index, value)
            case .text(let value):
                code = sqlite3_bind_text(statement, index, value, -1, transientDestructor)
            case .blob(let value):
                code = value.withUnsafeBytes { bytes in
                    guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(statement, index, 0) }
                    return sqlite3_bind_blob64(statement, index, base, sqlite3_uint64(bytes.count), transientDestructor)
                }
            }
            guard code == SQLITE_OK else { throw NodeSQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle))) }
        }
        var rows: [[NodeSQLValue]] = []
        while true {
            code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw NodeSQLiteError(code: code, message: String(cString: sqlite3_errmsg(handle))) }
            var row: [NodeSQLValue] = []
            for column in 0..<sqlite3_column_count(statement) {
                switch sqlite3_column_type(statement, column) {
                case SQLITE_INTEGER:
                    row.append(.integer(sqlite3_column_int64(statement, column)))
                case SQLITE_TEXT:
                    row.append(.text(String(cString: sqlite3_column_text(statement, column))))
                case SQLITE_BLOB:
                    let count = Int(sqlite3_column_bytes(statement, column))
                    if count > 0, let pointer = sqlite3_column_blob(statement, column) {
                        row.append(.blob([UInt8](UnsafeRawBufferPointer(start: pointer, count: count))))
                    } else {
                        row.append(.blob([]))
                    }
                default:
                    row.append(.null)
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Rows changed by the latest statement.
    var changes: Int { handle.map { Int(sqlite3_changes($0)) } ?? 0 }

    /// Runs `body` in `BEGIN IMMEDIATE` … `COMMIT`, rolling back on a throw.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute("COMMIT")
            return value
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }
}
