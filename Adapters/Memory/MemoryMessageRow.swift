import Foundation
import SwitchboardCore

/// One message as the in-memory server stores it: a row with its history position and change version.
public struct MemoryMessageRow: Sendable, Hashable, Codable {
    /// Server-assigned, increasing insert position: the history cursor.
    public internal(set) var seq: Int64
    /// The backend's ID for the message, fixed by the backend's scheme.
    public internal(set) var remoteID: RemoteID
    /// The conversation the message belongs to.
    public internal(set) var conversation: ConversationID
    /// The idempotency key the sender carried; unique within the conversation.
    public internal(set) var idempotencyKey: MessageID
    /// The author, as authenticated by the server.
    public internal(set) var sender: UserID
    /// Current text (empty once deleted).
    public internal(set) var text: String
    /// The backend ID of the message this one replies to.
    public internal(set) var replyTo: RemoteID?
    /// Hosted attachments (emptied once deleted).
    public internal(set) var attachments: [Attachment]
    /// Metadata carried with the message.
    public internal(set) var metadata: [String: String]
    /// Server time of the insert.
    public internal(set) var sentAt: Date
    /// Server time of the last edit.
    public internal(set) var editedAt: Date?
    /// Server time of the deletion (the row stays as a tombstone).
    public internal(set) var deletedAt: Date?
    /// Global change version of the row's latest insert or update: the change-feed cursor.
    public internal(set) var version: Int64

    /// The row as the backend delivers it to clients.
    public var remoteMessage: RemoteMessage {
        RemoteMessage(remoteID: remoteID, conversation: conversation, idempotencyKey: idempotencyKey, sender: sender,
                      text: text, replyTo: replyTo, attachments: attachments, metadata: metadata, sentAt: sentAt,
                      editedAt: editedAt, deletedAt: deletedAt)
    }
}

/// Who reacted with what: the key of a reaction row under its target message.
struct ReactionSlot: Hashable, Sendable, Codable {
    var user: UserID
    var symbol: String
}

/// A reaction row; removed reactions stay as inactive tombstones so delta sync reports the removal.
struct ReactionRow: Hashable, Sendable, Codable {
    var target: RemoteID
    var conversation: ConversationID
    var user: UserID
    var symbol: String
    var isActive: Bool
    var at: Date
    var version: Int64

    var slot: ReactionSlot { ReactionSlot(user: user, symbol: symbol) }

    var remoteReaction: RemoteReaction {
        RemoteReaction(target: target, conversation: conversation, user: user, symbol: symbol, isActive: isActive, at: at)
    }
}

/// A receipt row: one per (message, recipient), whose state only climbs.
struct ReceiptRow: Hashable, Sendable, Codable {
    var target: RemoteID
    var conversation: ConversationID
    var user: UserID
    var state: ReceiptState
    var at: Date
    var version: Int64

    var remoteReceipt: RemoteReceipt {
        RemoteReceipt(target: target, conversation: conversation, user: user, state: state, at: at)
    }
}

/// What a change-feed entry points at.
enum FeedItem: Hashable, Sendable {
    case message(seq: Int64)
    case reaction(target: RemoteID, slot: ReactionSlot)
    case receipt(target: RemoteID, user: UserID)
}

/// One entry of a conversation's change feed, kept sorted by version; an item appears once, at its latest version.
struct FeedEntry: Hashable, Sendable {
    var version: Int64
    var item: FeedItem
}

/// A conversation's membership and indexes.
struct ConversationState: Sendable {
    var members: Set<UserID> = []
    /// Message seqs in insert order (ascending).
    var seqs: [Int64] = []
    /// Idempotency key to seq.
    var seqByKey: [MessageID: Int64] = [:]
    /// Change feed, ascending by version.
    var feed: [FeedEntry] = []

    /// Moves `item` from `oldVersion` (if any) to the end of the feed at `newVersion`.
    mutating func touch(_ item: FeedItem, from oldVersion: Int64?, to newVersion: Int64) {
        if let oldVersion {
            let index = feed.firstIndex(atOrAfter: oldVersion)
            if index < feed.count, feed[index].version == oldVersion { feed.remove(at: index) }
        }
        let entry = FeedEntry(version: newVersion, item: item)
        if let last = feed.last, last.version > newVersion {
            feed.insert(entry, at: feed.firstIndex(atOrAfter: newVersion))
        } else {
            feed.append(entry)
        }
    }

    /// Inserts a seq, keeping `seqs` ascending.
    mutating func insertSeq(_ seq: Int64) {
        if let last = seqs.last, last > seq {
            seqs.insert(seq, at: seqs.firstIndex(atOrAfter: seq))
        } else {
            seqs.append(seq)
        }
    }
}

extension Array where Element == FeedEntry {
    /// The index of the first entry whose version is at least `version` (binary search).
    func firstIndex(atOrAfter version: Int64) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].version < version { low = mid + 1 } else { high = mid }
        }
        return low
    }
}

extension Array where Element == Int64 {
    /// The index of the first element that is at least `value` (binary search).
    func firstIndex(atOrAfter value: Int64) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
