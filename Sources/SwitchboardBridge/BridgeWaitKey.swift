import Foundation
import SwitchboardCore

/// The wait keys of a pair's queued operations (`BridgeRecordTransaction`): what each operation waits for. The
/// pair is a column of its own, so a key never needs to name it.
enum BridgeWaitKey {
    /// A reaction or receipt on `id`, waiting for its copy on `target`.
    static func copy(_ id: MessageID, towards target: BackendID) -> String {
        "copy:\(target):\(id)"
    }

    /// A reply from `source`, waiting for the copy on `target` of its target `reply` (by source remote ID: the
    /// target may not have been read yet, so its `MessageID` is not known).
    static func reply(to reply: RemoteID, from source: BackendID, to target: BackendID) -> String {
        replyPrefix(from: source, to: target) + reply.rawValue
    }

    /// The prefix every reply key from `source` to `target` starts with.
    static func replyPrefix(from source: BackendID, to target: BackendID) -> String {
        "reply:\(target):\(source):"
    }

    /// The changes the quarantine holds.
    static let quarantine = "quarantine"
    /// The operator's requests to retry held changes.
    static let quarantineRetry = "quarantine-retry"
    /// The prefixes of the keys of operations that wait to be bridged (what the status line counts as waiting).
    static let waitingPrefixes = ["copy:", "reply:"]
}

extension RemoteChange {
    /// When the change happened at its source: the message's last edit or deletion, else its sending; the
    /// reaction's or receipt's time.
    var changedAt: Date {
        switch self {
        case .message(let message): message.deletedAt ?? message.editedAt ?? message.sentAt
        case .reaction(let reaction): reaction.at
        case .receipt(let receipt): receipt.at
        }
    }

    /// What kind of change it is, for logs and the quarantine listing.
    var kindName: String {
        switch self {
        case .message(let message): message.deletedAt != nil ? "delete" : (message.editedAt != nil ? "edit" : "message")
        case .reaction: "reaction"
        case .receipt: "receipt"
        }
    }

    /// The source's ID of the change's message (or of the message a reaction or receipt is on).
    var subjectRemoteID: RemoteID {
        switch self {
        case .message(let message): message.remoteID
        case .reaction(let reaction): reaction.target
        case .receipt(let receipt): receipt.target
        }
    }

    /// Whether two changes are versions of the same thing: one message, one user's reaction with one symbol, or
    /// one user's receipt on one message.
    func hasSameSubject(as other: RemoteChange) -> Bool {
        switch (self, other) {
        case (.message(let one), .message(let other)): one.remoteID == other.remoteID
        case (.reaction(let one), .reaction(let other)):
            one.target == other.target && one.user == other.user && one.symbol == other.symbol
        case (.receipt(let one), .receipt(let other)): one.target == other.target && one.user == other.user
        default: false
        }
    }
}
