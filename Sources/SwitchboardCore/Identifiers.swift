import Foundation

/// A string-backed identifier: hashable, ordered, coded as a bare JSON string.
public protocol StringIdentifier: Hashable, Comparable, Codable, Sendable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The identifier's text as it travels and is stored.
    var rawValue: String { get }
    /// Wraps `rawValue` without validation.
    init(_ rawValue: String)
}

extension StringIdentifier {
    /// Creates the identifier from a string literal.
    public init(stringLiteral value: String) { self.init(value) }
    /// The raw text.
    public var description: String { rawValue }
    /// Orders identifiers by their raw text.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// Decodes the identifier from a single JSON string.
    public init(from decoder: any Decoder) throws {
        self.init(try decoder.singleValueContainer().decode(String.self))
    }
    /// Encodes the identifier as a single JSON string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// The internal, stable identity of one logical message; never changes once a row exists.
public struct MessageID: StringIdentifier {
    /// The lowercase UUID text (or another stable key for foreign messages).
    public let rawValue: String
    /// Wraps an existing identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }

    /// Mints a fresh time-ordered identifier (UUIDv7) at compose time, before any network call.
    public static func make() -> MessageID { MessageID(UUIDv7.make()) }

    /// The deterministic identifier of a message first seen on `backend` as `remote`.
    public static func derived(backend: BackendID, remote: RemoteID) -> MessageID {
        MessageID(UUIDv5.make(namespace: UUIDv5.switchboardNamespace,
                              name: backend.rawValue + "\u{1F}" + remote.rawValue))
    }

    /// Whether the text is a canonical lowercase UUID (the form an idempotency key must have).
    public var isCanonical: Bool {
        UUIDText.isCanonical(rawValue)
    }
}

/// A backend's own identifier for a message: content-derived, client-supplied or server-assigned.
public struct RemoteID: StringIdentifier {
    /// The backend's text, opaque to the core.
    public let rawValue: String
    /// Wraps a backend identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// Names one backend instance (for example `memory`, `supabase:chat.example`).
public struct BackendID: StringIdentifier {
    /// The backend's name.
    public let rawValue: String
    /// Wraps a backend name.
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A conversation as the backend names it.
public struct ConversationID: StringIdentifier {
    /// The backend's conversation identifier.
    public let rawValue: String
    /// Wraps a conversation identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// A user (inbox, account) as the backend names it.
public struct UserID: StringIdentifier {
    /// The backend's user identifier.
    public let rawValue: String
    /// Wraps a user identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }
}

/// The stable identity of one attachment of one message.
public struct AttachmentID: StringIdentifier {
    /// The lowercase UUID text.
    public let rawValue: String
    /// Wraps an attachment identifier.
    public init(_ rawValue: String) { self.rawValue = rawValue }
    /// Mints a fresh, time-ordered (UUIDv7) attachment identifier.
    public static func make() -> AttachmentID { AttachmentID(UUIDv7.make()) }
}

/// A position the server assigned (a sequence, a change version, a message ID); never an offset.
public struct Cursor: StringIdentifier {
    /// The adapter's opaque cursor text.
    public let rawValue: String
    /// Wraps a cursor.
    public init(_ rawValue: String) { self.rawValue = rawValue }
}
