import Foundation
import SwitchboardCore
import SwitchboardStore

/// Where the copy of a message towards a target stands in the pair's records.
enum BridgeCopyState: Sendable, Hashable {
    /// Not prepared yet (or only a mapping from an interrupted run of an older version).
    case new
    /// Prepared and persisted, its publish not recorded: the stored copy must be published again, as is.
    case pending(PreparedMessage)
    /// Staged in a batch towards a target that `republishesByKey`, its publish not recorded: the ledger entry (with
    /// the text that was staged) is all that was kept; the copy is prepared again from it and published.
    case pendingUnstored(BridgeCopy)
    /// Published and recorded under this target ID.
    case bridged(RemoteID)
    /// The ID belongs to another pair's ledger: nothing of this pair may touch it.
    case otherPair
}

/// The bridge's decisions, as pure functions of what the records and the change say: no store, no network, so
/// every case is a table row in a test (`BridgeDecisionTests`). `Bridge` gathers the facts, asks, and acts.
enum BridgeDecision {
    /// What to do with one source message.
    enum Message: Sendable, Hashable {
        /// Refuse: its ID belongs to another pair.
        case refuseOtherPair
        /// Already copied: apply what changed at the source (edit, delete) to the copy with this target ID.
        case applyUpdates(RemoteID)
        /// Publish the stored copy again (an interrupted run), then apply what changed since.
        case republish(PreparedMessage)
        /// Prepare the copy again from the staged text (the ledger entry's), publish it, then apply changes.
        case republishStaged(text: String)
        /// Leave it: a copy made from the other side by the bridge's own account.
        case skipOwnCopy
        /// Remember it as deleted: it was deleted before it was copied; nothing to show on the other side.
        case skipDeleted
        /// A reply whose target has no copy yet: wait for the target (by its source ID).
        case waitForReplyTarget(RemoteID)
        /// Copy it, linked to `replyTo` on the target, or naming an uncopied reply target (`unlinkedReply`).
        case copy(replyTo: RemoteID?, unlinkedReply: RemoteID?)
    }

    /// What the records and the change say about one source message.
    struct MessageFacts: Sendable, Hashable {
        /// Where its copy stands.
        var state: BridgeCopyState
        /// Whether it is a copy the bridge's own account made from the other side (`Bridge.isOwnCopy`).
        var isOwnCopy: Bool
        /// Whether it is deleted at the source.
        var isDeleted: Bool
        /// The source ID of the message it replies to, if any.
        var replyTo: RemoteID?
        /// That message's copy on the target, if it has one.
        var replyTargetCopy: RemoteID?
        /// Whether a reply may wait for its target's copy (false once the source has nothing more to read).
        var repliesMayWait: Bool
    }

    /// The decision for one source message (DESIGN: exactly once, nothing of another pair, own copies never back).
    static func message(_ facts: MessageFacts) -> Message {
        switch facts.state {
        case .otherPair: return .refuseOtherPair
        case .bridged(let remote): return .applyUpdates(remote)
        case .pending(let stored): return .republish(stored)
        case .pendingUnstored(let staged): return .republishStaged(text: staged.text)
        case .new: break
        }
        if facts.isOwnCopy { return .skipOwnCopy }
        if facts.isDeleted { return .skipDeleted }
        guard let reply = facts.replyTo else { return .copy(replyTo: nil, unlinkedReply: nil) }
        if let linked = facts.replyTargetCopy { return .copy(replyTo: linked, unlinkedReply: nil) }
        return facts.repliesMayWait ? .waitForReplyTarget(reply) : .copy(replyTo: nil, unlinkedReply: reply)
    }

    /// What to do with a change of a message this pair already copied.
    enum Update: Sendable, Hashable {
        /// Nothing: the copy already shows this version (or the message is the bridge's own copy).
        case nothing
        /// Refuse: the message standing under the ID is not the original this pair copied (another sender or side).
        case refuseNotOriginal(originalSender: UserID)
        /// Delete the copy, and remember the deletion.
        case delete
        /// Replace the copy's text, and remember it.
        case edit(String)
        /// Remember this version (the ledger had no entry: a copy from an older version's run).
        case remember(deleted: Bool)
    }

    /// The decision for a change of an already copied message, from the pair's ledger entry (`known`).
    static func update(of message: RemoteMessage, from source: BackendID, isOwnCopy: Bool, known: BridgeCopy?) -> Update {
        if isOwnCopy { return .nothing }
        if let known, !isOriginal(message, from: source, remembered: known) {
            return .refuseNotOriginal(originalSender: known.sender)
        }
        if message.deletedAt != nil, known?.deletedAt == nil {
            return .delete
        }
        guard let known else { return .remember(deleted: message.deletedAt != nil) }
        if message.deletedAt == nil, known.deletedAt == nil, known.text != message.text { return .edit(message.text) }
        return .nothing
    }

    /// Whether `message` says it is a copy made from backend `other` (its `bridge.origin`, which a bridge sets on
    /// every copy); only meaningful for a message of the side's own account, which alone writes it there.
    static func isCopy(_ message: RemoteMessage, madeFrom other: BackendID) -> Bool {
        message.metadata["bridge.origin"]?.hasPrefix("\(other):") == true
    }

    /// Whether `message`, found under a copied ID on `source`, is the original this pair copied, by its author:
    /// only then may its edits and deletes change the copy. Anything else standing under the ID (a row someone
    /// inserted under the key before the bridge's copy, say) is not the original, whatever it says.
    static func isOriginal(_ message: RemoteMessage, from source: BackendID, remembered: BridgeCopy) -> Bool {
        message.sender == remembered.sender && (remembered.origin.map { $0 == source } ?? true)
    }
}
