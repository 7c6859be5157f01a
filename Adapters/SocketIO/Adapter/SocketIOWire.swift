import Foundation
import Synchronization
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

    /// The standing reactions of a message object.
    public static func reactions(_ json: JSONValue, target: RemoteID, conversation: ConversationID) -> [RemoteReaction] {
        (json["reactions"]?.arrayValue ?? []).compactMap { item in
            guard let user = item["userId"]?.stringValue, let emoji = item["emoji"]?.stringValue else { return nil }
            let at = item["at"]?.stringValue.flatMap(SocketIOTimestamp.parse) ?? Date(timeIntervalSince1970: 0)
            return RemoteReaction(target: target, conversation: conversation, user: UserID(user), symbol: emoji,
                                  isActive: true, at: at)
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

/// What one message object means as changes: the message, then reaction changes (removals first), then receipts.
///
/// The wire carries a message's reactions as a set, the core as add/remove changes, so the mapper remembers the
/// last set (and version) it reported per message and reports removals against it. A copy older than the last one
/// seen (a REST answer overtaken by a live event) reports the message only. The local user's own reactions are
/// applied optimistically by the engine, so for them only real differences are reported, and none while one of
/// the user's own reaction writes on that message is in flight or from copies older than its answer (late echoes
/// of an earlier tap must not undo a later one). The memory is bounded; a message it forgot (or never saw, after
/// a restart) reports its standing reactions but no removals.
final class SocketIOChangeMapper: Sendable {
    private struct Seen {
        var version: Int64
        var reactions: Set<ReactionKey>
    }

    private struct ReactionKey: Hashable {
        var user: String
        var symbol: String
    }

    private struct OwnWrites {
        var inFlight = 0
        var floor: Int64 = 0
    }

    private struct State {
        var seen: [String: Seen] = [:]
        var own: [String: OwnWrites] = [:]
    }

    private let state = Mutex(State())
    private let localUser: UserID
    private let capacity: Int

    /// A mapper for `localUser` remembering at most `capacity` messages.
    init(localUser: UserID, capacity: Int = 20_000) {
        self.localUser = localUser
        self.capacity = capacity
    }

    private static func key(_ conversation: ConversationID, _ message: RemoteID) -> String {
        conversation.rawValue + "\u{1F}" + message.rawValue
    }

    /// Marks one of the local user's reaction writes on `message` as started.
    func beginOwnWrite(_ conversation: ConversationID, _ message: RemoteID) {
        state.withLock { $0.own[Self.key(conversation, message), default: OwnWrites()].inFlight += 1 }
    }

    /// Marks it finished; `answer` (the message the server returned, nil on failure) is what the engine now shows
    /// for the local user's reactions.
    func endOwnWrite(_ conversation: ConversationID, _ message: RemoteID, answer: JSONValue?) {
        let key = Self.key(conversation, message)
        let user = localUser.rawValue
        let mine = answer.map { json in
            Set(SocketIOWire.reactions(json, target: message, conversation: conversation)
                .filter { $0.user.rawValue == user }.map { ReactionKey(user: user, symbol: $0.symbol) })
        }
        let version = answer.flatMap(SocketIOWire.version)
        state.withLock { state in
            var own = state.own[key] ?? OwnWrites()
            own.inFlight = max(0, own.inFlight - 1)
            if let version { own.floor = max(own.floor, version) }
            state.own[key] = own.inFlight == 0 && own.floor == 0 ? nil : own
            guard let mine else { return }
            var seen = state.seen[key] ?? Seen(version: 0, reactions: [])
            seen.reactions = seen.reactions.filter { $0.user != user }.union(mine)
            state.seen[key] = seen
        }
    }

    /// The changes a message object stands for, or nil when it is malformed.
    func changes(for json: JSONValue) -> (message: RemoteMessage, version: Int64, changes: [RemoteChange])? {
        guard let message = SocketIOWire.message(json) else { return nil }
        let version = SocketIOWire.version(json) ?? 0
        let standing = SocketIOWire.reactions(json, target: message.remoteID, conversation: message.conversation)
        let user = localUser.rawValue
        let current = Set(standing.map { ReactionKey(user: $0.user.rawValue, symbol: $0.symbol) })
        let key = Self.key(message.conversation, message.remoteID)
        let diff: (removed: [ReactionKey], added: Set<ReactionKey>)? = state.withLock { state in
            let previous = state.seen[key]
            if let previous, previous.version > version { return nil }
            if previous == nil, state.seen.count >= capacity, let victim = state.seen.keys.first {
                state.seen[victim] = nil
                state.own[victim] = nil
            }
            let own = state.own[key] ?? OwnWrites()
            let skipMine = own.inFlight > 0 || version < own.floor
            let before = previous?.reactions ?? []
            var next = current.filter { $0.user != user }
            var removed = before.filter { $0.user != user }.subtracting(next)
            var added = next
            if skipMine {
                next.formUnion(before.filter { $0.user == user })
            } else {
                let mineBefore = before.filter { $0.user == user }, mineNow = current.filter { $0.user == user }
                removed.formUnion(mineBefore.subtracting(mineNow))
                added.formUnion(mineNow.subtracting(mineBefore))
                next.formUnion(mineNow)
            }
            state.seen[key] = Seen(version: max(previous?.version ?? 0, version), reactions: next)
            return (removed.sorted { ($0.user, $0.symbol) < ($1.user, $1.symbol) }, added)
        }
        var changes: [RemoteChange] = [.message(message)]
        guard let diff else { return (message, version, changes) }
        let now = Date()
        for gone in diff.removed {
            changes.append(.reaction(RemoteReaction(target: message.remoteID, conversation: message.conversation,
                                                    user: UserID(gone.user), symbol: gone.symbol, isActive: false, at: now)))
        }
        changes += standing.filter { diff.added.contains(ReactionKey(user: $0.user.rawValue, symbol: $0.symbol)) }
            .map(RemoteChange.reaction)
        changes += SocketIOWire.receipts(json, target: message.remoteID, conversation: message.conversation)
            .map(RemoteChange.receipt)
        return (message, version, changes)
    }
}

/// RFC 3339 timestamps as the server writes them (`2026-11-30T10:00:00.123Z`), parsed without a formatter.
public enum SocketIOTimestamp {
    /// The date of an RFC 3339 timestamp (any fraction, `Z` or a `±hh:mm` offset), or nil when malformed.
    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ count: Int) -> Int? {
            guard index + count <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[index..<index + count] {
                guard (48...57).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2),
              expect("Tt "), let hour = number(2), expect(":"), let minute = number(2), expect(":"),
              let second = number(2), (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60,
              second <= 60 else { return nil }
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, (48...57).contains(bytes[index]) {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offset = 0
        if expect("Zz") {
            offset = 0
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = number(2), expect(":"), let minutes = number(2) else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
