import Foundation
import SwitchboardCore

/// What the SQLite and PostgreSQL stores write and report alike, kept once so the two cannot drift apart.
package enum StoreColumns {
    /// The stored columns of an upload state: name, progress while uploading, reason when failed.
    package static func upload(_ state: UploadState) -> (String, Double?, String?) {
        switch state {
        case .uploading(let progress): (state.storageName, progress, nil)
        case .failed(let reason): (state.storageName, nil, reason)
        case .pending, .uploaded: (state.storageName, nil, nil)
        }
    }

    /// The stored columns of a delivery state (name, upload progress, failure reason and retryability).
    package static func delivery(_ state: DeliveryState)
        -> (name: String, progress: Double?, reason: String?, retryable: Bool?) {
        switch state {
        case .uploading(let progress): (state.storageName, progress, nil, nil)
        case .failed(let reason, let retryable): (state.storageName, nil, reason, retryable)
        default: (state.storageName, nil, nil, nil)
        }
    }

    /// The `conflict` error of `insertMapping` when `existing` rows (not just `mapping` itself) hold either side.
    package static func mappingConflict(_ mapping: IDMapping, existing: [IDMapping]) -> SwitchboardError {
        let described = existing.map {
            "\($0.backend)/\($0.remoteID) part \($0.part) → \($0.messageID) in \($0.conversation)"
        }
        return SwitchboardError(.conflict, """
            cannot map \(mapping.backend)/\(mapping.remoteID) part \(mapping.part) → \(mapping.messageID) \
            in \(mapping.conversation): already mapped as \(described.joined(separator: "; "))
            """)
    }

    /// The error of `updateAttachment` when no row changed: the message or only the attachment is missing.
    package static func attachmentMissing(_ attachment: AttachmentID, of message: MessageID,
                                          messageExists: Bool) -> SwitchboardError {
        guard messageExists else {
            return SwitchboardError(.unknownMessage, "no message \(message) is stored")
        }
        return SwitchboardError(.invalidArgument, "message \(message) has no attachment \(attachment)")
    }

    /// The SET clause of the outbox upsert: every column but the key takes the new entry's value.
    package static let outboxUpsertConflict = """
        ON CONFLICT (message_id) DO UPDATE SET
            backend = excluded.backend, conversation = excluded.conversation, prepared = excluded.prepared,
            no_send = excluded.no_send, attempts = excluded.attempts,
            next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error,
            status = excluded.status, created_at = excluded.created_at
        """

    /// The assignments of the message upsert: every `messages` column both stores have, but the key, takes the new
    /// row's value.
    package static let messageUpsertAssignments = """
        conversation = excluded.conversation, sender = excluded.sender, text = excluded.text,
        reply_to = excluded.reply_to, metadata = excluded.metadata, ts = excluded.ts,
        has_server_ts = excluded.has_server_ts, edited_at = excluded.edited_at,
        deleted_at = excluded.deleted_at, delivery = excluded.delivery,
        delivery_progress = excluded.delivery_progress, failure_reason = excluded.failure_reason,
        failure_retryable = excluded.failure_retryable, is_outgoing = excluded.is_outgoing
        """

    /// `messages` completed with their attachments and reactions, given as `(message, item)` rows in display order.
    package static func completing(_ messages: [Message], attachments: [(MessageID, Attachment)],
                                   reactions: [(MessageID, Reaction)]) -> [Message] {
        var attachmentsOf: [MessageID: [Attachment]] = [:]
        for (messageID, attachment) in attachments { attachmentsOf[messageID, default: []].append(attachment) }
        var reactionsOf: [MessageID: [Reaction]] = [:]
        for (messageID, reaction) in reactions { reactionsOf[messageID, default: []].append(reaction) }
        var messages = messages
        for index in messages.indices {
            messages[index].content.attachments = attachmentsOf[messages[index].id] ?? []
            messages[index].reactions = reactionsOf[messages[index].id] ?? []
        }
        return messages
    }
}
