import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// Messages with their attachments, reactions and receipts (`messages`, `attachments`, `reactions`, `receipts`).
extension SQLiteTransaction {
    // MARK: Messages

    /// The columns of `messages` in the order `decodeMessageRow` reads them.
    private static let messageColumns = """
        id, conversation, sender, text, reply_to, metadata, ts, has_server_ts, edited_at, deleted_at,
        delivery, delivery_progress, failure_reason, failure_retryable, is_outgoing
        """

    /// The message with its attachments and reactions, or nil.
    func message(_ id: MessageID) throws -> Message? {
        try perform { connection in
            try loadMessages(connection, "SELECT \(Self.messageColumns) FROM messages WHERE id = ?", [id]).first
        }
    }

    /// Inserts or replaces a message together with its attachments (in order) and reactions.
    func upsertMessage(_ message: Message) throws {
        try writeMessage(message, isNew: false)
    }

    /// Inserts a message known to be absent: no stale attachments or reactions to clear first.
    func insertNewMessage(_ message: Message) throws {
        try writeMessage(message, isNew: true)
    }

    /// Inserts the message unless a row with its ID exists (one index probe instead of a read and an insert).
    func insertMessageIfAbsent(_ message: Message) throws -> Bool {
        try writeMessage(message, isNew: true, keepExisting: true)
    }

    /// Writes the row, then its attachments and reactions; with `keepExisting` an existing row is left alone and
    /// nothing is written. Returns whether the row was written.
    @discardableResult
    private func writeMessage(_ message: Message, isNew: Bool, keepExisting: Bool = false) throws -> Bool {
        try perform { connection in
            let (_, progress, failureReason, failureRetryable) = StoreColumns.delivery(message.delivery)
            try connection.execute(keepExisting ? Self.insertMessageIfAbsentSQL : Self.upsertMessageSQL, [
                    message.id, message.conversation, message.sender, message.content.text, message.content.replyTo,
                    StoreJSON.encode(message.content.metadata), message.timestamp, message.hasServerTimestamp,
                    message.editedAt, message.deletedAt, message.delivery.storageName, progress, failureReason,
                    failureRetryable, message.isOutgoing,
                ])
            if keepExisting && connection.changes == 0 { return false }
            if !isNew { try connection.execute("DELETE FROM attachments WHERE message_id = ?", [message.id]) }
            for (position, attachment) in message.content.attachments.enumerated() {
                try insertAttachment(connection, attachment, of: message.id, position: position)
            }
            if !isNew { try connection.execute("DELETE FROM reactions WHERE message_id = ?", [message.id]) }
            for (position, reaction) in message.reactions.enumerated() {
                // A repeated (user, symbol) pair is one reaction: the first occurrence stands.
                try connection.execute("""
                    INSERT INTO reactions (message_id, user_id, symbol, at, position) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (message_id, user_id, symbol) DO NOTHING
                    """, [message.id, reaction.user, reaction.symbol, reaction.at, position])
            }
            return true
        }
    }

    /// Inserts a message row (every column bound); the two statements below add what happens on an existing ID.
    private static let insertMessageSQL = """
        INSERT INTO messages (\(messageColumns))
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        """

    /// Inserts a message row, replacing every column of an existing one.
    private static let upsertMessageSQL = insertMessageSQL + """

        ON CONFLICT (id) DO UPDATE SET
            \(StoreColumns.messageUpsertAssignments)
        """

    /// Inserts a message row unless one with its ID exists.
    private static let insertMessageIfAbsentSQL = insertMessageSQL + "\nON CONFLICT (id) DO NOTHING"

    /// Moves a message from `expected` to `state` in one statement; false when absent or in another state.
    @discardableResult
    func updateDelivery(of id: MessageID, from expected: DeliveryState, to state: DeliveryState) throws -> Bool {
        let columns = StoreColumns.delivery(expected)
        let update = StoreColumns.delivery(state)
        return try perform { connection in
            try connection.execute("""
                UPDATE messages SET delivery = ?, delivery_progress = ?, failure_reason = ?, failure_retryable = ?
                WHERE id = ? AND delivery = ? AND delivery_progress IS ? AND failure_reason IS ? AND failure_retryable IS ?
                """, [update.name, update.progress, update.reason, update.retryable,
                      id, columns.name, columns.progress, columns.reason, columns.retryable])
            return connection.changes > 0
        }
    }

    /// One statement for the whole list (the IDs passed as one JSON array): a batch's rows move without a statement
    /// run per message.
    func updateDeliveries(of ids: [MessageID], from expected: DeliveryState, to state: DeliveryState) throws -> Int {
        guard !ids.isEmpty else { return 0 }
        let columns = StoreColumns.delivery(expected)
        let update = StoreColumns.delivery(state)
        let list = JSONValue.array(ids.map { .string($0.rawValue) }).serialized
        return try perform { connection in
            try connection.execute(Self.updateDeliveriesSQL, [update.name, update.progress, update.reason, update.retryable,
                      list, columns.name, columns.progress, columns.reason, columns.retryable])
            return connection.changes
        }
    }

    /// `updateDeliveries`' statement: the listed rows are found by primary key (the JSON array's values).
    ///
    /// `CAST(? AS TEXT)`, not a bare `?`: planning this statement, SQLite compares `delivery = ?` with each term of
    /// `messages_unfinished`'s condition (`delivery = 'draft' OR …`) using the value bound then, which marks the
    /// statement to be compiled again whenever that parameter is bound anew, that is for every batch.
    static let updateDeliveriesSQL = """
        UPDATE messages SET delivery = ?, delivery_progress = ?, failure_reason = ?, failure_retryable = ?
        WHERE id IN (SELECT value FROM json_each(?)) AND delivery = CAST(? AS TEXT) AND delivery_progress IS ?
          AND failure_reason IS ? AND failure_retryable IS ?
        """

    /// Removes a message and everything hanging off it (attachments, reactions, receipts, mappings, outbox).
    func removeMessage(_ id: MessageID) throws {
        try perform { connection in
            // Attachments, reactions and receipts follow through ON DELETE CASCADE.
            try connection.execute("DELETE FROM messages WHERE id = ?", [id])
            try connection.execute("DELETE FROM id_map WHERE message_id = ?", [id])
            try connection.execute("DELETE FROM outbox WHERE message_id = ?", [id])
        }
    }

    /// Up to `limit` messages of a conversation strictly before `position` (newest first); the newest when nil.
    func messages(in conversation: ConversationID, before position: TimelinePosition?, limit: Int) throws -> [Message] {
        guard limit > 0 else { return [] }
        return try perform { connection in
            if let position {
                return try loadMessages(connection, """
                    SELECT \(Self.messageColumns) FROM messages
                    WHERE conversation = ? AND (ts, id) < (?, ?)
                    ORDER BY ts DESC, id DESC LIMIT ?
                    """, [conversation, position.micros, position.id, limit])
            }
            return try loadMessages(connection, """
                SELECT \(Self.messageColumns) FROM messages
                WHERE conversation = ?
                ORDER BY ts DESC, id DESC LIMIT ?
                """, [conversation, limit])
        }
    }

    /// Up to `limit` messages strictly after `position` (oldest first).
    func messages(in conversation: ConversationID, after position: TimelinePosition, limit: Int) throws -> [Message] {
        guard limit > 0 else { return [] }
        return try perform { connection in
            try loadMessages(connection, """
                SELECT \(Self.messageColumns) FROM messages
                WHERE conversation = ? AND (ts, id) > (?, ?)
                ORDER BY ts, id LIMIT ?
                """, [conversation, position.micros, position.id, limit])
        }
    }

    /// How many messages a conversation holds locally.
    func messageCount(in conversation: ConversationID) throws -> Int {
        try perform { connection in
            try connection.queryFirst("SELECT COUNT(*) FROM messages WHERE conversation = ?", [conversation]) {
                $0.int(at: 0)
            } ?? 0
        }
    }

    /// Every message that is not yet published or failed (draft, pending, uploading, sending, failed), oldest first.
    func unfinishedMessages() throws -> [Message] {
        try perform { connection in
            // The WHERE clause repeats the partial index `messages_unfinished` word for word so it is used.
            try loadMessages(connection, """
                SELECT \(Self.messageColumns) FROM messages
                WHERE \(SwitchboardSchema.unfinishedCondition)
                ORDER BY ts, id
                """, [])
        }
    }

    /// Runs a query over `messages` and completes each row with its attachments and reactions (one query each).
    private func loadMessages(_ connection: SQLiteConnection, _ sql: String,
                              _ arguments: [(any SQLiteBindable)?]) throws -> [Message] {
        let messages = try connection.query(sql, arguments) { try decodeMessageRow($0) }
        guard !messages.isEmpty else { return [] }
        let ids = StoreJSON.encode(messages.map(\.id.rawValue))
        let attachments = try connection.query("""
            SELECT message_id, id, filename, mime_type, byte_count, sha256, local_path, remote_location,
                   remote_parameters, upload_state, upload_progress, upload_error
            FROM attachments WHERE message_id IN (SELECT value FROM json_each(?))
            ORDER BY message_id, position
            """, [ids]) { row in (MessageID(row.string(at: 0)), try decodeAttachment(row, from: 1)) }
        let reactions = try connection.query("""
            SELECT message_id, user_id, symbol, at
            FROM reactions WHERE message_id IN (SELECT value FROM json_each(?))
            ORDER BY message_id, position
            """, [ids]) { row in
                (MessageID(row.string(at: 0)),
                 Reaction(user: UserID(row.string(at: 1)), symbol: row.string(at: 2), at: row.date(at: 3)))
            }
        return StoreColumns.completing(messages, attachments: attachments, reactions: reactions)
    }

    /// Decodes one `messages` row selected with `messageColumns` (without attachments and reactions).
    private func decodeMessageRow(_ row: SQLiteStatement) throws -> Message {
        let id = MessageID(row.string(at: 0))
        let deliveryName = row.string(at: 10)
        guard let delivery = DeliveryState(storageName: deliveryName, progress: row.optionalDouble(at: 11) ?? 0,
                                           reason: row.optionalString(at: 12),
                                           retryable: row.optionalBool(at: 13) ?? true) else {
            throw corruption("message \(id) has an unknown delivery state '\(deliveryName)'")
        }
        return Message(
            id: id,
            conversation: ConversationID(row.string(at: 1)),
            sender: UserID(row.string(at: 2)),
            content: MessageContent(text: row.string(at: 3), replyTo: row.optionalString(at: 4).map(MessageID.init),
                                    metadata: try decodeDictionary(row.string(at: 5))),
            timestamp: row.date(at: 6),
            hasServerTimestamp: row.bool(at: 7),
            editedAt: row.optionalDate(at: 8),
            deletedAt: row.optionalDate(at: 9),
            delivery: delivery,
            isOutgoing: row.bool(at: 14))
    }

    // MARK: Attachments

    /// Inserts one attachment row of `message` at `position`.
    private func insertAttachment(_ connection: SQLiteConnection, _ attachment: Attachment, of message: MessageID,
                                  position: Int) throws {
        let (state, progress, error) = StoreColumns.upload(attachment.upload)
        try connection.execute("""
            INSERT INTO attachments (message_id, id, position, filename, mime_type, byte_count, sha256, local_path,
                                     remote_location, remote_parameters, upload_state, upload_progress, upload_error)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [
                message, attachment.id, position, attachment.filename, attachment.mimeType, attachment.byteCount,
                attachment.sha256, attachment.localPath, attachment.remoteLocation,
                StoreJSON.encode(attachment.remoteParameters), state, progress, error,
            ])
    }

    /// Replaces one attachment's row (upload state, remote location) of `message`.
    func updateAttachment(_ attachment: Attachment, of message: MessageID) throws {
        try perform { connection in
            let (state, progress, error) = StoreColumns.upload(attachment.upload)
            try connection.execute("""
                UPDATE attachments SET filename = ?, mime_type = ?, byte_count = ?, sha256 = ?, local_path = ?,
                    remote_location = ?, remote_parameters = ?, upload_state = ?, upload_progress = ?, upload_error = ?
                WHERE message_id = ? AND id = ?
                """, [
                    attachment.filename, attachment.mimeType, attachment.byteCount, attachment.sha256,
                    attachment.localPath, attachment.remoteLocation, StoreJSON.encode(attachment.remoteParameters),
                    state, progress, error, message, attachment.id,
                ])
            guard connection.changes == 0 else { return }
            let messageExists = try connection.queryFirst("SELECT 1 FROM messages WHERE id = ?", [message]) { _ in
                true
            } ?? false
            throw StoreColumns.attachmentMissing(attachment.id, of: message, messageExists: messageExists)
        }
    }

    /// Decodes an attachment whose columns start at `first` in the order of `loadMessages`.
    private func decodeAttachment(_ row: SQLiteStatement, from first: Int32) throws -> Attachment {
        let id = AttachmentID(row.string(at: first))
        let stateName = row.string(at: first + 8)
        guard let upload = UploadState(storageName: stateName, progress: row.optionalDouble(at: first + 9) ?? 0,
                                       reason: row.optionalString(at: first + 10)) else {
            throw corruption("attachment \(id) has an unknown upload state '\(stateName)'")
        }
        return Attachment(
            id: id,
            filename: row.string(at: first + 1),
            mimeType: row.string(at: first + 2),
            byteCount: row.int64(at: first + 3),
            sha256: row.string(at: first + 4),
            localPath: row.optionalString(at: first + 5),
            remoteLocation: row.optionalString(at: first + 6),
            remoteParameters: try decodeDictionary(row.string(at: first + 7)),
            upload: upload)
    }

    // MARK: Receipts

    /// Records or replaces the receipt of `(message, user)`; throws `unknownMessage` when the message is not stored.
    func upsertReceipt(_ receipt: Receipt) throws {
        try perform { connection in
            try connection.execute("""
                INSERT INTO receipts (message_id, user_id, state, at) VALUES (?, ?, ?, ?)
                ON CONFLICT (message_id, user_id) DO UPDATE SET state = excluded.state, at = excluded.at
                """, [receipt.message, receipt.user, receipt.state.rawValue, receipt.at])
        }
    }

    /// Receipts of a message, oldest first.
    func receipts(of message: MessageID) throws -> [Receipt] {
        try perform { connection in
            try connection.query("""
                SELECT user_id, state, at FROM receipts WHERE message_id = ? ORDER BY at, user_id
                """, [message]) { row in
                let stateName = row.string(at: 1)
                guard let state = ReceiptState(rawValue: stateName) else {
                    throw corruption("a receipt of message \(message) has an unknown state '\(stateName)'")
                }
                return Receipt(message: message, user: UserID(row.string(at: 0)), state: state, at: row.date(at: 2))
            }
        }
    }

    // MARK: Helpers

    /// Decodes stored metadata or remote parameters, reporting anything but a JSON object of strings as corruption.
    private func decodeDictionary(_ text: String) throws -> [String: String] {
        guard let dictionary = StoreJSON.decodeStringDictionary(text) else {
            throw corruption("stored JSON cannot be decoded as \([String: String].self)")
        }
        return dictionary
    }
}
