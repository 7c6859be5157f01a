import SupabaseProtocol
import SwitchboardPostgres

/// PostgreSQL errors turned into PostgREST answers, following `mapSQLtoHTTP` in PostgREST's `Error.hs`.
enum RestErrorMapping {
    /// The PostgREST error for a database failure; `authenticated` is false for the anon role (42501 → 401).
    static func postgrestError(for error: PostgresError, authenticated: Bool) -> PostgRESTError {
        guard let sqlState = error.sqlState, sqlState.count == 5 else {
            if error.code == .connectionFailed || error.code == .connectionClosed {
                return PostgRESTError(status: 503, code: "PGRST000", message: "Database connection error.")
            }
            return PostgRESTError(status: 500, code: "PGRSTX00", message: "Internal server error")
        }
        return PostgRESTError(status: status(sqlState: sqlState, message: error.message, authenticated: authenticated),
                              code: sqlState, message: error.message, details: error.detail, hint: error.hint)
    }

    /// The HTTP status PostgREST answers for `sqlState` (400 for anything it does not list).
    static func status(sqlState: String, message: String, authenticated: Bool) -> Int {
        switch sqlState {
        case "23503", "23505": return 409
        case "25006": return 405
        case "21000": return message.hasSuffix("requires a WHERE clause") ? 400 : 500
        case "22023": return message.hasPrefix("role") && message.hasSuffix("does not exist") ? 401 : 400
        case "53400": return 500
        case "57P01": return 503
        case "P0001": return 400
        case "42883": return message.hasPrefix("function xmlagg(") ? 406 : 404
        case "42P01": return 404
        case "42P17": return 500
        case "42501": return authenticated ? 403 : 401
        default: break
        }
        switch sqlState.prefix(2) {
        case "08", "53": return 503
        case "09", "25", "2D", "38", "39", "3B", "40", "54", "55", "57", "58", "F0", "HV", "P0", "XX": return 500
        case "0L", "0P", "28": return 403
        case "PT":
            if let code = Int(sqlState.dropFirst(2)), (100...599).contains(code) { return code }
            return 500
        default: return 400
        }
    }
}
