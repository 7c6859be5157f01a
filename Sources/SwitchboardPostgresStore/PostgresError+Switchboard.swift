import SwitchboardCore
import SwitchboardPostgres

extension PostgresError {
    /// The public error for this failure in the schema `schema`, classified by SQLSTATE as `PostgresError`
    /// classifies it (`switchboardError`), with the store's wording. Refinements for the Switchboard schema: a
    /// foreign key violation means the row refers to a message that is not stored (`unknownMessage`), and a missing
    /// table or schema means the schema is damaged (`corruptStore`).
    func switchboardError(schema: String) -> SwitchboardError {
        if isConnectionFailure {
            return SwitchboardError(.storage, "the PostgreSQL connection failed: \(self)", retryable: true)
        }
        if isSerializationFailure {
            return SwitchboardError(.storage, "concurrent writers kept conflicting: \(self)", retryable: true)
        }
        switch sqlState {
        case "23503":
            return SwitchboardError(.unknownMessage, "the row refers to a message that is not stored: \(self)")
        case "42P01", "3F000":
            return SwitchboardError(.corruptStore, "the Switchboard schema \(schema) is damaged or missing: \(self)")
        default:
            break
        }
        let code = switchboardCode
        let message = switch code {
        case .conflict: "the change conflicts with a stored row: \(self)"
        case .corruptStore: "the Switchboard schema \(schema) is damaged: \(self)"
        case .invalidArgument: "PostgreSQL cannot store this value: \(self)"
        case .internal: "Switchboard wrote a value its own schema forbids (a bug) in schema \(schema): \(self)"
        default: "storage failure in schema \(schema): \(self)"
        }
        return SwitchboardError(code, message, retryable: isTransient)
    }
}
