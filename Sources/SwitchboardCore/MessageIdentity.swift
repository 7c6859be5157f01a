import Foundation

/// Where a remote message was seen: the backend, conversation and sender a carried key is claimed by.
public struct KeyScope: Sendable, Hashable, CustomStringConvertible {
    /// The backend the message came from.
    public var backend: BackendID
    /// Its conversation there.
    public var conversation: ConversationID
    /// Its author there.
    public var sender: UserID

    /// A scope from its parts.
    public init(backend: BackendID, conversation: ConversationID, sender: UserID) {
        self.backend = backend
        self.conversation = conversation
        self.sender = sender
    }

    /// The scope of `message` as `backend` delivered it.
    public init(_ message: RemoteMessage, on backend: BackendID) {
        self.init(backend: backend, conversation: message.conversation, sender: message.sender)
    }

    /// `sender in backend/conversation`, for logs.
    public var description: String { "\(sender) in \(backend)/\(conversation)" }
}

/// What the records of the component resolving a message know about one candidate `MessageID` (DESIGN §2: a
/// carried key is a claim, not proof). The engine fills it from its message rows, the bridge from its ledger.
public struct KeyEvidence: Sendable, Hashable {
    /// The ID's backend ID on the message's own backend when it already names another message there.
    public var otherRemoteOnBackend: RemoteID?
    /// Who holds the ID, when the records say (the conversation and sender of the message stored under it).
    public var owner: KeyScope?
    /// Whether the ID is already known in a way that names no owner (mapped on another backend, or a bridge
    /// ledger row): it belongs to someone, just not provably to this sender.
    public var isHeldElsewhere: Bool
    /// Whether this message is the resolving bridge's own copy of that ID coming back (its account sent it, and
    /// the bridge's ledger shows the copy under that ID).
    public var isOwnCopy: Bool

    /// Evidence from its parts; the default says the ID is unknown (new).
    public init(otherRemoteOnBackend: RemoteID? = nil, owner: KeyScope? = nil, isHeldElsewhere: Bool = false,
                isOwnCopy: Bool = false) {
        self.otherRemoteOnBackend = otherRemoteOnBackend
        self.owner = owner
        self.isHeldElsewhere = isHeldElsewhere
        self.isOwnCopy = isOwnCopy
    }

    /// Nothing is known of the ID.
    public static let unknown = KeyEvidence()
}

/// Why a carried key (or a derived ID) could not bind.
public enum KeyCollision: Sendable, Hashable, CustomStringConvertible {
    /// The ID already names another message on the same backend.
    case namesAnotherMessage(RemoteID)
    /// The ID belongs to a message of another conversation or sender.
    case ownedBy(KeyScope)
    /// The ID is in use elsewhere (another backend, another bridged pair).
    case heldElsewhere

    /// Why, for logs.
    public var description: String {
        switch self {
        case .namesAnotherMessage(let remote): "it already names message \(remote) on this backend"
        case .ownedBy(let owner): "it belongs to a message of \(owner)"
        case .heldElsewhere: "it already names a message elsewhere"
        }
    }
}

/// The key trust rule of DESIGN §2 and the normalisation of carried keys: pure, so the engine, the bridge and
/// the migrator decide alike and the rule is tested on its own.
public enum MessageIdentity {
    /// The canonical form of a carried key: nil for an empty key (no key), a UUID in lower case, and any other
    /// text as a UUIDv5 of the key scoped to its backend, conversation and sender (the way a Socket-style backend
    /// scopes `clientMessageId`), so two senders' `1` stay two messages and every target can carry the result.
    public static func normalizedKey(_ key: MessageID?, scope: KeyScope) -> MessageID? {
        guard let raw = key?.rawValue, !raw.isEmpty else { return nil }
        if let canonical = UUIDText.canonical(raw) { return canonical == raw ? key : MessageID(canonical) }
        let name = ["key", scope.backend.rawValue, scope.conversation.rawValue, scope.sender.rawValue, raw]
            .joined(separator: "\u{1F}")
        return MessageID(UUIDv5.make(namespace: UUIDv5.switchboardNamespace, name: name))
    }

    /// Whether `scope` may take `id` given what the records know: when the ID is new, is the resolver's own copy
    /// coming back, or already belongs to the same conversation and sender; otherwise why not.
    public static func claim(by scope: KeyScope, evidence: KeyEvidence) -> KeyCollision? {
        if let other = evidence.otherRemoteOnBackend { return .namesAnotherMessage(other) }
        if evidence.isOwnCopy { return nil }
        if let owner = evidence.owner {
            return owner.conversation == scope.conversation && owner.sender == scope.sender ? nil : .ownedBy(owner)
        }
        return evidence.isHeldElsewhere ? .heldElsewhere : nil
    }

    /// The `n`th deterministic ID of a message first seen on `backend` as `remote`: the plain derivation first,
    /// then salted ones, tried in order when an earlier one is already taken (someone claimed it as a key).
    public static func derived(backend: BackendID, remote: RemoteID, attempt: Int) -> MessageID {
        guard attempt > 0 else { return MessageID.derived(backend: backend, remote: remote) }
        return MessageID(UUIDv5.make(namespace: UUIDv5.switchboardNamespace,
                                     name: backend.rawValue + "\u{1F}" + remote.rawValue + "\u{1F}\(attempt)"))
    }

    /// How many derived IDs are tried before a message is refused as unplaceable.
    public static let derivationAttempts = 8

    /// Resolves a message not found in the ID map: its carried key when the claim holds, else the first derived
    /// ID whose claim holds. `evidence` reads the records for one candidate. Throws `conflict` when no candidate
    /// can be placed (every derivation already taken: someone is squatting them).
    public static func resolve(_ message: RemoteMessage, on backend: BackendID,
                               evidence: (MessageID) throws -> KeyEvidence) throws -> Resolution {
        let scope = KeyScope(message, on: backend)
        var refused: (key: MessageID, reason: KeyCollision)?
        if let key = normalizedKey(message.idempotencyKey, scope: scope) {
            guard let collision = claim(by: scope, evidence: try evidence(key)) else { return Resolution(id: key) }
            refused = (key, collision)
        }
        for attempt in 0..<derivationAttempts {
            let candidate = derived(backend: backend, remote: message.remoteID, attempt: attempt)
            if claim(by: scope, evidence: try evidence(candidate)) == nil {
                return Resolution(id: candidate, refusedKey: refused?.key, collision: refused?.reason)
            }
        }
        throw SwitchboardError(.conflict, "message \(message.remoteID) of \(scope) cannot be placed: its key and "
                               + "\(derivationAttempts) derived IDs are all taken")
    }

    /// The outcome of `resolve`.
    public struct Resolution: Sendable, Hashable {
        /// The message's ID.
        public var id: MessageID
        /// The key the message carried and could not take, when it collided.
        public var refusedKey: MessageID?
        /// Why the carried key could not bind.
        public var collision: KeyCollision?

        /// A resolution from its parts.
        public init(id: MessageID, refusedKey: MessageID? = nil, collision: KeyCollision? = nil) {
            self.id = id
            self.refusedKey = refusedKey
            self.collision = collision
        }
    }
}
