import SwitchboardCore
/// A PostgREST-compatible error carrying the HTTP status and the `{"code","message","details","hint"}` body.
public struct PostgRESTError: Error, Sendable, Equatable {
    /// HTTP status code to answer with.
    public var status: Int
    /// PostgREST (`PGRSTnnn`) or PostgreSQL (SQLSTATE) error code.
    public var code: String
    /// Human-readable message.
    public var message: String
    /// Optional details, `null` in JSON when absent.
    public var details: String?
    /// Optional hint, `null` in JSON when absent.
    public var hint: String?

    /// Creates an error from its parts.
    public init(status: Int, code: String, message: String, details: String? = nil, hint: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.hint = hint
    }

    /// A `PGRST100` (400) query-string parse error.
    public static func parse(_ message: String, details: String? = nil) -> PostgRESTError {
        PostgRESTError(status: 400, code: "PGRST100", message: message, details: details)
    }

    /// A `PGRST102` (400) invalid request body error.
    public static func invalidBody(_ details: String? = nil) -> PostgRESTError {
        PostgRESTError(status: 400, code: "PGRST102", message: "Empty or invalid json", details: details)
    }

    /// Parses a request body, turning invalid JSON into `PGRST102`.
    public static func parseBody(_ text: String) throws(PostgRESTError) -> JSONValue {
        do {
            return try JSONValue.parse(text)
        } catch {
            throw invalidBody(error.message)
        }
    }

    /// A PostgreSQL `42703` (400) undefined-column error, worded like PostgreSQL.
    public static func undefinedColumn(table: String, column: String) -> PostgRESTError {
        PostgRESTError(status: 400, code: "42703", message: "column \(table).\(column) does not exist")
    }

    /// The JSON body PostgREST sends: `{"code":..,"message":..,"details":..,"hint":..}`.
    public var jsonBody: String {
        "{\"code\":\(Self.quote(code)),\"message\":\(Self.quote(message)),"
            + "\"details\":\(details.map(Self.quote) ?? "null"),\"hint\":\(hint.map(Self.quote) ?? "null")}"
    }

    /// Encodes a string as a JSON string literal.
    static func quote(_ string: String) -> String {
        JSONValue.string(string).serialized
    }
}
