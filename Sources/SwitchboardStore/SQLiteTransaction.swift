import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// The `StoreTransaction` of `SQLiteStore`: every call runs on the connection the store lent for one transaction.
///
/// The store ends the transaction when its body returns; later calls throw instead of touching the connection.
final class SQLiteTransaction: StoreTransaction {
    /// The lent connection; nil once the transaction has ended.
    private var connection: SQLiteConnection?
    /// The database file, for error messages.
    private let path: String
    /// Whether writes are refused (a `read` transaction).
    private let isReadOnly: Bool

    /// Prepares a transaction on `connection` (not yet begun) for the database at `path`.
    init(connection: SQLiteConnection, path: String, isReadOnly: Bool) {
        self.connection = connection
        self.path = path
        self.isReadOnly = isReadOnly
    }

    // MARK: Transaction control

    /// Opens the transaction: `BEGIN DEFERRED` with writes refused when read-only, else `BEGIN IMMEDIATE`.
    func begin() throws {
        do {
            try perform { connection in
                try connection.execute(isReadOnly ? "BEGIN DEFERRED" : "BEGIN IMMEDIATE")
                connection.refusesWrites = isReadOnly
            }
        } catch {
            end()
            throw error
        }
    }

    /// Commits and ends the transaction; when COMMIT fails the transaction stays open for `rollback`.
    func commit() throws {
        try perform { try $0.execute("COMMIT") }
        end()
    }

    /// Rolls back whatever is still open and ends the transaction; never throws.
    func rollback() {
        // SQLite may already have rolled back (for example after SQLITE_FULL); only roll back what is open.
        if let connection, !connection.isAutocommit { try? connection.execute("ROLLBACK") }
        end()
    }

    /// Restores the connection's write access and drops the reference to it: later calls throw.
    private func end() {
        connection?.refusesWrites = false
        connection = nil
    }

    /// Runs `work` on the connection, turning SQLite failures into `SwitchboardError`s.
    func perform<T>(_ work: (SQLiteConnection) throws -> T) throws -> T {
        guard let connection else {
            throw SwitchboardError(.storage, "a store transaction was used after it ended")
        }
        do {
            return try work(connection)
        } catch let error as SQLiteError {
            throw error.switchboardError(path: path)
        }
    }

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
            let (_, progress, failureReason, failureRetryable) = Self.deliveryColumns(message.delivery)
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
            conversation = excluded.conversation, sender = excluded.sender, text = excluded.text,
            reply_to = excluded.reply_to, metadata = excluded.metadata, ts = excluded.ts,
            has_server_ts = excluded.has_server_ts, edited_at = excluded.edited_at,
            deleted_at = excluded.deleted_at, delivery = excluded.delivery,
            delivery_progress = excluded.delivery_progress, failure_reason = excluded.failure_reason,
            failure_retryable = excluded.failure_retryable, is_outgoing = excluded.is_outgoing
        """

    /// Inserts a message row unless one with its ID exists.
    private static let insertMessageIfAbsentSQL = insertMessageSQL + "\nON CONFLICT (id) DO NOTHING"

    /// Moves a message from `expected` to `state` in one statement; false when absent or in another state.
    @discardableResult
    func updateDelivery(of id: MessageID, from expected: DeliveryState, to state: DeliveryState) throws -> Bool {
        let columns = Self.deliveryColumns(expected)
        let update = Self.deliveryColumns(state)
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
        let columns = Self.deliveryColumns(expected)
        let update = Self.deliveryColumns(state)
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

    /// The stored columns of a delivery state (name, upload progress, failure reason and retryability).
    private static func deliveryColumns(_ state: DeliveryState) -> (name: String, progress: Double?, reason: String?, retryable: Bool?) {
        switch state {
        case .uploading(let progress): (state.storageName, progress, nil, nil)
        case .failed(let reason, let retryable): (state.storageName, nil, reason, retryable)
        default: (state.storageName, nil, nil, nil)
        }
    }

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
        var messages = try connection.query(sql, arguments) { try decodeMessageRow($0) }
        guard !messages.isEmpty else { return [] }
        let ids = StoreJSON.encode(messages.map(\.id.rawValue))
        var attachments: [MessageID: [Attachment]] = [:]
        for (messageID, attachment) in try connection.query("""
            SELECT message_id, id, filename, mime_type, byte_count, sha256, local_path, remote_location,
                   remote_parameters, upload_state, upload_progress, upload_error
            FROM attachments WHERE message_id IN (SELECT value FROM json_each(?))
            ORDER BY message_id, position
            """, [ids], { row in (MessageID(row.string(at: 0)), try decodeAttachment(row, from: 1)) }) {
            attachments[messageID, default: []].append(attachment)
        }
        var reactions: [MessageID: [Reaction]] = [:]
        for (messageID, reaction) in try connection.query("""
            SELECT message_id, user_id, symbol, at
            FROM reactions WHERE message_id IN (SELECT value FROM json_each(?))
            ORDER BY message_id, position
            """, [ids], { row in
                (MessageID(row.string(at: 0)),
                 Reaction(user: UserID(row.string(at: 1)), symbol: row.string(at: 2), at: row.date(at: 3)))
            }) {
            reactions[messageID, default: []].append(reaction)
        }
        for index in messages.indices {
            messages[index].content.attachments = attachments[messages[index].id] ?? []
            messages[index].reactions = reactions[messages[index].id] ?? []
        }
        return messages
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
        let (state, progress, error) = Self.uploadColumns(attachment.upload)
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
            let (state, progress, error) = Self.uploadColumns(attachment.upload)
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
            guard messageExists else {
                throw SwitchboardError(.unknownMessage, "no message \(message) is stored")
            }
            throw SwitchboardError(.invalidArgument, "message \(message) has no attachment \(attachment.id)")
        }
    }

    /// The stored columns of an upload state: name, progress while uploading, reason when failed.
    private static func uploadColumns(_ state: UploadState) -> (String, Double?, String?) {
        switch state {
        case .uploading(let progress): (state.storageName, progress, nil)
        case .failed(let reason): (state.storageName, nil, reason)
        case .pending, .uploaded: (state.storageName, nil, nil)
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

    // MARK: ID map

    /// Records a mapping in one statement unless either unique side is taken; true when inserted.
    func insertMappingIfAbsent(_ mapping: IDMapping) throws -> Bool {
        try perform { connection in
            try connection.execute("""
                INSERT INTO id_map (message_id, backend, conversation, remote_id, part) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """, [mapping.messageID, mapping.backend, mapping.conversation, mapping.remoteID, mapping.part])
            return connection.changes > 0
        }
    }

    /// Records a mapping; a conflicting row on either unique side throws `conflict`; an identical row is a no-op.
    func insertMapping(_ mapping: IDMapping) throws {
        try perform { connection in
            let existing = try connection.query("""
                SELECT message_id, backend, conversation, remote_id, part FROM id_map
                WHERE (backend = ? AND remote_id = ?) OR (message_id = ? AND backend = ? AND part = ?)
                """, [mapping.backend, mapping.remoteID, mapping.messageID, mapping.backend, mapping.part]) {
                Self.decodeMapping($0)
            }
            if existing.isEmpty {
                try connection.execute("""
                    INSERT INTO id_map (message_id, backend, conversation, remote_id, part) VALUES (?, ?, ?, ?, ?)
                    """, [mapping.messageID, mapping.backend, mapping.conversation, mapping.remoteID, mapping.part])
                return
            }
            if existing == [mapping] { return }
            let described = existing.map {
                "\($0.backend)/\($0.remoteID) part \($0.part) → \($0.messageID) in \($0.conversation)"
            }
            throw SwitchboardError(.conflict, """
                cannot map \(mapping.backend)/\(mapping.remoteID) part \(mapping.part) → \(mapping.messageID) \
                in \(mapping.conversation): already mapped as \(described.joined(separator: "; "))
                """)
        }
    }

    /// The message a backend ID maps to.
    func messageOwner(_ id: MessageID) throws -> MessageOwner? {
        try perform { connection in
            try connection.queryFirst("SELECT conversation, sender FROM messages WHERE id = ?", [id]) {
                MessageOwner(conversation: ConversationID($0.string(at: 0)), sender: UserID($0.string(at: 1)))
            }
        }
    }

    func messageID(backend: BackendID, remoteID: RemoteID) throws -> MessageID? {
        try perform { connection in
            try connection.queryFirst("SELECT message_id FROM id_map WHERE backend = ? AND remote_id = ?",
                                      [backend, remoteID]) { MessageID($0.string(at: 0)) }
        }
    }

    /// The backend ID of a message part.
    func remoteID(of message: MessageID, backend: BackendID, part: Int) throws -> RemoteID? {
        try perform { connection in
            try connection.queryFirst("""
                SELECT remote_id FROM id_map WHERE message_id = ? AND backend = ? AND part = ?
                """, [message, backend, part]) { RemoteID($0.string(at: 0)) }
        }
    }

    /// All mappings of a message, by backend then part.
    func mappings(of message: MessageID) throws -> [IDMapping] {
        try perform { connection in
            try connection.query("""
                SELECT message_id, backend, conversation, remote_id, part FROM id_map
                WHERE message_id = ? ORDER BY backend, part
                """, [message]) { Self.decodeMapping($0) }
        }
    }

    /// Decodes an `id_map` row selected as message_id, backend, conversation, remote_id, part.
    private static func decodeMapping(_ row: SQLiteStatement) -> IDMapping {
        IDMapping(messageID: MessageID(row.string(at: 0)), backend: BackendID(row.string(at: 1)),
                  conversation: ConversationID(row.string(at: 2)), remoteID: RemoteID(row.string(at: 3)),
                  part: row.int(at: 4))
    }

    // MARK: Outbox

    /// The columns of `outbox` in the order `decodeOutbox` reads them.
    private static let outboxColumns = """
        message_id, backend, conversation, prepared, no_send, attempts, next_attempt_at, last_error, status, created_at
        """

    /// Inserts or replaces an outbox entry.
    func upsertOutbox(_ entry: OutboxEntry) throws {
        try perform { connection in
            let prepared = entry.prepared.map(StoreJSON.encode)
            try connection.execute("""
                INSERT INTO outbox (\(Self.outboxColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (message_id) DO UPDATE SET
                    backend = excluded.backend, conversation = excluded.conversation, prepared = excluded.prepared,
                    no_send = excluded.no_send, attempts = excluded.attempts,
                    next_attempt_at = excluded.next_attempt_at, last_error = excluded.last_error,
                    status = excluded.status, created_at = excluded.created_at
                """, [
                    entry.messageID, entry.backend, entry.conversation, prepared, entry.noSend, entry.attempts,
                    entry.nextAttemptAt, entry.lastError, entry.status.rawValue, entry.createdAt,
                ])
        }
    }

    /// The outbox entry of a message.
    func outboxEntry(_ message: MessageID) throws -> OutboxEntry? {
        try perform { connection in
            try connection.queryFirst("SELECT \(Self.outboxColumns) FROM outbox WHERE message_id = ?", [message]) {
                try decodeOutbox($0)
            }
        }
    }

    /// Removes a message's outbox entry.
    func removeOutbox(_ message: MessageID) throws {
        try perform { connection in
            try connection.execute("DELETE FROM outbox WHERE message_id = ?", [message])
        }
    }

    /// Queued, non-noSend entries of `backend` due at `now`, oldest created first.
    func dueOutbox(backend: BackendID, now: Date, limit: Int) throws -> [OutboxEntry] {
        guard limit > 0 else { return [] }
        return try perform { connection in
            try connection.query("""
                SELECT \(Self.outboxColumns) FROM outbox
                WHERE backend = ? AND status = ? AND no_send = 0 AND next_attempt_at <= ?
                ORDER BY created_at, message_id LIMIT ?
                """, [backend, OutboxStatus.queued.rawValue, now, limit]) { try decodeOutbox($0) }
        }
    }

    /// Every outbox entry of `backend`, oldest created first.
    func outbox(backend: BackendID) throws -> [OutboxEntry] {
        try perform { connection in
            try connection.query("""
                SELECT \(Self.outboxColumns) FROM outbox WHERE backend = ? ORDER BY created_at, message_id
                """, [backend]) { try decodeOutbox($0) }
        }
    }

    /// Decodes an `outbox` row selected with `outboxColumns`.
    private func decodeOutbox(_ row: SQLiteStatement) throws -> OutboxEntry {
        let messageID = MessageID(row.string(at: 0))
        let statusName = row.string(at: 8)
        guard let status = OutboxStatus(rawValue: statusName) else {
            throw corruption("the outbox entry of \(messageID) has an unknown status '\(statusName)'")
        }
        var prepared: PreparedMessage?
        if let data = row.optionalData(at: 3) {
            guard let decoded = StoreJSON.decodePreparedMessage(data) else {
                throw corruption("the prepared request of outbox entry \(messageID) cannot be decoded")
            }
            prepared = decoded
        }
        return OutboxEntry(
            messageID: messageID, backend: BackendID(row.string(at: 1)), conversation: ConversationID(row.string(at: 2)),
            prepared: prepared, noSend: row.bool(at: 4), attempts: row.int(at: 5), nextAttemptAt: row.date(at: 6),
            lastError: row.optionalString(at: 7), status: status, createdAt: row.date(at: 9))
    }

    // MARK: Cursors

    /// A stored sync cursor.
    func cursor(conversation: ConversationID, backend: BackendID, kind: CursorKind) throws -> Cursor? {
        try perform { connection in
            try connection.queryFirst("""
                SELECT cursor FROM sync_cursors WHERE conversation = ? AND backend = ? AND kind = ?
                """, [conversation, backend, kind.rawValue]) { Cursor($0.string(at: 0)) }
        }
    }

    /// Stores (or clears with nil) a sync cursor.
    func setCursor(_ cursor: Cursor?, conversation: ConversationID, backend: BackendID, kind: CursorKind) throws {
        try perform { connection in
            guard let cursor else {
                try connection.execute("""
                    DELETE FROM sync_cursors WHERE conversation = ? AND backend = ? AND kind = ?
                    """, [conversation, backend, kind.rawValue])
                return
            }
            try connection.execute("""
                INSERT INTO sync_cursors (conversation, backend, kind, cursor, updated_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT (conversation, backend, kind) DO UPDATE SET
                    cursor = excluded.cursor, updated_at = excluded.updated_at
                """, [conversation, backend, kind.rawValue, cursor, Date()])
        }
    }

    // MARK: Pending operations

    /// Queues an operation waiting for a mapping; returns its row id (the operation's own `id` is ignored).
    @discardableResult func enqueuePending(_ operation: PendingOperation) throws -> Int64 {
        try perform { connection in
            try connection.execute("""
                INSERT INTO pending_operations (wait_key, kind, payload, created_at) VALUES (?, ?, ?, ?)
                """, [operation.waitKey, operation.kind, operation.payload, operation.createdAt])
            return connection.lastInsertRowID
        }
    }

    /// Operations waiting on `waitKey`, oldest first.
    func pendingOperations(waitingOn waitKey: String) throws -> [PendingOperation] {
        try perform { connection in
            try connection.query("""
                SELECT id, wait_key, kind, payload, created_at FROM pending_operations WHERE wait_key = ? ORDER BY id
                """, [waitKey]) { Self.decodePending($0) }
        }
    }

    /// One statement for the whole list (passed as one JSON array), each key an index probe.
    func waitKeys(among keys: [String]) throws -> Set<String> {
        guard !keys.isEmpty else { return [] }
        let list = JSONValue.array(keys.map { .string($0) }).serialized
        return try perform { connection in
            Set(try connection.query(Self.waitKeysSQL, [list]) { $0.string(at: 0) })
        }
    }

    /// `waitKeys(among:)`' statement: each listed key is looked up in `pending_operations_wait_key`.
    static let waitKeysSQL = """
        SELECT DISTINCT wait_key FROM pending_operations WHERE wait_key IN (SELECT value FROM json_each(?))
        """

    /// Every waiting operation, oldest first.
    func allPendingOperations() throws -> [PendingOperation] {
        try perform { connection in
            try connection.query("""
                SELECT id, wait_key, kind, payload, created_at FROM pending_operations ORDER BY id
                """) { Self.decodePending($0) }
        }
    }

    /// Removes a waiting operation.
    func removePending(_ id: Int64) throws {
        try perform { connection in
            try connection.execute("DELETE FROM pending_operations WHERE id = ?", [id])
        }
    }

    /// Decodes a `pending_operations` or `bridge_operations` row (`id, wait_key, kind, payload, created_at`).
    static func decodePending(_ row: SQLiteStatement) -> PendingOperation {
        PendingOperation(id: row.int64(at: 0), waitKey: row.string(at: 1), kind: row.string(at: 2),
                         payload: row.data(at: 3), createdAt: row.date(at: 4))
    }

    // MARK: Leases

    /// Takes the lease when it is free, expired at `now` or already held by `owner` (which renews it).
    func acquireLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try perform { connection in
            try connection.execute("""
                INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                WHERE leases.expires_at <= ? OR leases.owner = excluded.owner
                """, [name, owner, now.addingTimeInterval(ttl), now])
            return connection.changes > 0
        }
    }

    /// Extends the lease to `now + ttl` when `owner` still holds it (nobody took it over, even if it expired).
    func renewLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try perform { connection in
            try connection.execute("UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ?",
                                   [now.addingTimeInterval(ttl), name, owner])
            return connection.changes > 0
        }
    }

    /// Gives the lease up when `owner` holds it; otherwise does nothing.
    func releaseLease(_ name: String, owner: String) throws {
        try perform { connection in
            try connection.execute("DELETE FROM leases WHERE name = ? AND owner = ?", [name, owner])
        }
    }

    /// The owner of an unexpired lease at `now`, or nil.
    func leaseOwner(_ name: String, now: Date) throws -> String? {
        try perform { connection in
            try connection.queryFirst("SELECT owner FROM leases WHERE name = ? AND expires_at > ?", [name, now]) {
                $0.string(at: 0)
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

    /// The error for a row this version cannot read.
    func corruption(_ detail: String) -> SwitchboardError {
        SwitchboardError(.corruptStore, "the database file \(path) holds an unreadable row: \(detail)")
    }
}
