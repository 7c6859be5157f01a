import SwitchboardCore

/// What a queued `PendingOperation` waits for, the engine's and the bridge's alike. A key is built only from what
/// it names, never from free text, and is stored as its `rawValue`.
public struct WaitKey: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The stored form.
    public let rawValue: String

    /// A key as the store holds it (a row read back, or an older version's key to adopt); any other key is built by
    /// the typed constructors below.
    public init(stored rawValue: String) { self.rawValue = rawValue }

    /// Engine: an incoming reaction or receipt on the message `remote` of `backend`, not seen here yet.
    public static func remote(_ remote: RemoteID, on backend: BackendID) -> WaitKey {
        WaitKey(stored: "remote:\(backend.rawValue):\(remote.rawValue)")
    }

    /// Engine: the local user's edit, delete, reaction or receipt on `message`, waiting for it to be published.
    public static func published(_ message: MessageID) -> WaitKey {
        WaitKey(stored: "published:\(message.rawValue)")
    }

    /// Bridge: a reaction or receipt on `message`, waiting for its copy on `target`.
    public static func copy(_ message: MessageID, towards target: BackendID) -> WaitKey {
        WaitKey(stored: "copy:\(target):\(message)")
    }

    /// Bridge: a reply from `source`, waiting for the copy on `target` of the message it replies to, `reply` (by
    /// source remote ID: that message may not have been read yet, so its `MessageID` is not known).
    public static func reply(to reply: RemoteID, from source: BackendID, to target: BackendID) -> WaitKey {
        WaitKey(stored: Family.replies(from: source, to: target).prefix + reply.rawValue)
    }

    /// Bridge: a change the quarantine holds.
    public static let quarantine = WaitKey(stored: "quarantine")
    /// Bridge: an operator's request to retry a held change.
    public static let quarantineRetry = WaitKey(stored: "quarantine-retry")

    /// The key as stored.
    public var description: String { rawValue }

    /// Encodes as its stored string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    /// Decodes from its stored string.
    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    /// A set of keys sharing a stored prefix, for the store's range scans.
    public struct Family: Sendable, Hashable {
        /// The prefix every key of the family starts with.
        public let prefix: String

        /// Bridge: every reaction or receipt waiting for a copy.
        public static let copies = Family(prefix: "copy:")
        /// Bridge: the reactions and receipts waiting for copies on `target`.
        public static func copies(towards target: BackendID) -> Family {
            Family(prefix: "copy:\(target):")
        }
        /// Bridge: every reply waiting for its target's copy.
        public static let replies = Family(prefix: "reply:")
        /// Bridge: the replies from `source` waiting for copies on `target`.
        public static func replies(from source: BackendID, to target: BackendID) -> Family {
            Family(prefix: "reply:\(target):\(source):")
        }
        /// Bridge: the families of operations that wait to be bridged (what a status line counts as waiting).
        public static let waiting: [Family] = [.copies, .replies]
        /// Every key.
        public static let all = Family(prefix: "")

        /// A family by stored prefix (an older version's keys, read back to be adopted).
        public static func stored(prefix: String) -> Family { Family(prefix: prefix) }
    }
}
