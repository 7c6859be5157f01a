import SwitchboardCore
import SwitchboardPostgres

extension PostgresError {
    /// Whether the connection itself failed (dropped, refused, server shutting down or starting up).
    var isConnectionFailure: Bool {
        if code == .connectionClosed || code == .connectionFailed { return true }
        guard let sqlState else { return false }
        // Class 08: connection exception; 57P01-57P03: admin shutdown, crash shutdown, cannot connect now.
        return sqlState.hasPrefix("08") || ["57P01", "57P02", "57P03"].contains(sqlState)
    }

    /// Whether the server refused the transaction because of a concurrent one (serialization failure, deadlock).
    var isSerializationFailure: Bool { sqlState == "40001" || sqlState == "40P01" }

    /// The public error for this failure in the schema `schema`: conflict, corruption or a storage failure.
    func switchboardError(schema: String) -> SwitchboardError {
        if isConnectionFailure {
            return SwitchboardError(.storage, "the PostgreSQL connection failed: \(self)", retryable: true)
        }
        if isSerializationFailure {
            return SwitchboardError(.storage, "concurrent writers kept conflicting: \(self)", retryable: true)
        }
        switch sqlState {
        case "23505":
            return SwitchboardError(.conflict, "the change conflicts with a stored row: \(self)")
        case "23503":
            return SwitchboardError(.unknownMessage, "the row refers to a message that is not stored: \(self)")
        case "XX001", "XX002", "42P01", "3F000":
            return SwitchboardError(.corruptStore, "the Switchboard schema \(schema) is damaged or missing: \(self)")
        case "22P05", "22021", "54000":
            return SwitchboardError(.invalidArgument, "PostgreSQL cannot store this value: \(self)")
        default:
            let retryable = sqlState.map { $0.hasPrefix("53") || $0.hasPrefix("57") } ?? false
            return SwitchboardError(.storage, "storage failure in schema \(schema): \(self)", retryable: retryable)
        }
    }
}
