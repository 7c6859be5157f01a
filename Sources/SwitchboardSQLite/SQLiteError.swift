import CSQLite

/// A failure reported by SQLite: the extended result code, SQLite's message and the SQL that failed.
///
/// The description never includes bound arguments, which may hold private data.
public struct SQLiteError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The extended result code (for example `SQLITE_CONSTRAINT_UNIQUE`, 2067).
    public let extendedCode: Int32
    /// SQLite's explanation (`sqlite3_errmsg`) or ours when SQLite gave none.
    public let message: String
    /// The statement that failed, with placeholders only; nil when no statement was involved.
    public let sql: String?

    /// Builds an error from its parts.
    public init(extendedCode: Int32, message: String, sql: String? = nil) {
        self.extendedCode = extendedCode
        self.message = message
        self.sql = sql
    }

    /// Reads the latest error of `connection` (its extended code and message).
    public init(connection: OpaquePointer?, code: Int32, sql: String? = nil) {
        if let connection {
            let extended = sqlite3_extended_errcode(connection)
            // sqlite3_extended_errcode reports the latest failure on the handle; trust it only when it agrees with
            // the code we got (it is 0 when the failure happened before any call on the handle).
            self.extendedCode = (extended & 0xFF) == (code & 0xFF) ? extended : code
            self.message = String(cString: sqlite3_errmsg(connection))
        } else {
            self.extendedCode = code
            self.message = String(cString: sqlite3_errstr(code))
        }
        self.sql = sql
    }

    /// The primary result code (the low byte of the extended one, for example `SQLITE_CONSTRAINT`).
    public var primaryCode: Int32 { extendedCode & 0xFF }

    /// SQLite's generic English text for the extended code.
    public var codeDescription: String { String(cString: sqlite3_errstr(extendedCode)) }

    // Extended constraint codes: sqlite3.h defines them as expressions that Swift does not import.
    /// `SQLITE_CONSTRAINT_FOREIGNKEY`.
    public static let constraintForeignKey = SQLITE_CONSTRAINT | (3 << 8)
    /// `SQLITE_CONSTRAINT_PRIMARYKEY`.
    public static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)
    /// `SQLITE_CONSTRAINT_UNIQUE`.
    public static let constraintUnique = SQLITE_CONSTRAINT | (8 << 8)

    /// Whether the error is a violated UNIQUE or PRIMARY KEY constraint.
    public var isUniqueViolation: Bool {
        extendedCode == Self.constraintUnique || extendedCode == Self.constraintPrimaryKey
    }

    /// Whether the error is a violated FOREIGN KEY constraint.
    public var isForeignKeyViolation: Bool { extendedCode == Self.constraintForeignKey }

    /// Whether the file is damaged or is not a database at all.
    public var isCorruption: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }

    /// Whether another connection held a lock for longer than the busy timeout.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// `SQLite error <code> (<generic text>): <message> [in `<sql>`]`.
    public var description: String {
        var text = "SQLite error \(extendedCode) (\(codeDescription)): \(message)"
        if let sql { text += " in `\(sql)`" }
        return text
    }
}
