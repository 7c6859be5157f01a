import Foundation
import SwitchboardCore

/// Translates between WIRE.md's JSON (message objects, POST bodies, timestamps) and the core model.
public enum SocketIOWire {
    /// The `POST /conversations/{id}/messages` body for `message`, with its `MessageID` as `clientMessageId`.
    public static func postBody(_ message: OutgoingMessage) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            (key: "clientMessageId", value: .string(message.id.rawValue)),
            (key: "text", value: .string(message.text)),
        ]
        if let replyTo = message.replyTo { members.append((key: "replyTo", value: .string(replyTo.rawValue))) }
        if !message.attachments.isEmpty {
            members.append((key: "attachments", value: .array(message.attachments.map(attachmentJSON))))
        }
        if !message.metadata.isEmpty {
            members.append((key: "metadata", value: .object(message.metadata.mapValues { JSONValue.string($0) })))
        }
        return .object(members)
    }

    /// An attachment as a message's `attachments` array carries it (`url`, `name`, `mimeType`, `size`, `sha256`).
    public static func attachmentJSON(_ attachment: Attachment) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            (key: "url", value: .string(attachment.remoteLocation ?? "")),
            (key: "name", value: .string(attachment.filename)),
            (key: "mimeType", value: .string(attachment.mimeType)),
            (key: "size", value: .int(attachment.byteCount)),
        ]
        if !attachment.sha256.isEmpty { members.append((key: "sha256", value: .string(attachment.sha256))) }
        return .object(members)
    }

    /// An attachment from a message object; its ID is derived from the URL, so every reader names it alike.
    public static func attachment(_ json: JSONValue) -> Attachment? {
        guard let url = json["url"]?.stringValue, !url.isEmpty else { return nil }
        let fileID = url.split(separator: "/").last.map(String.init) ?? url
        return Attachment(id: AttachmentID("sio-" + fileID), filename: json["name"]?.stringValue ?? fileID,
                          mimeType: json["mimeType"]?.stringValue ?? "application/octet-stream",
                          byteCount: json["size"]?.intValue ?? 0, sha256: json["sha256"]?.stringValue ?? "",
                          remoteLocation: url, upload: .uploaded)
    }

    /// A message object as the core's `RemoteMessage` (its `clientMessageId` is the idempotency key); nil when
    /// required fields are missing or malformed.
    public static func message(_ json: JSONValue) -> RemoteMessage? {
        guard let id = json["id"]?.stringValue, let conversation = json["conversationId"]?.stringValue,
              let sender = json["senderId"]?.stringValue,
              let created = json["createdAt"]?.stringValue.flatMap(SocketIOTimestamp.parse) else { return nil }
        let key = json["clientMessageId"]?.stringValue.flatMap { $0.isEmpty ? nil : MessageID($0) }
        var metadata: [String: String] = [:]
        for (name, value) in json["metadata"]?.members ?? [] {
            metadata[name] = value.stringValue ?? value.serialized
        }
        return RemoteMessage(remoteID: RemoteID(id), conversation: ConversationID(conversation), idempotencyKey: key,
                             sender: UserID(sender), text: json["text"]?.stringValue ?? "",
                             replyTo: json["replyTo"]?.stringValue.map(RemoteID.init),
                             attachments: (json["attachments"]?.arrayValue ?? []).compactMap(attachment),
                             metadata: metadata, sentAt: created,
                             editedAt: json["editedAt"]?.stringValue.flatMap(SocketIOTimestamp.parse),
                             deletedAt: json["deletedAt"]?.stringValue.flatMap(SocketIOTimestamp.parse))
    }

    /// A message object's `version` (its position in the server-wide sequence).
    public static func version(_ json: JSONValue) -> Int64? {
        json["version"]?.intValue ?? json["version"]?.stringValue.flatMap { Int64($0) }
    }

    /// The standing reactions of a message object (`reactions`), as active changes.
    public static func reactions(_ json: JSONValue, target: RemoteID, conversation: ConversationID) -> [RemoteReaction] {
        reactionList(json["reactions"], isActive: true, target: target, conversation: conversation)
    }

    /// The tombstones of a message object (`removedReactions`: removed or replaced pairs, `at` the removal time),
    /// as inactive changes; a pair that also stands in `reactions` is left out.
    public static func removedReactions(_ json: JSONValue, target: RemoteID, conversation: ConversationID) -> [RemoteReaction] {
        let standing = Set(reactions(json, target: target, conversation: conversation).map { [$0.user.rawValue, $0.symbol] })
        return reactionList(json["removedReactions"], isActive: false, target: target, conversation: conversation)
            .filter { !standing.contains([$0.user.rawValue, $0.symbol]) }
    }

    /// The `{"userId","emoji","at"}` items of `list` as reaction changes with `isActive`.
    private static func reactionList(_ list: JSONValue?, isActive: Bool, target: RemoteID, conversation: ConversationID)
        -> [RemoteReaction] {
        (list?.arrayValue ?? []).compactMap { item in
            guard let user = item["userId"]?.stringValue, let emoji = item["emoji"]?.stringValue else { return nil }
            let at = item["at"]?.stringValue.flatMap(SocketIOTimestamp.parse) ?? Date(timeIntervalSince1970: 0)
            return RemoteReaction(target: target, conversation: conversation, user: UserID(user), symbol: emoji,
                                  isActive: isActive, at: at)
        }
    }

    /// The receipts of a message object.
    public static func receipts(_ json: JSONValue, target: RemoteID, conversation: ConversationID) -> [RemoteReceipt] {
        (json["receipts"]?.arrayValue ?? []).compactMap { item in
            guard let user = item["userId"]?.stringValue,
                  let state = item["state"]?.stringValue.flatMap(ReceiptState.init(rawValue:)) else { return nil }
            let at = item["at"]?.stringValue.flatMap(SocketIOTimestamp.parse) ?? Date(timeIntervalSince1970: 0)
            return RemoteReceipt(target: target, conversation: conversation, user: UserID(user), state: state, at: at)
        }
    }
}

/// What one message object means as changes: the message, then its reactions (tombstones from
/// `removedReactions` as removals first, then the standing ones), then receipts.
///
/// A message object carries every (user, emoji) pair that ever stood, as standing or removed, so it maps to
/// reaction changes on its own: any mapper, fresh after a restart or not, converges by delta sync alone. The
/// mapper remembers only ordering, per message and bounded:
/// - the largest `version` seen: a copy older than that (a REST answer overtaken by a live event) reports the
///   message only;
/// - for the local user's own reactions, which the engine applies optimistically: none are reported while one of
///   the user's reaction writes on that message is in flight, nor any whose `at` is not after the newest own pair
///   in the answer to the user's last write there (late echoes of an earlier tap must not undo a later one).
final class SocketIOChangeMapper: Sendable {
    /// What the mapper remembers about one message.
    private struct Entry {
        /// The largest version seen.
        var version: Int64 = 0
        /// The local user's reaction writes in flight.
        var ownWrites = 0
        /// The newest `at` of the local user's pairs in the answer to their last write (what the engine shows).
        var ownHorizon: Date?
    }

    private let state = Locked<[String: Entry]>([:])
    private let localUser: UserID
    private let capacity: Int

    /// A mapper for `localUser` remembering at most `capacity` messages.
    init(localUser: UserID, capacity: Int = 20_000) {
        self.localUser = localUser
        self.capacity = capacity
    }

    /// The memory key of a message.
    private static func key(_ conversation: ConversationID, _ message: RemoteID) -> String {
        conversation.rawValue + "\u{1F}" + message.rawValue
    }

    /// The entry for `key`; a new one first makes room when the memory is full (forgetting an idle message).
    private func entry(_ entries: inout [String: Entry], _ key: String) -> Entry {
        if let entry = entries[key] { return entry }
        if entries.count >= capacity,
           let victim = entries.first(where: { $0.value.ownWrites == 0 })?.key ?? entries.keys.first {
            entries[victim] = nil
        }
        return Entry()
    }

    /// Marks one of the local user's reaction writes on `message` as started.
    func beginOwnWrite(_ conversation: ConversationID, _ message: RemoteID) {
        let key = Self.key(conversation, message)
        state.withLock { entries in
            var entry = entry(&entries, key)
            entry.ownWrites += 1
            entries[key] = entry
        }
    }

    /// Marks it finished; `answer` (the message the server returned, nil on failure) is what the engine now shows
    /// for the local user's reactions, so no own pair dated at or before its newest own `at` is reported again.
    func endOwnWrite(_ conversation: ConversationID, _ message: RemoteID, answer: JSONValue?) {
        let key = Self.key(conversation, message)
        let user = localUser
        let newest = answer.flatMap { json in
            (SocketIOWire.reactions(json, target: message, conversation: conversation)
             + SocketIOWire.removedReactions(json, target: message, conversation: conversation))
                .filter { $0.user == user }.map(\.at).max()
        }
        state.withLock { entries in
            var entry = entry(&entries, key)
            entry.ownWrites = max(0, entry.ownWrites - 1)
            if let newest { entry.ownHorizon = max(entry.ownHorizon ?? newest, newest) }
            entries[key] = entry
        }
    }

    /// The changes a message object stands for, or nil when it is malformed.
    func changes(for json: JSONValue) -> (message: RemoteMessage, version: Int64, changes: [RemoteChange])? {
        guard let message = SocketIOWire.message(json) else { return nil }
        let version = SocketIOWire.version(json) ?? 0
        let key = Self.key(message.conversation, message.remoteID)
        let verdict: (writing: Bool, horizon: Date?)? = state.withLock { entries in
            var entry = entry(&entries, key)
            guard entry.version <= version else { return nil }
            entry.version = version
            entries[key] = entry
            return (entry.ownWrites > 0, entry.ownHorizon)
        }
        var changes: [RemoteChange] = [.message(message)]
        guard let verdict else { return (message, version, changes) }
        let user = localUser
        let reactions = SocketIOWire.removedReactions(json, target: message.remoteID, conversation: message.conversation)
            + SocketIOWire.reactions(json, target: message.remoteID, conversation: message.conversation)
        changes += reactions.filter { reaction in
            guard reaction.user == user else { return true }
            return !verdict.writing && verdict.horizon.map { reaction.at > $0 } ?? true
        }.map(RemoteChange.reaction)
        changes += SocketIOWire.receipts(json, target: message.remoteID, conversation: message.conversation)
            .map(RemoteChange.receipt)
        return (message, version, changes)
    }
}

/// RFC 3339 timestamps as the server writes them (`2026-11-30T10:00:00.123Z`), parsed without a formatter.
public enum SocketIOTimestamp {
    /// The date of an RFC 3339 timestamp (any fraction, `Z` or a `±hh:mm` offset), or nil when malformed.
    public static func parse(_ text: String) -> Date? {
        guard let parsed = RFC3339.parse(text, options: .lowercaseDesignators) else { return nil }
        return Date(timeIntervalSince1970: Double(parsed.epochSeconds) + parsed.fractionSeconds)
    }
}
