import SwitchboardSQLite
import SwitchboardCore

extension SQLiteError {
    /// The public error for this failure on the database at `path`: corruption, conflict or a storage failure.
    func switchboardError(path: String) -> SwitchboardError {
        if isCorruption {
            return SwitchboardError(.corruptStore, "the database file \(path) is damaged or is not a database: \(self)")
        }
        if isUniqueViolation {
            return SwitchboardError(.conflict, "the change conflicts with a stored row: \(self)")
        }
        if isForeignKeyViolation {
            return SwitchboardError(.unknownMessage, "the row refers to a message that is not stored: \(self)")
        }
        return SwitchboardError(.storage, "storage failure on \(path): \(self)", retryable: isBusy)
    }
}
