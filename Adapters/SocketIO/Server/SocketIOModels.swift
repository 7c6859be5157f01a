import Foundation
import SwitchboardCore

/// One user's reaction on a message (one per user), or the tombstone of a removed or replaced one.
struct SocketIOReaction: Sendable, Hashable {
    /// Who reacted.
    var userID: String
    /// The emoji.
    var emoji: String
    /// When it was set (a tombstone: removed), milliseconds since 1970.
    var atMs: Int64

    /// `{"userId","emoji","at"}`.
    var json: JSONValue {
        .object([("userId", .string(userID)), ("emoji", .string(emoji)), ("at", .string(SocketIOTime.format(ms: atMs)))])
    }
}

/// How far a member got with a message; receipts only move forward.
enum SocketIOReceiptState: Int, Sendable, Hashable {
    /// The message reached the member's device.
    case delivered = 1
    /// The member read it.
    case read = 2

    /// The wire name, `delivered` or `read`.
    var name: String { self == .read ? "read" : "delivered" }

    /// The state of a wire name.
    init?(name: String) {
        switch name {
        case "delivered": self = .delivered
        case "read": self = .read
        default: return nil
        }
    }
}

/// One member's receipt on a message.
struct SocketIOReceipt: Sendable, Hashable {
    /// Whose receipt.
    var userID: String
    /// How far they got.
    var state: SocketIOReceiptState
    /// When the state was reached, milliseconds since 1970.
    var atMs: Int64
}

/// A conversation and its members.
struct SocketIOConversation: Sendable, Hashable {
    /// The conversation ID.
    var id: String
    /// The members, sorted.
    var members: [String]
    /// When it was created, milliseconds since 1970.
    var createdMs: Int64

    /// `{"id","members","createdAt"}`.
    var json: JSONValue {
        .object([("id", .string(id)), ("members", .array(members.map { .string($0) })),
                 ("createdAt", .string(SocketIOTime.format(ms: createdMs)))])
    }
}

/// A message as stored, with its reactions and receipts.
struct SocketIOMessage: Sendable, Hashable {
    /// The server-assigned ID (from the global sequence).
    var id: Int64
    /// The conversation.
    var conversationID: String
    /// The sender's idempotency key.
    var clientMessageID: String
    /// The sender.
    var senderID: String
    /// The text (`""` once deleted).
    var text: String
    /// The ID of the message this one answers.
    var replyTo: Int64?
    /// The attachments, a JSON array of objects (`[]` once deleted).
    var attachments: JSONValue
    /// Free-form metadata object, if any.
    var metadata: JSONValue?
    /// Creation time, milliseconds since 1970.
    var createdMs: Int64
    /// Last edit time.
    var editedMs: Int64?
    /// Deletion time.
    var deletedMs: Int64?
    /// One reaction per user, oldest first.
    var reactions: [SocketIOReaction]
    /// Removed or replaced (user, emoji) pairs, oldest removal first; at most one per pair, none that stands again.
    var removedReactions: [SocketIOReaction]
    /// One receipt per user, by user ID.
    var receipts: [SocketIOReceipt]
    /// The sequence value of the latest change (`id` until the first change).
    var version: Int64

    /// Whether the message was deleted.
    var isDeleted: Bool { deletedMs != nil }

    /// The wire object of WIRE.md.
    var json: JSONValue {
        let members: [(key: String, value: JSONValue)] = [
            ("id", .string(String(id))),
            ("conversationId", .string(conversationID)),
            ("clientMessageId", .string(clientMessageID)),
            ("senderId", .string(senderID)),
            ("text", .string(text)),
            ("replyTo", replyTo.map { .string(String($0)) } ?? .null),
            ("attachments", attachments),
            ("metadata", metadata ?? .null),
            ("createdAt", .string(SocketIOTime.format(ms: createdMs))),
            ("editedAt", editedMs.map { .string(SocketIOTime.format(ms: $0)) } ?? .null),
            ("deletedAt", deletedMs.map { .string(SocketIOTime.format(ms: $0)) } ?? .null),
            ("reactions", .array(reactions.map(\.json))),
            ("removedReactions", .array(removedReactions.map(\.json))),
            ("receipts", .array(receipts.map { receipt in
                .object([("userId", .string(receipt.userID)), ("state", .string(receipt.state.name)),
                         ("at", .string(SocketIOTime.format(ms: receipt.atMs)))])
            })),
            ("version", .number(String(version))),
        ]
        return .object(members)
    }
}

/// A validated new message, before it is stored.
struct SocketIOMessageInput: Sendable, Hashable {
    /// The sender's idempotency key (1–128 characters).
    var clientMessageID: String
    /// The text.
    var text: String
    /// The message answered, if any.
    var replyTo: Int64?
    /// The attachments (a JSON array).
    var attachments: JSONValue
    /// Metadata object, if any.
    var metadata: JSONValue?
}

/// A stored upload's description.
struct SocketIOUpload: Sendable, Hashable {
    /// The random file ID (32 lowercase hex digits).
    var id: String
    /// Who uploaded it.
    var ownerID: String
    /// The `Content-Type` it was uploaded with.
    var contentType: String
    /// Its size in bytes.
    var size: Int
    /// Its SHA-256, lowercase hex.
    var sha256: String
}

/// The server's clock and RFC 3339 timestamps.
enum SocketIOTime {
    /// Now, in whole milliseconds since 1970.
    static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// `2026-11-30T10:00:00.123Z` for milliseconds since 1970 (UTC, always with milliseconds).
    static func format(ms: Int64) -> String { RFC3339.format(ms, fractionDigits: 3) }
}
