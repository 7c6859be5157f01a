/// An error from the PostgreSQL client layer or from a private cluster.
public struct PostgresError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure, extensible without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case connectionFailed
            case queryFailed
            case connectionClosed
            case clusterFailed
        }

        private let base: Base

        private init(_ base: Base) { self.base = base }

        /// The server could not be reached or refused the connection.
        public static let connectionFailed = Code(.connectionFailed)
        /// The server rejected a statement; `sqlState` says why.
        public static let queryFailed = Code(.queryFailed)
        /// The connection broke or was used after it failed.
        public static let connectionClosed = Code(.connectionClosed)
        /// A private cluster could not be initialised, started or stopped.
        public static let clusterFailed = Code(.clusterFailed)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// The five-character SQLSTATE reported by the server, when there is one.
    public let sqlState: String?
    /// The primary human-readable message.
    public let message: String
    /// The server's optional detail line.
    public let detail: String?
    /// The server's optional hint line.
    public let hint: String?

    /// Creates an error; bound parameters and connection strings never belong in it.
    public init(code: Code, message: String, sqlState: String? = nil, detail: String? = nil, hint: String? = nil) {
        self.code = code
        self.message = message
        self.sqlState = sqlState
        self.detail = detail
        self.hint = hint
    }

    /// A one-line summary with code, SQLSTATE, message, detail and hint.
    public var description: String {
        var text = "PostgresError.\(code)"
        if let sqlState { text += " [\(sqlState)]" }
        text += ": \(message)"
        if let detail { text += " (detail: \(detail))" }
        if let hint { text += " (hint: \(hint))" }
        return text
    }
}
