import Foundation
import SwitchboardCore
import SwitchboardPostgres
import SwitchboardStore

/// The `StoreTransaction` of `PostgresStore`: every call runs on the connection the store lent for one transaction.
///
/// Expected refusals (a conflicting mapping, an unknown message) are detected without a failing statement, so a
/// body may catch them and go on. Any statement PostgreSQL rejects aborts the server transaction: the first such
/// failure is remembered, later calls rethrow it and the store rolls back (retrying serialization failures).
final class PostgresTransaction: StoreTransaction {
    /// The lent connection; nil once the transaction has ended.
    private var connection: PostgresConnection?
    /// The schema name, for error messages.
    private let schema: String
    /// The quoted schema followed by a dot, prefixed to every table name.
    let p: String
    /// Whether this is a read-only snapshot (`read`).
    private let isReadOnly: Bool
    /// The first statement failure; the server transaction is aborted once it is set.
    private(set) var failure: PostgresError?
    /// Whether COMMIT was sent (a connection failure after it leaves the outcome unknown).
    private(set) var commitSent = false

    /// Prepares a transaction on `connection` (not yet begun) in `schema`.
    init(connection: PostgresConnection, schema: String, isReadOnly: Bool) {
        self.connection = connection
        self.schema = schema
        self.p = PostgresStoreSchema.quoted(schema) + "."
        self.isReadOnly = isReadOnly
    }

    // MARK: Transaction control

    /// Opens the transaction: SERIALIZABLE for writes, REPEATABLE READ READ ONLY for reads.
    func begin() throws {
        try control(isReadOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN ISOLATION LEVEL SERIALIZABLE")
    }

    /// Commits; refuses (rethrowing the remembered failure) when a statement already aborted the transaction.
    func commit() throws {
        if let failure { throw failure.switchboardError(schema: schema) }
        commitSent = true
        try control("COMMIT")
        connection = nil
    }

    /// Rolls back whatever is open and ends the transaction; returns false when the connection is unusable.
    @discardableResult
    func rollback() -> Bool {
        defer { connection = nil }
        guard let connection else { return true }
        if let failure, failure.isConnectionFailure { return false }
        do {
            try connection.execute("ROLLBACK")
            return true
        } catch {
            return false
        }
    }

    /// Runs a transaction-control statement, remembering its failure.
    private func control(_ sql: String) throws {
        guard let connection else {
            throw SwitchboardError(.storage, "a store transaction was used after it ended")
        }
        do {
            try connection.execute(sql)
        } catch let error as PostgresError {
            if failure == nil { failure = error }
            throw error.switchboardError(schema: schema)
        }
    }

    /// Runs one statement with bound parameters, turning failures into `SwitchboardError`s.
    @discardableResult
    func run(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) throws -> PostgresResult {
        guard let connection else {
            throw SwitchboardError(.storage, "a store transaction was used after it ended")
        }
        if let failure { throw failure.switchboardError(schema: schema) }
        let texts = parameters.map { $0?.postgresText }
        for text in texts {
            if let text, text.utf8.contains(0) {
                throw SwitchboardError(.invalidArgument, "PostgreSQL text cannot hold NUL characters")
            }
        }
        do {
            return try connection.query(sql, texts)
        } catch let error as PostgresError {
            if failure == nil { failure = error }
            throw error.switchboardError(schema: schema)
        }
    }

    /// Runs a query and decodes each row.
    func rows<Row>(_ sql: String, _ parameters: [(any PostgresBindable)?] = [],
                           _ decode: (PostgresRow) throws -> Row) throws -> [Row] {
        try run(sql, parameters).rows.map { try decode(PostgresRow(values: $0, corruption: corruption)) }
    }

    /// Runs a query and decodes its first row, if any.
    func first<Row>(_ sql: String, _ parameters: [(any PostgresBindable)?] = [],
                            _ decode: (PostgresRow) throws -> Row) throws -> Row? {
        guard let values = try run(sql, parameters).rows.first else { return nil }
        return try decode(PostgresRow(values: values, corruption: corruption))
    }

    // MARK: Messages

    /// The columns of `messages` in the order `decodeMessageRow` reads them.
    private static let messageColumns = """
        id, conversation, sender, text, reply_to, metadata, ts, has_server_ts, edited_at, deleted_at,
        delivery, delivery_progress, failure_reason, failure_retryable, is_outgoing, encode(text_exact, 'hex')
        """

    /// The message with its attachments and reactions, or nil.
    func message(_ id: MessageID) throws -> Message? {
        try loadMessages("SELECT \(Self.messageColumns) FROM \(p)messages WHERE id = $1", [id]).first
    }

    /// Inserts or replaces a message together with its attachments (in order) and reactions.
    func upsertMessage(_ message: Message) throws {
        let (_, progress, failureReason, failureRetryable) = StoreColumns.delivery(message.delivery)
        // PostgreSQL text cannot hold NUL: such a text is kept exactly as bytes, and readably with U+FFFD.
        let text = message.content.text
        let exact: Data? = text.utf8.contains(0) ? Data(text.utf8) : nil
        let readable = exact == nil ? text : String(text.unicodeScalars.map { $0 == "\u{0}" ? "\u{FFFD}" : Character($0) })
        try run("""
            INSERT INTO \(p)messages (id, conversation, sender, text, reply_to, metadata, ts, has_server_ts, edited_at,
                                      deleted_at, delivery, delivery_progress, failure_reason, failure_retryable,
                                      is_outgoing, text_exact)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, decode($16, 'hex'))
            ON CONFLICT (id) DO UPDATE SET
                \(StoreColumns.messageUpsertAssignments),
                text_exact = excluded.text_exact
            """, [
                message.id, message.conversation, message.sender, readable, message.content.replyTo,
                StoreJSON.encode(message.content.metadata), message.timestamp, message.hasServerTimestamp,
                message.editedAt, message.deletedAt, message.delivery.storageName, progress, failureReason,
                failureRetryable, message.isOutgoing, exact,
            ])
        try run("DELETE FROM \(p)attachments WHERE message_id = $1", [message.id])
        for (position, attachment) in message.content.attachments.enumerated() {
            try insertAttachment(attachment, of: message.id, position: position)
        }
        try run("DELETE FROM \(p)reactions WHERE message_id = $1", [message.id])
        for (position, reaction) in message.reactions.enumerated() {
            // A repeated (user, symbol) pair is one reaction: the first occurrence stands.
            try run("""
                INSERT INTO \(p)reactions (message_id, user_id, symbol, at, position) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (message_id, user_id, symbol) DO NOTHING
                """, [message.id, reaction.user, reaction.symbol, reaction.at, position])
        }
    }

    /// Removes a message and everything hanging off it (attachments, reactions, receipts, mappings, outbox).
    func removeMessage(_ id: MessageID) throws {
        // Attachments, reactions and receipts follow through ON DELETE CASCADE.
        try run("DELETE FROM \(p)messages WHERE id = $1", [id])
        try run("DELETE FROM \(p)id_map WHERE message_id = $1", [id])
        try run("DELETE FROM \(p)outbox WHERE message_id = $1", [id])
    }

    /// Up to `limit` messages of a conversation strictly before `position` (newest first); the newest when nil.
    func messages(in conversation: ConversationID, before position: TimelinePosition?, limit: Int) throws -> [Message] {
        guard limit > 0 else { return [] }
        if let position {
            return try loadMessages("""
                SELECT \(Self.messageColumns) FROM \(p)messages
                WHERE conversation = $1 AND (ts, id) < ($2::bigint, $3::text)
                ORDER BY ts DESC, id DESC LIMIT $4
                """, [conversation, position.micros, position.id, limit])
        }
        return try loadMessages("""
            SELECT \(Self.messageColumns) FROM \(p)messages
            WHERE conversation = $1
            ORDER BY ts DESC, id DESC LIMIT $2
            """, [conversation, limit])
    }

    /// Up to `limit` messages strictly after `position` (oldest first).
    func messages(in conversation: ConversationID, after position: TimelinePosition, limit: Int) throws -> [Message] {
        guard limit > 0 else { return [] }
        return try loadMessages("""
            SELECT \(Self.messageColumns) FROM \(p)messages
            WHERE conversation = $1 AND (ts, id) > ($2::bigint, $3::text)
            ORDER BY ts, id LIMIT $4
            """, [conversation, position.micros, position.id, limit])
    }

    /// How many messages a conversation holds locally.
    func messageCount(in conversation: ConversationID) throws -> Int {
        try first("SELECT COUNT(*) FROM \(p)messages WHERE conversation = $1", [conversation]) { try $0.int(0) } ?? 0
    }

    /// Every message that is not yet published or failed (draft, pending, uploading, sending, failed), oldest first.
    func unfinishedMessages() throws -> [Message] {
        // The WHERE clause repeats the partial index `messages_unfinished` word for word so it is used.
        try loadMessages("""
            SELECT \(Self.messageColumns) FROM \(p)messages
            WHERE delivery IN ('draft', 'pending', 'uploading', 'sending', 'failed')
            ORDER BY ts, id
            """)
    }

    /// Runs a query over `messages` and completes each row with its attachments and reactions (one query each).
    private func loadMessages(_ sql: String, _ parameters: [(any PostgresBindable)?] = []) throws -> [Message] {
        let messages = try rows(sql, parameters) { try decodeMessageRow($0) }
        guard !messages.isEmpty else { return [] }
        let ids = PostgresArray.literal(messages.map(\.id.rawValue))
        let attachments = try rows("""
            SELECT message_id, id, filename, mime_type, byte_count, sha256, local_path, remote_location,
                   remote_parameters, upload_state, upload_progress, upload_error
            FROM \(p)attachments WHERE message_id = ANY($1::text[])
            ORDER BY message_id, position
            """, [ids]) { row in (MessageID(try row.string(0)), try decodeAttachment(row)) }
        let reactions = try rows("""
            SELECT message_id, user_id, symbol, at
            FROM \(p)reactions WHERE message_id = ANY($1::text[])
            ORDER BY message_id, position
            """, [ids]) { row in
                (MessageID(try row.string(0)),
                 Reaction(user: UserID(try row.string(1)), symbol: try row.string(2), at: try row.date(3)))
            }
        return StoreColumns.completing(messages, attachments: attachments, reactions: reactions)
    }

    /// Decodes one `messages` row selected with `messageColumns` (without attachments and reactions).
    private func decodeMessageRow(_ row: PostgresRow) throws -> Message {
        let id = MessageID(try row.string(0))
        let deliveryName = try row.string(10)
        guard let delivery = DeliveryState(storageName: deliveryName, progress: try row.optionalDouble(11) ?? 0,
                                           reason: row.optionalString(12),
                                           retryable: try row.optionalBool(13) ?? true) else {
            throw corruption("message \(id) has an unknown delivery state '\(deliveryName)'")
        }
        var text = try row.string(3)
        if let exact = try row.optionalData(15) {
            text = String(decoding: exact, as: UTF8.self)
        }
        return Message(
            id: id,
            conversation: ConversationID(try row.string(1)),
            sender: UserID(try row.string(2)),
            content: MessageContent(text: text, replyTo: row.optionalString(4).map(MessageID.init),
                                    metadata: try decodeDictionary(try row.string(5))),
            timestamp: try row.date(6),
            hasServerTimestamp: try row.bool(7),
            editedAt: try row.optionalDate(8),
            deletedAt: try row.optionalDate(9),
            delivery: delivery,
            isOutgoing: try row.bool(14))
    }

    // MARK: Attachments

    /// Inserts one attachment row of `message` at `position`.
    private func insertAttachment(_ attachment: Attachment, of message: MessageID, position: Int) throws {
        let (state, progress, error) = StoreColumns.upload(attachment.upload)
        try run("""
            INSERT INTO \(p)attachments (message_id, id, position, filename, mime_type, byte_count, sha256, local_path,
                                         remote_location, remote_parameters, upload_state, upload_progress, upload_error)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            """, [
                message, attachment.id, position, attachment.filename, attachment.mimeType, attachment.byteCount,
                attachment.sha256, attachment.localPath, attachment.remoteLocation,
                StoreJSON.encode(attachment.remoteParameters), state, progress, error,
            ])
    }

    /// Replaces one attachment's row (upload state, remote location) of `message`.
    func updateAttachment(_ attachment: Attachment, of message: MessageID) throws {
        let (state, progress, error) = StoreColumns.upload(attachment.upload)
        let updated = try run("""
            UPDATE \(p)attachments SET filename = $1, mime_type = $2, byte_count = $3, sha256 = $4, local_path = $5,
                remote_location = $6, remote_parameters = $7, upload_state = $8, upload_progress = $9, upload_error = $10
            WHERE message_id = $11 AND id = $12
            """, [
                attachment.filename, attachment.mimeType, attachment.byteCount, attachment.sha256,
                attachment.localPath, attachment.remoteLocation, StoreJSON.encode(attachment.remoteParameters),
                state, progress, error, message, attachment.id,
            ])
        guard updated.affectedRows == 0 else { return }
        let messageExists = try first("SELECT 1 FROM \(p)messages WHERE id = $1", [message]) { _ in true } ?? false
        throw StoreColumns.attachmentMissing(attachment.id, of: message, messageExists: messageExists)
    }

    /// Decodes an attachment whose columns start at index 1 in the order of `loadMessages`.
    private func decodeAttachment(_ row: PostgresRow) throws -> Attachment {
        let id = AttachmentID(try row.string(1))
        let stateName = try row.string(9)
        guard let upload = UploadState(storageName: stateName, progress: try row.optionalDouble(10) ?? 0,
                                       reason: row.optionalString(11)) else {
            throw corruption("attachment \(id) has an unknown upload state '\(stateName)'")
        }
        return Attachment(
            id: id,
            filename: try row.string(2),
            mimeType: try row.string(3),
            byteCount: try row.int64(4),
            sha256: try row.string(5),
            localPath: row.optionalString(6),
            remoteLocation: row.optionalString(7),
            remoteParameters: try decodeDictionary(try row.string(8)),
            upload: upload)
    }

    // MARK: Receipts

    /// Records or replaces the receipt of `(message, user)`; throws `unknownMessage` when the message is not stored.
    func upsertReceipt(_ receipt: Receipt) throws {
        // The existence check keeps an unknown message from failing a statement (which would abort the transaction).
        let result = try run("""
            INSERT INTO \(p)receipts (message_id, user_id, state, at)
            SELECT $1::text, $2::text, $3::text, $4::bigint WHERE EXISTS (SELECT 1 FROM \(p)messages WHERE id = $1::text)
            ON CONFLICT (message_id, user_id) DO UPDATE SET state = excluded.state, at = excluded.at
            """, [receipt.message, receipt.user, receipt.state.rawValue, receipt.at])
        guard result.affectedRows > 0 else {
            throw SwitchboardError(.unknownMessage, "no message \(receipt.message) is stored")
        }
    }

    /// Receipts of a message, oldest first.
    func receipts(of message: MessageID) throws -> [Receipt] {
        try rows("""
            SELECT user_id, state, at FROM \(p)receipts WHERE message_id = $1 ORDER BY at, user_id
            """, [message]) { row in
            let stateName = try row.string(1)
            guard let state = ReceiptState(rawValue: stateName) else {
                throw corruption("a receipt of message \(message) has an unknown state '\(stateName)'")
            }
            return Receipt(message: message, user: UserID(try row.string(0)), state: state, at: try row.date(2))
        }
    }

    // MARK: ID map

    /// Records a mapping; a conflicting row on either unique side throws `conflict`; an identical row is a no-op.
    func insertMapping(_ mapping: IDMapping) throws {
        // ON CONFLICT DO NOTHING covers both unique constraints, so a conflict never fails the statement; a
        // conflicting row committed by a concurrent transaction surfaces as a serialization failure and a retry.
        let inserted = try run("""
            INSERT INTO \(p)id_map (message_id, backend, conversation, remote_id, part) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT DO NOTHING
            """, [mapping.messageID, mapping.backend, mapping.conversation, mapping.remoteID, mapping.part])
        if inserted.affectedRows > 0 { return }
        let existing = try rows("""
            SELECT message_id, backend, conversation, remote_id, part FROM \(p)id_map
            WHERE (backend = $1 AND remote_id = $2) OR (message_id = $3 AND backend = $1 AND part = $4)
            ORDER BY backend, remote_id
            """, [mapping.backend, mapping.remoteID, mapping.messageID, mapping.part]) { try Self.decodeMapping($0) }
        if existing == [mapping] { return }
        throw StoreColumns.mappingConflict(mapping, existing: existing)
    }

    /// The message a backend ID maps to.
    func messageOwner(_ id: MessageID) throws -> MessageOwner? {
        try first("SELECT conversation, sender FROM \(p)messages WHERE id = $1", [id]) {
            MessageOwner(conversation: ConversationID(try $0.string(0)), sender: UserID(try $0.string(1)))
        }
    }

    func messageID(backend: BackendID, remoteID: RemoteID) throws -> MessageID? {
        try first("SELECT message_id FROM \(p)id_map WHERE backend = $1 AND remote_id = $2", [backend, remoteID]) {
            MessageID(try $0.string(0))
        }
    }

    /// The backend ID of a message part.
    func remoteID(of message: MessageID, backend: BackendID, part: Int) throws -> RemoteID? {
        try first("""
            SELECT remote_id FROM \(p)id_map WHERE message_id = $1 AND backend = $2 AND part = $3
            """, [message, backend, part]) { RemoteID(try $0.string(0)) }
    }

    /// All mappings of a message, by backend then part.
    func mappings(of message: MessageID) throws -> [IDMapping] {
        try rows("""
            SELECT message_id, backend, conversation, remote_id, part FROM \(p)id_map
            WHERE message_id = $1 ORDER BY backend, part
            """, [message]) { try Self.decodeMapping($0) }
    }

    /// Decodes an `id_map` row selected as message_id, backend, conversation, remote_id, part.
    private static func decodeMapping(_ row: PostgresRow) throws -> IDMapping {
        IDMapping(messageID: MessageID(try row.string(0)), backend: BackendID(try row.string(1)),
                  conversation: ConversationID(try row.string(2)), remoteID: RemoteID(try row.string(3)),
                  part: try row.int(4))
    }

    // MARK: Outbox

    /// The columns of `outbox` in the order `decodeOutbox` reads them.
    private static let outboxColumns = """
        message_id, backend, conversation, encode(prepared, 'hex'), no_send, attempts, next_attempt_at, last_error,
        status, created_at
        """

    /// Inserts or replaces an outbox entry.
    func upsertOutbox(_ entry: OutboxEntry) throws {
        let prepared = entry.prepared.map(StoreJSON.encode)
        try run("""
            INSERT INTO \(p)outbox (message_id, backend, conversation, prepared, no_send, attempts, next_attempt_at,
                                    last_error, status, created_at)
            VALUES ($1, $2, $3, decode($4, 'hex'), $5, $6, $7, $8, $9, $10)
            \(StoreColumns.outboxUpsertConflict)
            """, [
                entry.messageID, entry.backend, entry.conversation, prepared, entry.noSend, entry.attempts,
                entry.nextAttemptAt, entry.lastError, entry.status.rawValue, entry.createdAt,
            ])
    }

    /// The outbox entry of a message.
    func outboxEntry(_ message: MessageID) throws -> OutboxEntry? {
        try first("SELECT \(Self.outboxColumns) FROM \(p)outbox WHERE message_id = $1", [message]) {
            try decodeOutbox($0)
        }
    }

    /// Removes a message's outbox entry.
    func removeOutbox(_ message: MessageID) throws {
        try run("DELETE FROM \(p)outbox WHERE message_id = $1", [message])
    }

    /// Queued, non-noSend entries of `backend` due at `now`, oldest created first.
    func dueOutbox(backend: BackendID, now: Date, limit: Int) throws -> [OutboxEntry] {
        guard limit > 0 else { return [] }
        return try rows("""
            SELECT \(Self.outboxColumns) FROM \(p)outbox
            WHERE backend = $1 AND status = $2 AND no_send = false AND next_attempt_at <= $3
            ORDER BY created_at, message_id LIMIT $4
            """, [backend, OutboxStatus.queued.rawValue, now, limit]) { try decodeOutbox($0) }
    }

    /// Every outbox entry of `backend`, oldest created first.
    func outbox(backend: BackendID) throws -> [OutboxEntry] {
        try rows("""
            SELECT \(Self.outboxColumns) FROM \(p)outbox WHERE backend = $1 ORDER BY created_at, message_id
            """, [backend]) { try decodeOutbox($0) }
    }

    /// Decodes an `outbox` row selected with `outboxColumns`.
    private func decodeOutbox(_ row: PostgresRow) throws -> OutboxEntry {
        let messageID = MessageID(try row.string(0))
        let statusName = try row.string(8)
        guard let status = OutboxStatus(rawValue: statusName) else {
            throw corruption("the outbox entry of \(messageID) has an unknown status '\(statusName)'")
        }
        let prepared = try preparedMessage(row, at: 3, "the prepared request of outbox entry \(messageID)")
        return OutboxEntry(
            messageID: messageID, backend: BackendID(try row.string(1)),
            conversation: ConversationID(try row.string(2)), prepared: prepared, noSend: try row.bool(4),
            attempts: try row.int(5), nextAttemptAt: try row.date(6), lastError: row.optionalString(7),
            status: status, createdAt: try row.date(9))
    }

    // MARK: Cursors

    /// A stored sync cursor.
    func cursor(conversation: ConversationID, backend: BackendID, kind: CursorKind) throws -> Cursor? {
        try first("""
            SELECT cursor FROM \(p)sync_cursors WHERE conversation = $1 AND backend = $2 AND kind = $3
            """, [conversation, backend, kind.rawValue]) { Cursor(try $0.string(0)) }
    }

    /// Stores (or clears with nil) a sync cursor.
    func setCursor(_ cursor: Cursor?, conversation: ConversationID, backend: BackendID, kind: CursorKind) throws {
        guard let cursor else {
            try run("""
                DELETE FROM \(p)sync_cursors WHERE conversation = $1 AND backend = $2 AND kind = $3
                """, [conversation, backend, kind.rawValue])
            return
        }
        try run("""
            INSERT INTO \(p)sync_cursors (conversation, backend, kind, cursor, updated_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (conversation, backend, kind) DO UPDATE SET
                cursor = excluded.cursor, updated_at = excluded.updated_at
            """, [conversation, backend, kind.rawValue, cursor, Date()])
    }

    // MARK: Pending operations

    /// Queues an operation waiting for a mapping; returns its row id (the operation's own `id` is ignored).
    @discardableResult func enqueuePending(_ operation: PendingOperation) throws -> Int64 {
        let id = try first("""
            INSERT INTO \(p)pending_operations (wait_key, kind, payload, created_at)
            VALUES ($1, $2, decode($3, 'hex'), $4) RETURNING id
            """, [operation.waitKey.rawValue, operation.kind, operation.payload, operation.createdAt]) { try $0.int64(0) }
        guard let id else { throw corruption("inserting a pending operation returned no id") }
        return id
    }

    /// Operations waiting on `waitKey`, oldest first.
    func pendingOperations(waitingOn waitKey: WaitKey) throws -> [PendingOperation] {
        try rows("""
            SELECT id, wait_key, kind, encode(payload, 'hex'), created_at FROM \(p)pending_operations
            WHERE wait_key = $1 ORDER BY id
            """, [waitKey.rawValue]) { try Self.decodePending($0) }
    }

    /// One statement for the whole list (a text array).
    func waitKeys(among keys: [WaitKey]) throws -> Set<WaitKey> {
        guard !keys.isEmpty else { return [] }
        return Set(try rows("""
            SELECT DISTINCT wait_key FROM \(p)pending_operations WHERE wait_key = ANY($1::text[])
            """, [PostgresArray.literal(keys.map(\.rawValue))]) { WaitKey(stored: try $0.string(0)) })
    }

    /// Every waiting operation, oldest first.
    func allPendingOperations() throws -> [PendingOperation] {
        try rows("""
            SELECT id, wait_key, kind, encode(payload, 'hex'), created_at FROM \(p)pending_operations ORDER BY id
            """) { try Self.decodePending($0) }
    }

    /// Removes a waiting operation.
    func removePending(_ id: Int64) throws {
        try run("DELETE FROM \(p)pending_operations WHERE id = $1", [id])
    }

    /// Decodes a `pending_operations` or `bridge_operations` row (`id, wait_key, kind, payload, created_at`).
    static func decodePending(_ row: PostgresRow) throws -> PendingOperation {
        PendingOperation(id: try row.int64(0), waitKey: WaitKey(stored: try row.string(1)), kind: try row.string(2),
                         payload: try row.data(3), createdAt: try row.date(4))
    }

    // MARK: Leases

    /// Takes the lease when it is free, expired at `now` or already held by `owner` (which renews it).
    func acquireLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        let acquired = try run("""
            INSERT INTO \(p)leases AS lease (name, owner, expires_at) VALUES ($1, $2, $3)
            ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
            WHERE lease.expires_at <= $4 OR lease.owner = excluded.owner
            RETURNING owner
            """, [name, owner, now.addingTimeInterval(ttl), now])
        return !acquired.rows.isEmpty
    }

    /// Extends the lease to `now + ttl` when `owner` still holds it (nobody took it over, even if it expired).
    func renewLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try run("""
            UPDATE \(p)leases SET expires_at = $3 WHERE name = $1 AND owner = $2
            """, [name, owner, now.addingTimeInterval(ttl)]).affectedRows > 0
    }

    /// Gives the lease up when `owner` holds it; otherwise does nothing.
    func releaseLease(_ name: String, owner: String) throws {
        try run("DELETE FROM \(p)leases WHERE name = $1 AND owner = $2", [name, owner])
    }

    /// The owner of an unexpired lease at `now`, or nil.
    func leaseOwner(_ name: String, now: Date) throws -> String? {
        try first("SELECT owner FROM \(p)leases WHERE name = $1 AND expires_at > $2", [name, now]) {
            try $0.string(0)
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

    /// The prepared message in the nullable `bytea` column `index` (nil when NULL); unreadable bytes or JSON are
    /// corruption of `what`.
    func preparedMessage(_ row: PostgresRow, at index: Int, _ what: @autoclosure () -> String) throws -> PreparedMessage? {
        let data: Data?
        do { data = try row.optionalData(index) } catch { throw corruption("\(what()) cannot be decoded") }
        guard let data else { return nil }
        guard let prepared = StoreJSON.decodePreparedMessage(data) else {
            throw corruption("\(what()) cannot be decoded")
        }
        return prepared
    }

    /// The error for a row this version cannot read.
    func corruption(_ detail: String) -> SwitchboardError {
        SwitchboardError(.corruptStore, "the PostgreSQL schema \(schema) holds an unreadable row: \(detail)")
    }
}

/// The lease operations are the `leases` section above; `PostgresStore` runs each in a transaction of its own.
extension PostgresTransaction: LeaseTransaction {}
