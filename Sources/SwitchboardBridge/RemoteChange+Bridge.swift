import Foundation
import SwitchboardCore

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
