import Foundation

/// Whether a conversation is catching up with its backend.
public enum SyncState: Sendable, Hashable, Codable {
    /// Fetching what changed after the stored cursor.
    case syncing
    /// Caught up; the live stream is feeding the timeline.
    case live
    /// The live stream is down; it reconnects on its own.
    case offline(reason: String)
}

/// One change to a conversation, in order; an observer can rebuild the timeline from these alone.
public enum ConversationEvent: Sendable, Hashable {
    /// A message appeared or changed state (delivery, timestamp, attachments).
    case messageUpserted(Message)
    /// A message's text changed (an edit, or an edit's rollback).
    case contentEdited(Message)
    /// A message was deleted (a tombstone remains), or a delete was rolled back (then not deleted).
    case deleted(Message)
    /// A message left the timeline entirely (a discarded draft).
    case removed(MessageID)
    /// A message's reactions changed.
    case reactionsChanged(Message)
    /// A recipient's receipt changed; the message carries its resulting delivery state.
    case receiptChanged(Message, Receipt)
    /// Someone started or stopped typing.
    case typingChanged(user: UserID, isTyping: Bool)
    /// The conversation's sync state changed.
    case syncStateChanged(SyncState)

    /// The message this event carries, if any.
    public var message: Message? {
        switch self {
        case .messageUpserted(let m), .contentEdited(let m), .deleted(let m), .reactionsChanged(let m),
             .receiptChanged(let m, _):
            m
        case .removed, .typingChanged, .syncStateChanged:
            nil
        }
    }
}

/// An event with its place in the conversation's ordered stream.
public struct SequencedEvent: Sendable, Hashable {
    /// Increases by one per event of this conversation in this process.
    public let sequence: UInt64
    /// The conversation.
    public let conversation: ConversationID
    /// What happened.
    public let event: ConversationEvent

    /// Builds a sequenced event.
    public init(sequence: UInt64, conversation: ConversationID, event: ConversationEvent) {
        self.sequence = sequence
        self.conversation = conversation
        self.event = event
    }
}
