import CSQLite
import Foundation
import SwitchboardCore

/// `SQLITE_TRANSIENT`: SQLite copies bound text and blobs before the bind call returns.
private let transientDestructor = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One prepared statement: binds parameters, steps, and reads columns of the current row.
///
/// A statement belongs to one `SQLiteConnection` and is used only under that connection's owner.
public final class SQLiteStatement {
    /// The prepared statement handle.
    private let handle: OpaquePointer
    /// The connection handle, for error messages.
    private let connection: OpaquePointer
    /// The SQL text, with placeholders only.
    public let sql: String
    /// Whether running the statement leaves the database file unchanged (`sqlite3_stmt_readonly`: queries and
    /// transaction control; not INSERT, UPDATE, DELETE, DDL or a PRAGMA that writes).
    public let isReadOnly: Bool

    /// Prepares `sql` on `connection`.
    public init(connection: OpaquePointer, sql: String) throws {
        var statement: OpaquePointer?
        let code = sqlite3_prepare_v3(connection, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard code == SQLITE_OK, let statement else {
            sqlite3_finalize(statement)
            throw SQLiteError(connection: connection, code: code == SQLITE_OK ? SQLITE_MISUSE : code, sql: sql)
        }
        self.handle = statement
        self.connection = connection
        self.sql = sql
        self.isReadOnly = sqlite3_stmt_readonly(statement) != 0
    }

    /// How many times SQLite compiled the statement again since it was prepared (after a schema change, or an
    /// `OP_Expire` such as any flag PRAGMA runs on the connection).
    public var reprepareCount: Int { Int(sqlite3_stmt_status(handle, SQLITE_STMTSTATUS_REPREPARE, 0)) }

    deinit { sqlite3_finalize(handle) }

    /// Returns the statement to its initial state and clears every binding.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Whether the statement has been stepped and not reset since (`sqlite3_stmt_busy`).
    public var isBusy: Bool { sqlite3_stmt_busy(handle) != 0 }

    /// Binds `arguments` to parameters 1...n (nil binds NULL); the count must match the statement's.
    public func bind(_ arguments: [(any SQLiteBindable)?]) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.count == expected else {
            throw SQLiteError(extendedCode: SQLITE_RANGE,
                              message: "expected \(expected) arguments, got \(arguments.count)", sql: sql)
        }
        for (offset, argument) in arguments.enumerated() {
            try bind(argument?.sqliteValue ?? .null, at: Int32(offset + 1))
        }
    }

    /// Binds one value to the 1-based parameter `index`.
    public func bind(_ value: SQLiteValue, at index: Int32) throws {
        let code: Int32
        switch value {
        case .null:
            code = sqlite3_bind_null(handle, index)
        case .integer(let integer):
            code = sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            code = sqlite3_bind_double(handle, index, real)
        case .text(let text):
            var text = text
            code = text.withUTF8 { bytes in
                // An empty buffer may have no base address, which SQLite would take for NULL.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, transientDestructor)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) { characters in
                    sqlite3_bind_text64(handle, index, characters, sqlite3_uint64(bytes.count), transientDestructor,
                                        UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let data):
            code = data.withUnsafeBytes { bytes in
                // An empty blob must stay an empty blob, not NULL.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), transientDestructor)
            }
        }
        guard code == SQLITE_OK else { throw SQLiteError(connection: connection, code: code, sql: sql) }
    }

    /// Advances to the next row: true when a row is available, false when the statement is done.
    public func step() throws -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteError(connection: connection, code: code, sql: sql)
        }
    }

    /// Whether column `index` of the current row is NULL.
    public func isNull(at index: Int32) -> Bool { sqlite3_column_type(handle, index) == SQLITE_NULL }

    /// Column `index` as an integer (0 for NULL).
    public func int64(at index: Int32) -> Int64 { sqlite3_column_int64(handle, index) }

    /// Column `index` as an integer, nil for NULL.
    public func optionalInt64(at index: Int32) -> Int64? { isNull(at: index) ? nil : int64(at: index) }

    /// Column `index` as an `Int` (0 for NULL).
    public func int(at index: Int32) -> Int { Int(int64(at: index)) }

    /// Column `index` as a Boolean (non-zero is true).
    public func bool(at index: Int32) -> Bool { int64(at: index) != 0 }

    /// Column `index` as a Boolean, nil for NULL.
    public func optionalBool(at index: Int32) -> Bool? { isNull(at: index) ? nil : bool(at: index) }

    /// Column `index` as a double (0 for NULL).
    public func double(at index: Int32) -> Double { sqlite3_column_double(handle, index) }

    /// Column `index` as a double, nil for NULL.
    public func optionalDouble(at index: Int32) -> Double? { isNull(at: index) ? nil : double(at: index) }

    /// Column `index` as text (empty for NULL); embedded NUL characters survive.
    public func string(at index: Int32) -> String {
        guard let characters = sqlite3_column_text(handle, index) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, index))
        return String(decoding: UnsafeBufferPointer(start: characters, count: count), as: UTF8.self)
    }

    /// Column `index` as text, nil for NULL.
    public func optionalString(at index: Int32) -> String? { isNull(at: index) ? nil : string(at: index) }

    /// Column `index` as bytes (empty for NULL or an empty blob).
    public func data(at index: Int32) -> Data {
        guard let bytes = sqlite3_column_blob(handle, index) else { return Data() }
        return Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, index)))
    }

    /// Column `index` as bytes, nil for NULL.
    public func optionalData(at index: Int32) -> Data? { isNull(at: index) ? nil : data(at: index) }

    /// Column `index`, stored as whole microseconds since 1970, as a date.
    public func date(at index: Int32) -> Date { TimelinePosition.date(micros: int64(at: index)) }

    /// Column `index` as a date, nil for NULL.
    public func optionalDate(at index: Int32) -> Date? { isNull(at: index) ? nil : date(at: index) }
}
