import Foundation

/// The public error type: a stable code, a message for people, and whether retrying can help.
public struct SwitchboardError: Error, Sendable, Hashable, CustomStringConvertible, LocalizedError {
    /// A stable error category; new codes can be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Sendable {
            case emptyMessage, contentTooLarge, unknownMessage, unknownConversation, editWindowExpired
            case deleteWindowExpired, notSupported, alreadyPublished, refused, transport, storage
            case corruptStore, invalidArgument, notFound, unauthorized, cancelled, notOwner, conflict, forbidden
            case `internal`
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// Text was empty or only whitespace and there were no attachments.
        public static let emptyMessage = Code(.emptyMessage)
        /// Text or attachments exceed what the backend accepts.
        public static let contentTooLarge = Code(.contentTooLarge)
        /// No message with that ID is known.
        public static let unknownMessage = Code(.unknownMessage)
        /// No conversation with that ID is known or accessible.
        public static let unknownConversation = Code(.unknownConversation)
        /// The edit window (default 15 minutes) has passed.
        public static let editWindowExpired = Code(.editWindowExpired)
        /// The delete window (default 2 hours) has passed.
        public static let deleteWindowExpired = Code(.deleteWindowExpired)
        /// The adapter lacks the capability.
        public static let notSupported = Code(.notSupported)
        /// The operation needs an unpublished message.
        public static let alreadyPublished = Code(.alreadyPublished)
        /// The backend refused the operation.
        public static let refused = Code(.refused)
        /// The network or server failed; retrying may help.
        public static let transport = Code(.transport)
        /// The local store failed.
        public static let storage = Code(.storage)
        /// The database file is corrupt or not ours.
        public static let corruptStore = Code(.corruptStore)
        /// An argument is malformed.
        public static let invalidArgument = Code(.invalidArgument)
        /// A remote object does not exist.
        public static let notFound = Code(.notFound)
        /// Credentials are missing, wrong or expired.
        public static let unauthorized = Code(.unauthorized)
        /// The account may not act in this conversation (not a member, or row-level security refused it).
        public static let forbidden = Code(.forbidden)
        /// The operation was cancelled.
        public static let cancelled = Code(.cancelled)
        /// Only the sender may do this.
        public static let notOwner = Code(.notOwner)
        /// The change conflicts with existing state.
        public static let conflict = Code(.conflict)
        /// A failure nothing classified where it was raised (a bug, or an error from code that does not say what
        /// it means); its message carries the original description. Never retryable.
        public static let `internal` = Code(.internal)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// The category.
    public let code: Code
    /// What happened, for people; never contains secrets.
    public let message: String
    /// Whether retrying the same operation may succeed.
    public let isRetryable: Bool
    /// How long the server asked to wait before a retry (its `Retry-After`), when it said.
    public let retryAfter: Duration?

    /// Builds an error.
    public init(_ code: Code, _ message: String, retryable: Bool = false, retryAfter: Duration? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = retryable
        self.retryAfter = retryAfter
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
    /// The same as `description`, for Foundation.
    public var errorDescription: String? { description }

    /// The public form of any error, as classified where it was raised: a `SwitchboardError` stays as it is, a
    /// `CancellationError` is a retryable `cancelled`, an error that classifies itself
    /// (`SwitchboardErrorConvertible`: SQLite, PostgreSQL, HTTP client and WebSocket errors) gives its own
    /// classification, and anything else is a non-retryable `internal` error carrying its description: an error
    /// nobody classified is never retried as if the network had blinked.
    public static func wrapping(_ error: any Error) -> SwitchboardError {
        if let error = error as? SwitchboardError { return error }
        if error is CancellationError { return SwitchboardError(.cancelled, "cancelled", retryable: true) }
        if let error = error as? any SwitchboardErrorConvertible { return error.switchboardError }
        return SwitchboardError(.internal, String(describing: error))
    }
}

/// An error type that says what it means for Switchboard where it is raised: its code and whether a retry can help.
///
/// The low-level clients' errors conform (SQLite by result code, PostgreSQL by SQLSTATE, the HTTP client by curl
/// code and status, WebSocket by failure kind), so `SwitchboardError.wrapping` classifies them as their source does.
public protocol SwitchboardErrorConvertible: Error {
    /// The public error for this failure.
    var switchboardError: SwitchboardError { get }
}
