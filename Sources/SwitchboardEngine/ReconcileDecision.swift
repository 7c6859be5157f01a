import Foundation
import SwitchboardCore

/// The engine's reconciliation decisions (DESIGN §5, §7), as pure functions of what the store and the change say:
/// no store, no network, so every case is a table row in a test (`ReconcileDecisionTests`). `ChatClient` gathers
/// the facts inside its transaction, asks, and performs the effects (`ChatClient+Sync.swift`).
///
/// Nothing here refuses a change for its sender: a change finds its message by the backend's own ID (the ID map),
/// and that backend decides who may change its rows. The one way a remote party could reach another's message, a
/// carried key, is settled before: `MessageIdentity`'s rule gives a key that is not theirs a derived ID of its own
/// (`identity`), and a message that cannot be placed at all is refused there (it throws `conflict`).
enum ReconcileDecision {
    // MARK: - Which message

    /// What the records say about an incoming message's identity.
    enum Sighting: Sendable, Hashable {
        /// The ID map knows its backend ID: a message seen before, or mapped when it was prepared here.
        case mapped(MessageID)
        /// The ID map does not know it: what its carried key (else the derivation) resolved to under
        /// `MessageIdentity`'s rule.
        case unmapped(MessageIdentity.Resolution)
    }

    /// The `MessageID` an incoming message takes, and what that leaves to do.
    struct Identity: Sendable, Hashable {
        /// The message's ID.
        var id: MessageID
        /// Whether this is the first sighting of the backend ID: record its mapping, and insert the row if absent
        /// before reading any (an unmapped message is almost always new; a repeat finds its mapping).
        var isFirstSighting: Bool
        /// The carried key that was not the sender's to use, to count and log; the message keeps `id`, its own.
        var refusedKey: MessageID?
        /// Why that key could not bind.
        var collision: KeyCollision?
    }

    /// The identity of an incoming message: the ID map's entry first, else its resolution (DESIGN §2, §5).
    static func identity(_ sighting: Sighting) -> Identity {
        switch sighting {
        case .mapped(let id):
            Identity(id: id, isFirstSighting: false)
        case .unmapped(let resolution):
            Identity(id: resolution.id, isFirstSighting: true, refusedKey: resolution.refusedKey,
                     collision: resolution.collision)
        }
    }

    /// The row an incoming message stands for, under `id`: the server's times (to the microsecond), its reply
    /// linked to `replyTarget` (the ID map's entry for the message it answers) or else that message's derived ID,
    /// and the local user's own message as outgoing and sent, anyone else's as received.
    static func arriving(_ remote: RemoteMessage, as id: MessageID, replyTarget: MessageID?, backend: BackendID,
                         localUser: UserID) -> Message {
        let replyTo = remote.replyTo.map { target in replyTarget ?? MessageID.derived(backend: backend, remote: target) }
        let isOwn = remote.sender == localUser
        return Message(id: id, conversation: remote.conversation, sender: remote.sender,
                       content: MessageContent(text: remote.text, replyTo: replyTo, attachments: remote.attachments,
                                               metadata: remote.metadata),
                       timestamp: remote.sentAt.roundedToMicroseconds, hasServerTimestamp: true,
                       editedAt: remote.editedAt?.roundedToMicroseconds,
                       deletedAt: remote.deletedAt?.roundedToMicroseconds,
                       delivery: isOwn ? .sent : .received, isOutgoing: isOwn)
    }

    // MARK: - Messages

    /// What to do with an incoming message once its ID is known.
    enum Landing: Sendable, Hashable {
        /// No row under the ID: a new message; insert it and tell `messageUpserted`.
        case insert(Message)
        /// The row already shows everything the message says (a replay, a refetch, a second delivery): nothing.
        case duplicate
        /// Store the row as `row` and tell `events`. `confirmsEcho`: an own message came home and lands on its
        /// optimistic row, so it is sent whatever the publish call said, and its outbox entry goes.
        case update(row: Message, confirmsEcho: Bool, events: [ConversationEvent])
    }

    /// Where an incoming message (`arriving`, from `arriving(_:as:…)`) lands, given the row stored under its ID:
    /// the row keeps its place and adopts the server's time; an echo confirms the optimistic row; a newer text is
    /// an edit (a copy older than the local edit never undoes it); a deletion leaves a tombstone; a deleted row
    /// takes no edits and no second deletion. Upserted, never appended twice (DESIGN §5).
    static func landing(_ arriving: Message, on existing: Message?) -> Landing {
        guard var message = existing else { return .insert(arriving) }
        let before = message
        if !message.hasServerTimestamp || message.timestamp != arriving.timestamp {
            message.timestamp = arriving.timestamp
            message.hasServerTimestamp = true
        }
        let confirmsEcho = message.isOutgoing && !message.delivery.isPublished
        if confirmsEcho { message.delivery = .sent }
        message.content.attachments = mergeAttachments(local: message.content.attachments, remote: arriving.content.attachments)
        var edits = false
        if arriving.content.text != message.content.text, arriving.deletedAt == nil, message.deletedAt == nil {
            // A copy older than our own edit (the original, or an earlier edit) must not undo it.
            let isOlderThanLocalEdit = message.editedAt.map { local in arriving.editedAt.map { $0 < local } ?? true } ?? false
            if !isOlderThanLocalEdit {
                message.content.text = arriving.content.text
                message.editedAt = arriving.editedAt ?? message.editedAt
                edits = true
            }
        }
        var deletes = false
        if let deleted = arriving.deletedAt, message.deletedAt == nil {
            message.deletedAt = deleted
            message.content.text = arriving.content.text
            deletes = true
        }
        if message == before { return .duplicate }
        var events: [ConversationEvent] = []
        if !edits && !deletes {
            events.append(.messageUpserted(message))
        } else {
            if message.delivery != before.delivery || message.timestamp != before.timestamp {
                events.append(.messageUpserted(message))
            }
            if edits { events.append(.contentEdited(message)) }
            if deletes { events.append(.deleted(message)) }
        }
        return .update(row: message, confirmsEcho: confirmsEcho, events: events)
    }

    /// The remote attachment set wins (a partial failure may have split it); local files stay for display.
    static func mergeAttachments(local: [Attachment], remote: [Attachment]) -> [Attachment] {
        guard !remote.isEmpty else { return local }
        return remote.map { incoming in
            var merged = incoming
            if let mine = local.first(where: { $0.id == incoming.id || $0.sha256 == incoming.sha256 }) {
                merged.id = mine.id
                merged.localPath = mine.localPath
            }
            merged.upload = .uploaded
            return merged
        }
    }

    // MARK: - Reactions

    /// What to do with an incoming reaction.
    enum ReactionChange: Sendable, Hashable {
        /// Its target is not stored yet: wait for it (the change waits under the target's backend ID).
        case waitForTarget
        /// The local user's own reaction coming back while a reaction change of theirs on the message is on its
        /// way: the local state is what they asked for last, so leave it.
        case keepLocal
        /// The message already shows it (added twice, or removing what is not there): nothing.
        case unchanged
        /// Store the message with these reactions and tell `reactionsChanged`.
        case apply(Message)
    }

    /// The decision for a reaction on `target` (nil when the ID map or the store does not have it yet);
    /// `localChangeInFlight` says whether a reaction change of the local user's on it is on its way.
    static func reaction(_ reaction: RemoteReaction, on target: Message?, localChangeInFlight: Bool,
                         localUser: UserID) -> ReactionChange {
        guard var message = target else { return .waitForTarget }
        if reaction.user == localUser, localChangeInFlight { return .keepLocal }
        var reactions = message.reactions
        let existing = reactions.firstIndex { $0.user == reaction.user && $0.symbol == reaction.symbol }
        if reaction.isActive {
            if existing == nil {
                reactions.append(Reaction(user: reaction.user, symbol: reaction.symbol, at: reaction.at.roundedToMicroseconds))
            }
        } else if let existing {
            reactions.remove(at: existing)
        }
        guard reactions != message.reactions else { return .unchanged }
        message.reactions = reactions
        return .apply(message)
    }

    // MARK: - Receipts

    /// What to do with an incoming receipt.
    enum ReceiptChange: Sendable, Hashable {
        /// Its target is not stored yet: wait for it (the change waits under the target's backend ID).
        case waitForTarget
        /// The user's receipt already stands at this state or higher: receipts never step back (DESIGN §7).
        case stale
        /// Store `receipt`, and `message` too when `climbs` (an own message's delivery moved up the ladder); tell
        /// `receiptChanged(message, receipt)`.
        case record(Receipt, message: Message, climbs: Bool)
    }

    /// The decision for a receipt on `target` (nil when the ID map or the store does not have it yet), given the
    /// state of the same user's stored receipt on it.
    static func receipt(_ remote: RemoteReceipt, on target: Message?, current: ReceiptState?,
                        localUser: UserID) -> ReceiptChange {
        guard var message = target else { return .waitForTarget }
        if let current, current >= remote.state { return .stale }
        let receipt = Receipt(message: message.id, user: remote.user, state: remote.state, at: remote.at.roundedToMicroseconds)
        var climbs = false
        if message.isOutgoing && remote.user != localUser && message.delivery.isPublished {
            let climbed: DeliveryState = remote.state == .read ? .read : .delivered
            if climbed.rank > message.delivery.rank {
                message.delivery = climbed
                climbs = true
            }
        }
        return .record(receipt, message: message, climbs: climbs)
    }
}
