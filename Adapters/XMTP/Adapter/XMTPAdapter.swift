import Foundation
import SwitchboardCore
import SwitchboardNet
import XMTPCodec
import XMTPCrypto

/// The XMTP-like network behind the `ChatAdapter` contract, behaving like libxmtp's client: a conversation is a
/// group (its ID the group ID's lowercase hex), message IDs are content-derived and known at prepare, every
/// envelope seen is a row of the adapter's own SQLite database (`group_messages`, `group_intents`,
/// `refresh_state`), and a message's current state (edits, deletion, reactions) is folded from its row and the
/// rows referencing it, so operations that arrive before their target still apply once it arrives.
///
/// Receipts: XMTP has only `readReceipt:1.0` ("read everything up to here"). `.read` sends one; an incoming read
/// receipt is reported as `.read` of the latest message by someone else before it. `.delivered` has no XMTP
/// content type and is a documented no-op. There is no typing indicator (no `TypingAdapter`).
public final class XMTPAdapter: ConfiguredAdapter, EditingAdapter, DeletingAdapter, ReactingAdapter, ReceiptAdapter,
    UploadingAdapter, MessageCountingAdapter {
    /// Where the node is, who signs in, and where the local database lives.
    public struct Configuration: AdapterConfiguration {
        /// The node's base URL, e.g. `http://127.0.0.1:5556`.
        public var baseURL: URL
        /// The local inbox ID (the `localUser`).
        public var inboxID: UserID
        /// The inbox's bearer token from `/identity/v1/register`.
        public var token: String
        /// Gives a group's 32-byte secret (handed out of band: MLS key agreement is out of scope).
        public var groupSecret: @Sendable (ConversationID) throws -> [UInt8]
        /// The adapter's own SQLite database file.
        public var databasePath: String
        /// This backend's name in ID mappings.
        public var backend: BackendID = "xmtp"
        /// Publish attempts before a message is `Failed` (libxmtp: 3).
        public var maxPublishAttempts = 3
        /// The most bytes of one node answer, or of one line of a subscription, read (downloads: the largest
        /// attachment's payload); a larger or endless one is cut there (a retryable `transport` error saying so).
        public var maximumResponseBytes = 16 << 20
        /// The signed-in user: the local inbox.
        public var localUser: UserID { inboxID }

        /// A configuration for `inboxID` at `baseURL`.
        public init(baseURL: URL, inboxID: UserID, token: String, databasePath: String,
                    groupSecret: @escaping @Sendable (ConversationID) throws -> [UInt8]) {
            self.baseURL = baseURL
            self.inboxID = inboxID
            self.token = token
            self.databasePath = databasePath
            self.groupSecret = groupSecret
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// Content-derived IDs; noSend is native (a row without an intent).
    public let capabilities = AdapterCapabilities(idScheme: .contentDerived, maxTextBytes: 64 * 1024,
                                                  maxAttachmentBytes: 25 * 1024 * 1024, maxAttachmentsPerMessage: 10,
                                                  hasNativeNoSend: true, receiptStates: [.read])
    /// Reaction 2.0 carries added/removed per symbol: re-tapping a symbol toggles it.
    public let reactionPolicy = ReactionPolicy.onePerUserPerSymbol

    let node: XMTPNodeClient
    let store: XMTPLocalStore
    /// Group ciphers by conversation.
    private let ciphers = Locked<[ConversationID: GroupCipher]>([:])
    /// The runs of sequences the live streams stored without a gap (delta reads inside one stay local).
    let coverage = Locked(XMTPStreamCoverage())

    /// An adapter for `configuration`, sharing `http` when given; opens (creating) the local database.
    public init(configuration: Configuration, http: HTTPClient = HTTPClient()) throws {
        self.configuration = configuration
        self.node = XMTPNodeClient(baseURL: configuration.baseURL, token: configuration.token, http: http,
                                   maximumResponseBytes: configuration.maximumResponseBytes)
        self.store = try XMTPLocalStore(path: configuration.databasePath)
    }

    // MARK: groups

    /// The 16-byte group ID of a conversation.
    func groupID(_ conversation: ConversationID) throws -> [UInt8] {
        guard let bytes = Hex.decode(conversation.rawValue), bytes.count == 16,
              conversation.rawValue == conversation.rawValue.lowercased() else {
            throw SwitchboardError(.unknownConversation, "XMTP conversation IDs are 32 lowercase hex digits (got \(conversation))")
        }
        return bytes
    }

    /// The group's cipher (from the configured secret lookup, cached).
    func cipher(_ conversation: ConversationID) throws -> GroupCipher {
        if let cached = ciphers.withLock({ $0[conversation] }) { return cached }
        let secret: [UInt8]
        do {
            secret = try configuration.groupSecret(conversation)
        } catch {
            throw SwitchboardError(.unknownConversation, "no secret for group \(conversation): \(error)")
        }
        let cipher: GroupCipher
        do {
            cipher = try GroupCipher(secret: secret)
        } catch {
            throw SwitchboardError(.invalidArgument, "group \(conversation) has an invalid secret: \(error)")
        }
        ciphers.withLock { $0[conversation] = cipher }
        return cipher
    }

    // MARK: prepare / publish

    /// Builds the content and its derived ID without the network; stores the row (Unpublished) and, unless
    /// `noSend`, an intent whose envelope is sealed now so every retry sends identical bytes.
    nonisolated(nonsending) public func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        guard message.text.utf8.count <= capabilities.maxTextBytes else {
            throw SwitchboardError(.contentTooLarge, "text exceeds \(capabilities.maxTextBytes) bytes")
        }
        let group = try groupID(message.conversation)
        let replyInbox = try message.replyTo.flatMap { try store.message($0.rawValue)?.sender }
        let content = try XMTPMessageMapping.content(of: message, replyInboxID: replyInbox).encoded()
        let row = try prepareRow(content: content, key: message.id.rawValue, conversation: message.conversation,
                                 groupID: group, noSend: noSend)
        let payload = XMTPPreparedPayload(groupID: row.groupID, key: row.idempotencyKey, content: row.content, sentAtNs: row.sentAtNs)
        return PreparedMessage(id: message.id, conversation: message.conversation, remoteID: RemoteID(row.id), payload: payload.data)
    }

    /// Stores a prepared row (insert-or-ignore by its derived ID) and, unless `noSend`, ensures an intent.
    private func prepareRow(content: [UInt8], key: String, conversation: ConversationID, groupID: [UInt8],
                            noSend: Bool, sentAtNs: Int64? = nil) throws -> XMTPMessageRow {
        let id = XMTPMessageID.hex(groupID: groupID, idempotencyKey: key, encodedContent: content)
        let (type, reference) = (try? XMTPEncodedContent.decode(content)).map(XMTPMessageMapping.classify) ?? ("unknown", nil)
        let row = try store.insertPrepared(XMTPMessageRow(
            id: id, groupID: Digest.hex(groupID), content: content, sentAtNs: sentAtNs ?? XMTPMessageMapping.nowNs(),
            sender: localUser.rawValue, status: .unpublished, contentType: type, referenceID: reference, sequenceID: nil,
            idempotencyKey: key))
        if !noSend, row.status != .published { _ = try ensureIntent(row, conversation: conversation, groupID: groupID) }
        return row
    }

    /// The message's live intent, or a new one sealed now.
    private func ensureIntent(_ row: XMTPMessageRow, conversation: ConversationID, groupID: [UInt8]) throws -> XMTPIntentRow {
        if let intent = try store.intent(for: row.id), intent.state == .toPublish || intent.state == .published {
            return intent
        }
        let envelope = try XMTPMessageMapping.seal(content: row.content, key: row.idempotencyKey, sender: localUser.rawValue,
                                                   groupID: groupID, cipher: try cipher(conversation))
        return try store.insertIntent(groupID: row.groupID, data: envelope, messageID: row.id)
    }

    /// libxmtp's `publishMessage(id)`: no-op when Published; else sends the intent's stored envelope (sealed
    /// once), counts the attempt, then syncs the group to read it back (Published with the node's time).
    public func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        let conversation = prepared.conversation
        let group = try groupID(conversation)
        var row: XMTPMessageRow
        if let id = prepared.remoteID, let stored = try store.message(id.rawValue) {
            row = stored
        } else if let payload = XMTPPreparedPayload(prepared.payload), payload.groupID == Digest.hex(group) {
            // The local database lost the row: rebuild it from the payload (same key, same content, same ID).
            row = try prepareRow(content: payload.content, key: payload.key, conversation: conversation, groupID: group,
                                 noSend: true, sentAtNs: payload.sentAtNs)
        } else {
            throw SwitchboardError(.notFound, "no prepared message \(prepared.remoteID?.rawValue ?? prepared.id.rawValue)")
        }
        if row.status == .published {
            return PublishReceipt(remoteID: RemoteID(row.id), serverTime: XMTPMessageMapping.date(ns: row.sentAtNs))
        }
        if row.status == .failed {
            try store.setStatus(row.id, .unpublished)
            row.status = .unpublished
        }
        var intent = try ensureIntent(row, conversation: conversation, groupID: group)
        if intent.state == .error { intent.publishAttempts = 0 }
        intent.publishAttempts += 1
        do {
            try await node.send(envelope: intent.data, shouldPush: !row.isControl)
        } catch {
            let exhausted = intent.publishAttempts >= Int64(configuration.maxPublishAttempts)
            try store.updateIntent(intent.id, state: exhausted ? .error : .toPublish, attempts: exhausted ? 0 : intent.publishAttempts)
            if exhausted { try store.setStatus(row.id, .failed) }
            throw SwitchboardError.wrapping(error)
        }
        try store.updateIntent(intent.id, state: .published, attempts: intent.publishAttempts)
        try await syncGroup(conversation)
        let stored = try store.message(row.id)
        let time = stored?.status == .published ? stored.map { XMTPMessageMapping.date(ns: $0.sentAtNs) } : nil
        return PublishReceipt(remoteID: RemoteID(row.id), serverTime: time)
    }

    /// Publishes the given messages in order, skipping rows held by noSend (no intent); returns the receipts of
    /// those published, in order.
    public func publishAll(_ prepared: [PreparedMessage]) async throws -> [PublishReceipt] {
        var receipts: [PublishReceipt] = []
        for message in prepared {
            if let id = message.remoteID, let row = try store.message(id.rawValue), row.status != .published,
               try store.intent(for: id.rawValue) == nil {
                continue
            }
            receipts.append(try await publish(message))
        }
        return receipts
    }

    /// libxmtp's `publishMessages()`: sends every queued intent of the conversation in order (noSend rows have none).
    public func publishQueued(in conversation: ConversationID) async throws {
        let group = try groupID(conversation)
        for intent in try store.queuedIntents(in: Digest.hex(group)) {
            guard let row = try store.message(intent.messageID) else { continue }
            let payload = XMTPPreparedPayload(groupID: row.groupID, key: row.idempotencyKey, content: row.content, sentAtNs: row.sentAtNs)
            _ = try await publish(PreparedMessage(id: MessageID(row.idempotencyKey), conversation: conversation,
                                                  remoteID: RemoteID(row.id), payload: payload.data))
        }
    }

    /// libxmtp's `deleteMessageLocally`: forgets an unpublished row and its intents; refused once Published.
    public func discard(_ prepared: PreparedMessage) async throws {
        guard let id = prepared.remoteID, let row = try store.message(id.rawValue) else { return }
        if row.status == .published {
            throw SwitchboardError(.alreadyPublished, "message \(id) is published; delete it instead")
        }
        try store.deleteLocally(row.id)
    }

    /// Sends a control message (edit, delete, reaction, receipt) as its own envelope under a fresh key.
    private func sendControl(_ content: XMTPEncodedContent, in conversation: ConversationID) async throws {
        let group = try groupID(conversation)
        let row = try prepareRow(content: content.encoded(), key: UUID().uuidString.lowercased(), conversation: conversation,
                                 groupID: group, noSend: false)
        let payload = XMTPPreparedPayload(groupID: row.groupID, key: row.idempotencyKey, content: row.content, sentAtNs: row.sentAtNs)
        do {
            _ = try await publish(PreparedMessage(id: MessageID(row.idempotencyKey), conversation: conversation,
                                                  remoteID: RemoteID(row.id), payload: payload.data))
        } catch {
            // The caller rolls back; a control message that never left must not go out later.
            if try store.message(row.id)?.status != .published { try? store.deleteLocally(row.id) }
            throw error
        }
    }

    // MARK: sync

    /// Reads the group's envelopes after its `refresh_state` cursor into the local database (libxmtp's sync).
    func syncGroup(_ conversation: ConversationID) async throws {
        let group = try groupID(conversation)
        let hex = Digest.hex(group)
        var cursor = try store.refreshCursor(hex)
        while true {
            let envelopes = try await node.query(groupID: group, ascending: true, cursor: UInt64(cursor), limit: 100)
            _ = try storeEnvelopes(envelopes, in: conversation)
            guard let last = envelopes.last else { return }
            let next = Int64(clamping: last.sequence)
            try store.advanceRefreshCursor(hex, from: cursor, to: next)
            cursor = next
            if envelopes.count < 100 { return }
        }
    }

    /// Opens and stores a page of envelopes in one transaction (skipping those that do not open); returns, in
    /// order, each envelope's own row and the row stored for it (a duplicate's stored row keeps the earliest
    /// sequence). An envelope whose sequence is already stored as published (the live stream, a delta sync and a
    /// history page read the same envelopes) is not decrypted or written again: its stored row is what storing it
    /// would give.
    func storeEnvelopes(_ envelopes: [XMTPNodeEnvelope],
                        in conversation: ConversationID) throws -> [(envelope: XMTPMessageRow, stored: XMTPMessageRow)] {
        let group = try groupID(conversation)
        let cipher = try cipher(conversation)
        let hex = Digest.hex(group)
        let known = try store.publishedRows(groupID: hex, sequences: envelopes.map { Int64(clamping: $0.sequence) })
        var opened: [(row: XMTPMessageRow, payload: [UInt8])] = []
        var order: [(known: XMTPMessageRow?, opened: Int?)] = []
        for envelope in envelopes {
            if let row = known[Int64(clamping: envelope.sequence)] {
                order.append((row, nil))
            } else if let row = XMTPMessageMapping.open(envelope, groupID: group, groupHex: hex, cipher: cipher) {
                order.append((nil, opened.count))
                opened.append((row, envelope.data))
            }
        }
        let stored = try store.storeReceived(opened)  // the new envelopes of the page in one transaction
        return order.compactMap { item in
            if let row = item.known { return (row, row) }
            guard let index = item.opened else { return nil }
            return (opened[index].row, stored[index])
        }
    }

    /// Stores envelopes (see `storeEnvelopes`) and returns the changes they make, in order (see `change(for:)`).
    func ingest(_ envelopes: [XMTPNodeEnvelope], in conversation: ConversationID) throws -> [RemoteChange] {
        let stored = try storeEnvelopes(envelopes, in: conversation)
        return try store.reading {
            var changes: [RemoteChange] = []
            for item in stored { changes += try self.changes(for: item.envelope, stored: item.stored, in: conversation) }
            return changes
        }
    }

    /// The change one stored envelope makes: content → the message's current state; edit/delete → the target's
    /// new state when the target is known (else none now: it applies when the target arrives); reaction → the
    /// folded state of that user's symbol; read receipt → `.read` of the latest message by someone else before it.
    private func changes(for envelope: XMTPMessageRow, stored: XMTPMessageRow, in conversation: ConversationID) throws -> [RemoteChange] {
        switch envelope.contentType {
        case "editMessage", "deleteMessage":
            // A target of another group is not this group's to change (its own fold ignores this envelope too).
            guard let target = envelope.referenceID, let row = try store.message(target), !row.isControl,
                  row.groupID == envelope.groupID else { return [] }
            return [.message(XMTPMessageMapping.remoteMessage(row, references: try store.references(to: row.id, in: row.groupID),
                                                              conversation: conversation))]
        case "reaction":
            guard let target = envelope.referenceID, let (symbol, _) = XMTPMessageMapping.reaction(of: envelope),
                  try store.message(target).map({ $0.groupID == envelope.groupID }) ?? true else { return [] }
            let active = XMTPMessageMapping.isActive(user: envelope.sender, symbol: symbol,
                                                     in: try store.references(to: target, in: envelope.groupID))
            return [.reaction(RemoteReaction(target: RemoteID(target), conversation: conversation, user: UserID(envelope.sender),
                                             symbol: symbol, isActive: active, at: XMTPMessageMapping.date(ns: envelope.sentAtNs)))]
        case "readReceipt":
            guard let sequence = envelope.sequenceID,
                  let target = try store.latestContent(before: sequence, in: envelope.groupID, notFrom: envelope.sender) else { return [] }
            return [.receipt(RemoteReceipt(target: RemoteID(target.id), conversation: conversation, user: UserID(envelope.sender),
                                           state: .read, at: XMTPMessageMapping.date(ns: envelope.sentAtNs)))]
        default:
            return [.message(XMTPMessageMapping.remoteMessage(stored, references: try store.references(to: stored.id, in: stored.groupID),
                                                              conversation: conversation))]
        }
    }

    // MARK: history and delta sync

    /// Parses `s:<sequence>`.
    static func sequence(of cursor: Cursor?) throws -> UInt64 {
        guard let cursor else { return 0 }
        guard cursor.rawValue.hasPrefix("s:"), let value = UInt64(cursor.rawValue.dropFirst(2)) else {
            throw SwitchboardError(.invalidArgument, "not an XMTP cursor: \(cursor)")
        }
        return value
    }

    /// The newest sequence of the group (`s:0` when empty).
    public func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        let newest = try await node.query(groupID: try groupID(conversation), ascending: false, cursor: 0, limit: 1)
        return Cursor("s:\(newest.first?.sequence ?? 0)")
    }

    /// Pages backwards by the node's sequence, storing every envelope; returns the page's content messages
    /// (current state, oldest first), their standing reactions, and the smallest sequence when the page was full.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        let limit = max(1, min(limit, 100))
        let before = try Self.sequence(of: cursor)
        let envelopes = try await node.query(groupID: try groupID(conversation), ascending: false, cursor: before, limit: limit)
        let rows = try storeEnvelopes(envelopes, in: conversation).map(\.stored)
        var seen = Set<String>()
        var messages: [RemoteMessage] = []
        var reactions: [RemoteReaction] = []
        try store.reading {
            for opened in rows.reversed() where !opened.isControl && seen.insert(opened.id).inserted {
                guard let row = try store.message(opened.id) else { continue }
                let references = try store.references(to: row.id, in: row.groupID)
                messages.append(XMTPMessageMapping.remoteMessage(row, references: references, conversation: conversation))
                for standing in XMTPMessageMapping.standingReactions(references) {
                    reactions.append(RemoteReaction(target: RemoteID(row.id), conversation: conversation, user: UserID(standing.user),
                                                    symbol: standing.symbol, isActive: true, at: XMTPMessageMapping.date(ns: standing.at)))
                }
            }
        }
        let older = envelopes.count >= limit ? envelopes.map(\.sequence).min().map { Cursor("s:\($0)") } : nil
        return HistoryPage(messages: messages, reactions: reactions, olderCursor: older)
    }

    /// The group's content messages, deleted ones included: every envelope is fetched (the node's pages of 100,
    /// newest first, stored 1,000 at a time in one transaction), opened and stored as `history` does, since only
    /// the group key tells a message from a reaction, an edit or a receipt; unlike `history` it builds no messages
    /// (no local reads of their rows and references).
    ///
    /// The pages are contiguous runs of the group's sequences, so what the count has stored so far (from its oldest
    /// page up to the newest envelope it saw) counts as covered (`XMTPStreamCoverage`): a delta read starting in
    /// that run, such as a migration's copy running alongside, is answered from the local database. Once the count
    /// reaches the part the group's sync cursor says is stored (what delta reads have read from the start), it
    /// counts that part locally.
    public func messageCount(in conversation: ConversationID) async throws -> Int {
        let group = try groupID(conversation)
        let hex = Digest.hex(group)
        let run = UUID()
        var seen = Set<String>()
        var before: UInt64 = 0  // 0: from the newest
        var newest: UInt64?
        while true {
            try Task.checkCancellation()
            // Every envelope before `before` is stored already (a delta read or a sync got there, such as a
            // migration's copy running alongside): the rest is counted in the local database, not fetched again.
            if before > 1, Int64(clamping: before - 1) <= (try store.refreshCursor(hex)) {
                for id in try store.contentMessageIDs(groupID: hex, before: Int64(clamping: before)) { seen.insert(id) }
                return seen.count
            }
            let (envelopes, full) = try await queryPages(group, ascending: false, cursor: before, limit: Self.storedPageLimit)
            let isLast = !full
            for opened in try storeEnvelopes(envelopes, in: conversation).map(\.stored) where !opened.isControl {
                seen.insert(opened.id)
            }
            let sequences = envelopes.map(\.sequence)
            guard let oldest = sequences.min() else { return seen.count }
            let through = newest ?? sequences.max() ?? oldest
            newest = through
            // Every envelope of the group from this page's oldest (from the very first when this page is the last)
            // up to the newest seen is stored now.
            coverage.withLock { $0.covered(run, group: hex, from: isLast ? 0 : oldest - 1, through: through) }
            if isLast { return seen.count }
            before = oldest
        }
    }

    /// Envelopes after the cursor in the node's order, each stored, then reported as the change it makes: up to
    /// `limit` (at most 1,000) per call, read in the node's pages of 100 and stored in one transaction.
    ///
    /// Where a live stream has stored the group's envelopes after the cursor without a gap (`XMTPStreamCoverage`),
    /// they are read from the local database instead of being fetched again; the node is asked only for what
    /// follows the stored run. The changes are the same either way, except that a duplicate envelope (one whose
    /// message an earlier sequence already carried) is not reported again; envelopes that could not be opened are
    /// not stored, so a local page may end at a later sequence than the node's would.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        let limit = max(1, min(limit, Self.storedPageLimit))
        let after = try Self.sequence(of: cursor)
        let group = try groupID(conversation)
        let hex = Digest.hex(group)
        var changes: [RemoteChange] = []
        var position = after, read = 0
        if let through = coverage.withLock({ $0.coveredThrough(group: hex, after: after) }) {
            let rows = try store.publishedRows(groupID: hex, after: Int64(clamping: after), through: Int64(clamping: through),
                                               limit: limit)
            changes = try store.reading {
                try rows.flatMap { try self.changes(for: $0, stored: $0, in: conversation) }
            }
            if rows.count >= limit, let last = rows.last?.sequenceID {
                try store.advanceRefreshCursor(hex, from: Int64(clamping: after), to: last)
                return ChangeBatch(changes: changes, cursor: Cursor("s:\(last)"), hasMore: true)
            }
            position = through
            read = rows.count
        }
        let (envelopes, full) = try await queryPages(group, ascending: true, cursor: position, limit: limit - read)
        changes += try ingest(envelopes, in: conversation)
        let last = envelopes.last?.sequence ?? position
        if last > after { try store.advanceRefreshCursor(hex, from: Int64(clamping: after), to: Int64(clamping: last)) }
        return ChangeBatch(changes: changes, cursor: Cursor("s:\(last)"), hasMore: full)
    }

    /// The most envelopes the node returns per query (XMTP's page size).
    static let nodePageLimit = 100
    /// The most envelopes one `changes` call or one step of the count reads and stores (in one transaction).
    static let storedPageLimit = 1000

    /// Up to `limit` envelopes of the group from `cursor` on (exclusive; 0 from the start or, descending, from the
    /// newest) in the node's pages of `nodePageLimit`, and whether the last page was full (more may follow).
    private func queryPages(_ group: [UInt8], ascending: Bool, cursor: UInt64,
                            limit: Int) async throws -> (envelopes: [XMTPNodeEnvelope], full: Bool) {
        var envelopes: [XMTPNodeEnvelope] = []
        var cursor = cursor
        while true {
            let want = min(Self.nodePageLimit, limit - envelopes.count)
            let page = try await node.query(groupID: group, ascending: ascending, cursor: cursor, limit: want)
            envelopes += page
            guard page.count >= want else { return (envelopes, false) }
            guard envelopes.count < limit,
                  let next = ascending ? page.map(\.sequence).max() : page.map(\.sequence).min() else { return (envelopes, true) }
            cursor = next
        }
    }

    // MARK: live

    /// Subscribes to the group from its newest sequence, one envelope a line; each is stored and reported as a
    /// change. `.connected` on every (re)open, `.disconnected` on a drop; reconnects forever with capped backoff.
    public func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        let (stream, continuation) = AsyncStream<AdapterEvent>.makeStream(bufferingPolicy: .unbounded)
        let live = XMTPLiveStream(adapter: self, conversation: conversation, continuation: continuation)
        continuation.onTermination = { _ in Task { await live.stop() } }
        Task { await live.start() }
        return stream
    }

    // MARK: edits, deletes, reactions, receipts

    /// Sends `editMessage{target, text}`; receivers apply it only from the target's sender within 15 minutes.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        try checkTarget(target, in: conversation, verb: "edit", ownOnly: true)
        let edit = XMTPEditMessage(messageID: target.rawValue, editedContent: XMTPText(text).encoded())
        try await sendControl(edit.encoded(), in: conversation)
    }

    /// Sends `deleteMessage{target}`; receivers apply it only from the target's sender within 2 hours.
    public func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        try checkTarget(target, in: conversation, verb: "delete", ownOnly: true)
        try await sendControl(XMTPDeleteMessage(messageID: target.rawValue).encoded(), in: conversation)
    }

    /// Refuses (as every receiver would ignore it) a change of a message the local database knows under another
    /// group than `conversation`'s, or, when `ownOnly`, an edit or delete of a known message by someone else.
    /// Returns the known row.
    @discardableResult
    private func checkTarget(_ target: RemoteID, in conversation: ConversationID, verb: String,
                             ownOnly: Bool) throws -> XMTPMessageRow? {
        let group = Digest.hex(try groupID(conversation))
        guard let row = try store.message(target.rawValue) else { return nil }
        if row.groupID != group {
            throw SwitchboardError(.notFound, "cannot \(verb) message \(target): it is not in conversation \(conversation)")
        }
        if ownOnly, row.sender != localUser.rawValue {
            throw SwitchboardError(.notOwner, "only the sender can \(verb) message \(target)")
        }
        return row
    }

    /// Sends a `reaction:2.0` (added or removed, unicode schema).
    public func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID) async throws {
        let inbox = try checkTarget(target, in: conversation, verb: "react to", ownOnly: false)?.sender ?? ""
        let reaction = XMTPReaction(reference: target.rawValue, referenceInboxID: inbox, action: isActive ? .added : .removed,
                                    content: symbol, schema: .unicode)
        try await sendControl(reaction.encoded(), in: conversation)
    }

    /// `.read` sends a `readReceipt:1.0` (it means "read up to here"); `.delivered` has no XMTP content type and
    /// is a no-op.
    public func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws {
        guard state == .read else { return }
        try await sendControl(XMTPReadReceipt().encoded(), in: conversation)
    }

    // MARK: attachments

    /// Encrypts `attachment:1.0` content of the bytes with a fresh secret, presigns (digest, length), uploads
    /// with progress; the attachment's location is the download URL and its parameters the decryption secrets.
    public func upload(_ attachment: Attachment, data: Data, in conversation: ConversationID,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> Attachment {
        let digest = try attachment.verifiedDigest(of: data, limit: capabilities.maxAttachmentBytes)
        let plaintext = XMTPAttachment(filename: attachment.filename, mimeType: attachment.mimeType, data: [UInt8](data))
            .encoded().encoded()
        let (ciphertext, secrets): ([UInt8], RemoteAttachmentSecrets)
        do {
            (ciphertext, secrets) = try RemoteAttachmentCrypto.encrypt(plaintext: plaintext)
        } catch {
            throw SwitchboardError(.storage, "encrypting \(attachment.filename) failed: \(error)")
        }
        let presigned = try await node.presign(digest: secrets.contentDigest, length: ciphertext.count)
        try await node.put(presigned.uploadURL, body: Data(ciphertext)) { fraction in progress(min(fraction, 0.99)) }
        progress(1)
        let scheme = (URL(string: presigned.downloadURL)?.scheme ?? "https") + "://"
        let parameters = ["contentDigest": secrets.contentDigest, "secret": secrets.secretHex, "salt": secrets.saltHex,
                          "nonce": secrets.nonceHex, "scheme": scheme, "contentLength": String(ciphertext.count),
                          "filename": attachment.filename]
        return attachment.uploaded(data, digest: digest, to: presigned.downloadURL, parameters: parameters)
    }

    /// Fetches the encrypted payload, checks its digest, decrypts, decodes the `attachment:1.0` content and checks
    /// the plaintext SHA-256 (when the attachment carries one).
    public func download(_ attachment: Attachment) async throws -> Data {
        guard let location = attachment.remoteLocation, let url = URL(string: location) else {
            throw SwitchboardError(.notFound, "\(attachment.filename) has no remote copy")
        }
        let parameters = attachment.remoteParameters
        // The encrypted payload: the attachment content plus its codec framing and the cipher's tag.
        let body = try await node.get(url, maximumBytes: Int(capabilities.maxAttachmentBytes) + 64 * 1024)
        let plaintext: [UInt8]
        do {
            let secrets = try RemoteAttachmentSecrets(secretHex: parameters["secret"] ?? "", saltHex: parameters["salt"] ?? "",
                                                      nonceHex: parameters["nonce"] ?? "",
                                                      contentDigest: parameters["contentDigest"] ?? "", contentLength: body.count)
            plaintext = try RemoteAttachmentCrypto.decrypt(ciphertext: [UInt8](body), params: secrets)
        } catch {
            throw SwitchboardError(.storage, "\(attachment.filename): cannot decrypt the downloaded payload: \(error)")
        }
        guard let decoded = try? XMTPAttachment.decode(bytes: plaintext) else {
            throw SwitchboardError(.storage, "\(attachment.filename): the decrypted payload is not attachment content")
        }
        let data = Data(decoded.data)
        if !attachment.sha256.isEmpty, Digest.sha256Hex(data) != attachment.sha256 {
            throw SwitchboardError(.storage, "\(attachment.filename): downloaded bytes do not match the SHA-256")
        }
        return data
    }
}
