import CSQLite
import SwitchboardCore

/// What a SQLite failure means to Switchboard, decided here by result code so that no caller has to guess.
///
/// | result code | code | retryable |
/// | --- | --- | --- |
/// | `SQLITE_BUSY`, `SQLITE_LOCKED`, `SQLITE_PROTOCOL` (another connection held a lock) | `storage` | yes |
/// | `SQLITE_CONSTRAINT_UNIQUE`, `_PRIMARYKEY`, `_ROWID`, `_FOREIGNKEY` (the write collides with stored rows) | `conflict` | no |
/// | any other `SQLITE_CONSTRAINT` (CHECK, NOT NULL, ...: a value the schema forbids, a bug) | `internal` | no |
/// | `SQLITE_CORRUPT`, `SQLITE_NOTADB` | `corruptStore` | no |
/// | `SQLITE_TOOBIG` | `contentTooLarge` | no |
/// | `SQLITE_RANGE`, `SQLITE_MISMATCH` (a statement bound wrongly, a bug) | `internal` | no |
/// | anything else: `SQLITE_FULL`, `SQLITE_READONLY`, `SQLITE_IOERR`, `SQLITE_CANTOPEN`, `SQLITE_NOMEM`, ... | `storage` | no |
///
/// A full disk, a read-only or damaged file and an I/O error stay as they are however often the same work is
/// tried again, so they are not retryable; only lock contention is.
extension SQLiteError: SwitchboardErrorConvertible {
    /// `SQLITE_CONSTRAINT_ROWID`.
    public static let constraintRowID = SQLITE_CONSTRAINT | (10 << 8)

    /// Whether the same work can succeed when tried again: another connection held a lock for longer than the busy
    /// timeout (`SQLITE_BUSY`, `SQLITE_LOCKED`) or raced on the WAL index (`SQLITE_PROTOCOL`).
    public var isTransient: Bool { isBusy || primaryCode == SQLITE_PROTOCOL }

    /// Whether the error is a violated constraint that collides with stored rows (UNIQUE, PRIMARY KEY, ROWID or
    /// FOREIGN KEY), as opposed to a value the schema forbids.
    public var isCollision: Bool {
        isUniqueViolation || isForeignKeyViolation || extendedCode == Self.constraintRowID
    }

    /// The Switchboard code for this result code (see the table above).
    public var switchboardCode: SwitchboardError.Code {
        switch primaryCode {
        case SQLITE_CONSTRAINT: isCollision ? .conflict : .internal
        case SQLITE_CORRUPT, SQLITE_NOTADB: .corruptStore
        case SQLITE_TOOBIG: .contentTooLarge
        case SQLITE_RANGE, SQLITE_MISMATCH: .internal
        default: .storage
        }
    }

    /// The public error: `switchboardCode`, this error's description, retryable only when `isTransient`.
    public var switchboardError: SwitchboardError {
        SwitchboardError(switchboardCode, description, retryable: isTransient)
    }
}
