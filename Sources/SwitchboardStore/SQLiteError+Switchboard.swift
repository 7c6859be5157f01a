import SwitchboardSQLite
import SwitchboardCore

extension SQLiteError {
    /// The public error for this failure on the database at `path`, classified by result code as `SQLiteError`
    /// classifies it (`switchboardError`), with the store's wording. One refinement: a FOREIGN KEY violation in the
    /// Switchboard schema means the row refers to a message that is not stored, so it is `unknownMessage`.
    func switchboardError(path: String) -> SwitchboardError {
        let code = switchboardCode
        let message: String
        switch code {
        case .corruptStore:
            message = "the database file \(path) is damaged or is not a database: \(self)"
        case .conflict where isForeignKeyViolation:
            return SwitchboardError(.unknownMessage, "the row refers to a message that is not stored: \(self)")
        case .conflict:
            message = "the change conflicts with a stored row: \(self)"
        case .internal:
            message = "Switchboard wrote a value its own schema forbids (a bug) on \(path): \(self)"
        default:
            message = "storage failure on \(path): \(self)"
        }
        return SwitchboardError(code, message, retryable: isTransient)
    }
}
