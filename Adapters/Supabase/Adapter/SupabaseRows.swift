import Foundation
import SupabaseProtocol
import SwitchboardCore

/// Translates between the chat schema's rows (as PostgREST and realtime send them) and the core model.
public enum SupabaseRows {
    /// The row key of a message ID: the `MessageID` itself when it is a UUID, else a UUIDv5 of it.
    public static func rowID(for id: MessageID) -> String {
        if let canonical = UUIDText.canonical(id.rawValue) { return canonical }
        return UUIDv5.make(namespace: UUIDv5.switchboardNamespace, name: "supabase-key\u{1F}" + id.rawValue)
    }

    /// `value` as a double-quoted filter operand (`\\` and `\"` escaped), as PostgREST and realtime filters read it.
    public static func quotedFilterValue(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The metadata key that carries a non-UUID idempotency key, so receivers learn the original.
    public static let keyMetadata = "switchboard.key"

    /// The JSON row `POST /rest/v1/messages` inserts for `message`.
    public static func messageRow(_ message: OutgoingMessage) -> JSONValue {
        var metadata = message.metadata
        let id = rowID(for: message.id)
        if id != message.id.rawValue { metadata[keyMetadata] = message.id.rawValue }
        // No attachments and no reply leave those columns to their defaults (`[]` and null): a bulk insert of plain
        // messages then has PostgreSQL read five columns per row, not seven.
        var row: [(key: String, value: JSONValue)] = [
            (key: "id", value: .string(id)),
            (key: "conversation_id", value: .string(message.conversation.rawValue)),
            (key: "sender_id", value: .string(message.sender.rawValue)),
            (key: "body", value: .string(message.text)),
        ]
        if !message.attachments.isEmpty {
            row.append((key: "attachments", value: .array(message.attachments.map(attachmentJSON))))
        }
        row.append((key: "metadata", value: .object(metadata.mapValues { JSONValue.string($0) })))
        if let replyTo = message.replyTo { row.append((key: "reply_to", value: .string(replyTo.rawValue))) }
        return .object(row)
    }

    /// An attachment as the message row's `attachments` array holds it.
    public static func attachmentJSON(_ attachment: Attachment) -> JSONValue {
        var members: [(key: String, value: JSONValue)] = [
            (key: "id", value: .string(attachment.id.rawValue)),
            (key: "filename", value: .string(attachment.filename)),
            (key: "mime_type", value: .string(attachment.mimeType)),
            (key: "size", value: .int(attachment.byteCount)),
            (key: "sha256", value: .string(attachment.sha256)),
        ]
        if let location = attachment.remoteLocation { members.append((key: "path", value: .string(location))) }
        return .object(members)
    }

    /// An attachment from the message row's JSON, or nil when it lacks the required fields.
    public static func attachment(_ json: JSONValue) -> Attachment? {
        guard let id = json["id"]?.stringValue, let filename = json["filename"]?.stringValue else { return nil }
        let path = json["path"]?.stringValue
        return Attachment(id: AttachmentID(id), filename: filename,
                          mimeType: json["mime_type"]?.stringValue ?? "application/octet-stream",
                          byteCount: json["size"]?.intValue ?? 0, sha256: json["sha256"]?.stringValue ?? "",
                          remoteLocation: path, upload: path == nil ? .failed(reason: "not uploaded") : .uploaded)
    }

    /// A message row as the core's `RemoteMessage`; nil when required columns are missing or malformed.
    public static func message(_ row: JSONValue) -> RemoteMessage? {
        guard let id = row["id"]?.stringValue, let conversation = row["conversation_id"]?.stringValue,
              let sender = row["sender_id"]?.stringValue,
              let createdText = row["created_at"]?.stringValue, let created = SupabaseTimestamp.parse(createdText)
        else { return nil }
        var metadata: [String: String] = [:]
        for (key, value) in row["metadata"]?.members ?? [] {
            metadata[key] = value.stringValue ?? value.serialized
        }
        // A carried key counts only when the row ID follows from it (the key itself, or its UUIDv5 for a non-UUID
        // key): anyone may write metadata, but only one row can have that ID, so a key added to another row (at
        // insert, or later by PATCH) is ignored and the row speaks for itself.
        let claimed = metadata.removeValue(forKey: keyMetadata).flatMap { $0.isEmpty ? nil : MessageID($0) }
        let key = claimed.flatMap { rowID(for: $0) == id.lowercased() ? $0 : nil } ?? MessageID(id)
        return RemoteMessage(remoteID: RemoteID(id), conversation: ConversationID(conversation), idempotencyKey: key,
                             sender: UserID(sender), text: row["body"]?.stringValue ?? "",
                             replyTo: row["reply_to"]?.stringValue.map(RemoteID.init),
                             attachments: (row["attachments"]?.arrayValue ?? []).compactMap(attachment),
                             metadata: metadata, sentAt: created,
                             editedAt: row["edited_at"]?.stringValue.flatMap(SupabaseTimestamp.parse),
                             deletedAt: row["deleted_at"]?.stringValue.flatMap(SupabaseTimestamp.parse))
    }

    /// A reaction row as the core's `RemoteReaction`.
    public static func reaction(_ row: JSONValue) -> RemoteReaction? {
        guard let message = row["message_id"]?.stringValue, let conversation = row["conversation_id"]?.stringValue,
              let user = row["user_id"]?.stringValue, let symbol = row["symbol"]?.stringValue else { return nil }
        let at = row["created_at"]?.stringValue.flatMap(SupabaseTimestamp.parse) ?? Date()
        return RemoteReaction(target: RemoteID(message), conversation: ConversationID(conversation), user: UserID(user),
                              symbol: symbol, isActive: row["active"]?.boolValue ?? true, at: at)
    }

    /// A receipt row as the core's `RemoteReceipt`.
    public static func receipt(_ row: JSONValue) -> RemoteReceipt? {
        guard let message = row["message_id"]?.stringValue, let conversation = row["conversation_id"]?.stringValue,
              let user = row["user_id"]?.stringValue, let stateText = row["state"]?.stringValue else { return nil }
        let state: ReceiptState = stateText == "read" ? .read : .delivered
        let at = row["at"]?.stringValue.flatMap(SupabaseTimestamp.parse) ?? Date()
        return RemoteReceipt(target: RemoteID(message), conversation: ConversationID(conversation), user: UserID(user),
                             state: state, at: at)
    }

    /// The change a row of `table` stands for, or nil for other tables or malformed rows.
    public static func change(table: String, row: JSONValue) -> RemoteChange? {
        switch table {
        case "messages": return message(row).map(RemoteChange.message)
        case "reactions": return reaction(row).map(RemoteChange.reaction)
        case "receipts": return receipt(row).map(RemoteChange.receipt)
        default: return nil
        }
    }
}
