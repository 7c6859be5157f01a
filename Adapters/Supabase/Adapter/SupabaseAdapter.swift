import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// The Supabase-like backend behind the `ChatAdapter` contract: PostgREST for writes, history and delta sync,
/// Phoenix realtime for live changes and typing, Storage for attachments.
///
/// IDs are client-assigned: a message's row `id` is its `MessageID`, so `prepare` knows the backend ID without
/// the network, and `publish` is an upsert that ignores duplicates — any retry or replay is harmless.
public final class SupabaseAdapter: ConfiguredAdapter, EditingAdapter, DeletingAdapter, ReactingAdapter, ReceiptAdapter,
    TypingAdapter, UploadingAdapter, BulkPublishingAdapter, OwnMessageFilteringAdapter, MessageCountingAdapter,
    ConversationCheckingAdapter {
    /// Where the server is and who signs in.
    public struct Configuration: AdapterConfiguration {
        /// The server's base URL, e.g. `http://127.0.0.1:54321`.
        public var baseURL: URL
        /// The project's API key (the anon key).
        public var apiKey: String
        /// The signed-in user's JWT (its `sub` must be `localUser`).
        public var accessToken: String
        /// The signed-in user.
        public var localUser: UserID
        /// This backend's name in ID mappings.
        public var backend: BackendID = "supabase"
        /// The storage bucket attachments go to.
        public var bucket = "attachments"
        /// Gives a fresh access token when the current one is about to expire or was refused; nil: use
        /// `accessToken` as long as the server accepts it.
        public var tokenProvider: (@Sendable () async throws -> String)?
        /// The most bytes of one REST, auth or storage answer read (downloads: `maxAttachmentBytes`); a larger or
        /// endless answer is cut there (a retryable `transport` error saying so), so memory stays bounded.
        public var maximumResponseBytes = 16 << 20

        /// A configuration for `localUser` at `baseURL`.
        public init(baseURL: URL, apiKey: String, accessToken: String, localUser: UserID) {
            self.baseURL = baseURL
            self.apiKey = apiKey
            self.accessToken = accessToken
            self.localUser = localUser
        }
    }

    /// The configuration.
    public let configuration: Configuration
    /// Client-assigned IDs; the outbox emulates noSend.
    public let capabilities = AdapterCapabilities(idScheme: .clientAssigned, maxTextBytes: 64 * 1024,
                                                  maxAttachmentBytes: 50 * 1024 * 1024, maxAttachmentsPerMessage: 10,
                                                  hasNativeNoSend: false)
    /// Re-tapping a symbol toggles it (the reactions table keys on message, user and symbol).
    public let reactionPolicy = ReactionPolicy.onePerUserPerSymbol

    let rest: SupabaseREST
    private let live = Locked<[UUID: (ConversationID, SupabaseRealtime)]>([:])

    /// An adapter for `configuration`, sharing `http` (one connection pool) when given.
    public init(configuration: Configuration, http: HTTPClient = HTTPClient()) {
        self.configuration = configuration
        let tokens = SupabaseTokenSource(token: configuration.accessToken, provider: configuration.tokenProvider)
        self.rest = SupabaseREST(baseURL: configuration.baseURL, apiKey: configuration.apiKey, tokens: tokens, http: http,
                                 maximumResponseBytes: configuration.maximumResponseBytes)
    }

    /// Uses a refreshed access token for REST and pushes it to every live channel.
    public func updateAccessToken(_ token: String) async {
        await rest.tokens.set(token)
        for (_, connection) in live.withLock({ Array($0.values) }) { await connection.updateToken(token) }
    }

    /// The members currently online in `conversation` (Phoenix presence on its live channel; empty without one).
    public func onlineMembers(in conversation: ConversationID) async -> Set<UserID> {
        var online: Set<UserID> = []
        for connection in live.withLock({ $0.values.filter { $0.0 == conversation }.map(\.1) }) {
            online.formUnion(await connection.onlineUsers())
        }
        return online
    }

    // MARK: prepare / publish

    /// Encodes the message as its row; the backend ID is the row ID, known now.
    nonisolated(nonsending) public func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        guard message.text.utf8.count <= capabilities.maxTextBytes else {
            throw SwitchboardError(.contentTooLarge, "text exceeds \(capabilities.maxTextBytes) bytes")
        }
        guard UUIDText.isUUID(message.conversation.rawValue) else {
            throw SwitchboardError(.unknownConversation, "Supabase conversation IDs are UUIDs (got \(message.conversation))")
        }
        let row = SupabaseRows.messageRow(message)
        return PreparedMessage(id: message.id, conversation: message.conversation,
                               remoteID: RemoteID(SupabaseRows.rowID(for: message.id)), payload: Data(row.serialized.utf8))
    }

    /// Upserts the row ignoring duplicates; on a replay (`[]`) reads the stored row for the server time.
    public func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        // The payload is the row's JSON already (`prepare` made it): sent as it is, and only the columns the
        // receipt needs come back.
        let id = try Self.rowID(of: prepared)
        let rows = try await rest.write(.post, "messages", query: Self.publishQuery, json: prepared.payload,
                                        prefer: "resolution=ignore-duplicates,return=representation")
        var stored = rows.first
        if stored == nil {
            stored = try await rest.select("messages", [("select", "id,created_at,sender_id"), ("id", "eq.\(id)")]).first
            guard let existing = stored else {
                throw SwitchboardError(.refused, "message \(id) was neither inserted nor readable")
            }
            if existing["sender_id"]?.stringValue != localUser.rawValue {
                throw SwitchboardError(.conflict, "message ID \(id) is taken by another sender")
            }
        }
        let time = stored?["created_at"]?.stringValue.flatMap(SupabaseTimestamp.parse)
        return PublishReceipt(remoteID: RemoteID(id), serverTime: time)
    }

    /// The query of a publish: upsert by row ID, and return only what a receipt needs.
    public static let publishQuery = [("on_conflict", "id"), ("select", "id,created_at")]

    /// Rows per bulk upsert request (a chunk also ends before its body passes `bulkBodyBytes`).
    public var bulkPublishLimit: Int { 1000 }
    /// True: the row ID follows from the key alone and a repeated upsert ignores the duplicate.
    public var republishesByKey: Bool { true }
    /// The largest bulk request body built (the server refuses REST bodies above 1 MiB).
    static let bulkBodyBytes = 512 * 1024
    /// Row IDs per read-back request for rows a bulk upsert found already there (keeps the URL short).
    static let readBackChunk = 100

    /// A real bulk upsert: one PostgREST POST of a JSON array per chunk (`on_conflict=id`, duplicates ignored,
    /// `return=representation` of `id,created_at` only); rows already there (a replay) are read back per chunk to check their sender and
    /// get their server time. Returns one receipt per message, in order; a message given twice is sent once.
    public func publishAll(_ prepared: [PreparedMessage]) async throws -> [PublishReceipt] {
        let ids = try prepared.map(Self.rowID(of:))
        var times: [String: Date] = [:]
        var sent = Set<String>()
        var start = 0
        while start < prepared.count {
            // The prepared payloads are row JSON already: a chunk's body is their array, written as it is.
            var body = Data("[".utf8)
            var chunkIDs: [String] = []
            var end = start
            while end < prepared.count, chunkIDs.count < bulkPublishLimit {
                let size = prepared[end].payload.count + 1
                if !chunkIDs.isEmpty, body.count + size + 1 > Self.bulkBodyBytes { break }
                if sent.insert(ids[end]).inserted {
                    if !chunkIDs.isEmpty { body.append(UInt8(ascii: ",")) }
                    body.append(prepared[end].payload)
                    chunkIDs.append(ids[end])
                }
                end += 1
            }
            body.append(UInt8(ascii: "]"))
            if !chunkIDs.isEmpty {
                for (id, time) in try await upsertChunk(body, ids: chunkIDs) { times[id] = time }
            }
            start = end
        }
        return ids.map { PublishReceipt(remoteID: RemoteID($0), serverTime: times[$0]) }
    }

    /// The row ID a prepared message publishes under: its remote ID when its payload is a JSON object (as
    /// `prepare` makes it), else the `id` its payload holds; invalid when neither.
    static func rowID(of prepared: PreparedMessage) throws -> String {
        let first = prepared.payload.first { !(" \t\r\n".utf8.contains($0)) }
        if let remote = prepared.remoteID?.rawValue, first == UInt8(ascii: "{"), UUIDText.isUUID(remote) {
            return remote
        }
        guard let row = JSONValue.parseOrNil(prepared.payload), let id = row["id"]?.stringValue else {
            throw SwitchboardError(.invalidArgument, "prepared payload is not a message row")
        }
        return id
    }

    /// Upserts one chunk of rows (a JSON array) in one request; returns the server time of each row, inserted now or
    /// before.
    private func upsertChunk(_ body: Data, ids: [String]) async throws -> [String: Date] {
        let inserted = try await rest.write(.post, "messages", query: [("on_conflict", "id"), ("select", "id,created_at")],
                                            json: body, prefer: "resolution=ignore-duplicates,return=representation")
        var times: [String: Date] = [:]
        var found = Set<String>()
        for row in inserted {
            guard let id = row["id"]?.stringValue else { continue }
            found.insert(id)
            if let time = row["created_at"]?.stringValue.flatMap(SupabaseTimestamp.parse) { times[id] = time }
        }
        let missing = ids.filter { !found.contains($0) }
        for offset in stride(from: 0, to: missing.count, by: Self.readBackChunk) {
            let part = missing[offset..<min(missing.count, offset + Self.readBackChunk)]
            let existing = try await rest.select("messages", [("select", "id,created_at,sender_id"),
                                                              ("id", "in.(" + part.joined(separator: ",") + ")")])
            for row in existing {
                guard let id = row["id"]?.stringValue else { continue }
                if row["sender_id"]?.stringValue != localUser.rawValue {
                    throw SwitchboardError(.conflict, "message ID \(id) is taken by another sender")
                }
                found.insert(id)
                if let time = row["created_at"]?.stringValue.flatMap(SupabaseTimestamp.parse) { times[id] = time }
            }
        }
        if let lost = ids.first(where: { !found.contains($0) }) {
            throw SwitchboardError(.refused, "message \(lost) was neither inserted nor readable")
        }
        return times
    }

    // MARK: history and delta sync

    /// The newest version visible in the conversation, per table (messages, reactions, receipts; read at once).
    public func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        async let messages = newestVersion(of: "messages", in: conversation)
        async let reactions = newestVersion(of: "reactions", in: conversation)
        async let receipts = newestVersion(of: "receipts", in: conversation)
        return SupabaseChangeCursor(versions: try await [messages, reactions, receipts]).cursor
    }

    /// The newest version of `table`'s rows in the conversation (0 when it has none).
    private func newestVersion(of table: String, in conversation: ConversationID) async throws -> Int64 {
        let rows = try await rest.select(table, [("select", "version"), ("conversation_id", "eq.\(conversation.rawValue)"),
                                                 ("order", "version.desc"), ("limit", "1")])
        return rows.first?["version"]?.intValue ?? 0
    }

    /// A page of messages older than `cursor` by (created_at, id), oldest first, with their reactions and receipts.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        var query: [(String, String)] = [("conversation_id", "eq.\(conversation.rawValue)"),
                                         ("order", "created_at.desc,id.desc"), ("limit", String(max(1, limit)))]
        if let cursor {
            guard let position = HistoryCursor(cursor) else {
                throw SwitchboardError(.invalidArgument, "not a Supabase history cursor: \(cursor)")
            }
            let time = SupabaseTimestamp.format(position.createdAt)
            query.append(("or", "(created_at.lt.\(time),and(created_at.eq.\(time),id.lt.\(position.id)))"))
        }
        let rows = try await rest.select("messages", query)
        let messages = rows.compactMap(SupabaseRows.message).reversed()
        guard !messages.isEmpty else { return HistoryPage(messages: [], olderCursor: nil) }
        let ids = "in.(" + messages.map(\.remoteID.rawValue).joined(separator: ",") + ")"
        let reactions = try await rest.select("reactions", [("message_id", ids), ("active", "is.true")])
            .compactMap(SupabaseRows.reaction)
        let receipts = try await rest.select("receipts", [("message_id", ids)]).compactMap(SupabaseRows.receipt)
        let older = rows.count >= limit ? messages.first.map { HistoryCursor(createdAt: $0.sentAt, id: $0.remoteID.rawValue).cursor } : nil
        return HistoryPage(messages: Array(messages), reactions: reactions, receipts: receipts, olderCursor: older)
    }

    /// Reads the conversation's row, which row-level security shows only to its members: none means the
    /// conversation does not exist or the user is not a member (the two look the same from outside, by design).
    public func checkAccess(to conversation: ConversationID) async throws {
        try Self.requireConversationID(conversation)
        let rows = try await rest.select("conversations", [("select", "id"), ("id", "eq.\(conversation.rawValue)")])
        guard rows.isEmpty else { return }
        throw SwitchboardError(.unknownConversation, "conversation \(conversation) does not exist, or \(localUser) is not a "
                               + "member of it (row-level security shows members only their conversations)")
    }

    /// The conversation's rows the user may read, counted by the server: one `HEAD` with `Prefer: count=exact`
    /// (a page of at most one ID, the total in `Content-Range`) instead of paging the history.
    public func messageCount(in conversation: ConversationID) async throws -> Int {
        let url = rest.url("/rest/v1/messages", [("conversation_id", "eq.\(conversation.rawValue)"), ("select", "id"),
                                                 ("limit", "1")])
        let response = try await rest.send(HTTPRequest(method: .head, url: url, headers: rest.headers(prefer: "count=exact"),
                                                       timeout: .seconds(30)))
        guard let range = response.headers["Content-Range"], let slash = range.lastIndex(of: "/"),
              let total = Int(range[range.index(after: slash)...]), total >= 0 else {
            throw SwitchboardError(.transport, "the server's count answer has no total: Content-Range "
                                   + (response.headers["Content-Range"] ?? "missing"))
        }
        return total
    }

    /// Everything after `cursor`'s version, merged across the three tables in version order.
    ///
    /// The three tables are read at once, each after its own version in the cursor. Each table's cursor moves only
    /// over rows of that table: versions become visible in commit order, so everything up to the last row read
    /// from a table is visible, but three reads see three moments, and one shared cursor could pass over a row
    /// committed in one table between the reads of the others.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        try await readChanges(in: conversation, after: cursor, limit: limit, skippingOwnPlainMessages: false)
    }

    /// `changes` without the local user's messages that were neither edited nor deleted, filtered by the server
    /// (`or=(sender_id.neq.<me>,edited_at.not.is.null,deleted_at.not.is.null)`).
    ///
    /// So that the messages cursor still moves past the rows left out, the newest message version of the
    /// conversation is read first and the page is bounded by it: versions become visible in commit order, so every
    /// version up to that one is visible, and when the page is not full the cursor moves to it.
    public func changesSkippingOwnPlainMessages(in conversation: ConversationID, after cursor: Cursor?,
                                                limit: Int) async throws -> ChangeBatch {
        try await readChanges(in: conversation, after: cursor, limit: limit, skippingOwnPlainMessages: true)
    }

    private func readChanges(in conversation: ConversationID, after cursor: Cursor?, limit: Int,
                             skippingOwnPlainMessages: Bool) async throws -> ChangeBatch {
        let start: SupabaseChangeCursor
        if let cursor {
            guard let parsed = SupabaseChangeCursor(cursor) else {
                throw SwitchboardError(.invalidArgument, "not a Supabase change cursor: \(cursor)")
            }
            start = parsed
        } else {
            start = SupabaseChangeCursor(versions: [0, 0, 0])
        }
        let limit = max(1, limit)
        let conversationFilter = ("conversation_id", "eq.\(conversation.rawValue)")
        // The newest message version first (see above); nil when every message is read.
        let ceiling: Int64? = skippingOwnPlainMessages
            ? max(start.versions[0], try await newestVersion(of: "messages", in: conversation))
            : nil
        let own = SupabaseRows.quotedFilterValue(localUser.rawValue)
        func read(_ index: Int) async throws -> [JSONValue] {
            var query: [(String, String)] = [conversationFilter, ("version", "gt.\(start.versions[index])")]
            if index == 0, let ceiling {
                query += [("version", "lte.\(ceiling)"),
                          ("or", "(sender_id.neq.\(own),edited_at.not.is.null,deleted_at.not.is.null)")]
            }
            return try await rest.select(SupabaseChangeCursor.tables[index], query + [("order", "version.asc"), ("limit", String(limit))])
        }
        async let messages = read(0)
        async let reactions = read(1)
        async let receipts = read(2)
        let pages = try await [messages, reactions, receipts]
        var merged: [(version: Int64, table: Int, change: RemoteChange?)] = []
        for (index, rows) in pages.enumerated() {
            for row in rows {
                guard let version = row["version"]?.intValue else { continue }
                merged.append((version, index, SupabaseRows.change(table: SupabaseChangeCursor.tables[index], row: row)))
            }
        }
        merged.sort { $0.version < $1.version }
        let taken = merged.prefix(limit)
        var next = start
        for item in taken { next.versions[item.table] = max(next.versions[item.table], item.version) }
        let hasMore = pages.contains { $0.count >= limit } || merged.count > limit
        // Every message up to the ceiling was seen when the messages page was not full and all of it was taken.
        if let ceiling, pages[0].count < limit, taken.filter({ $0.table == 0 }).count == pages[0].count {
            next.versions[0] = max(next.versions[0], ceiling)
        }
        return ChangeBatch(changes: taken.compactMap(\.change), cursor: next.cursor, hasMore: hasMore)
    }

    // MARK: live

    /// Joins the conversation's realtime channel; reports `connected` on every (re)join so the engine resyncs.
    public func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        liveEvents(in: conversation, skippingOwnMessages: false)
    }

    /// Joins the conversation's realtime channel with its messages subscribed as
    /// `conversation_id=eq.<id>,sender_id=neq."<me>"` (realtime ANDs comma-separated conditions): the server neither
    /// checks nor sends the local user's own rows.
    public func liveEventsSkippingOwnMessages(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        liveEvents(in: conversation, skippingOwnMessages: true)
    }

    private func liveEvents(in conversation: ConversationID, skippingOwnMessages: Bool) -> AsyncStream<AdapterEvent> {
        let (stream, continuation) = AsyncStream<AdapterEvent>.makeStream(bufferingPolicy: .unbounded)
        let connection = SupabaseRealtime(url: realtimeURL(), conversation: conversation, localUser: localUser,
                                          skippingOwnMessages: skippingOwnMessages, tokens: rest.tokens,
                                          continuation: continuation)
        let key = UUID()
        live.withLock { $0[key] = (conversation, connection) }
        continuation.onTermination = { [weak self] _ in
            self?.live.withLock { _ = $0.removeValue(forKey: key) }
            Task { await connection.stop() }
        }
        Task { await connection.start() }
        return stream
    }

    /// `ws://host:port/realtime/v1/websocket?apikey=…&vsn=2.0.0`.
    func realtimeURL() -> URL {
        var components = URLComponents(url: configuration.baseURL, resolvingAgainstBaseURL: false)
        components?.scheme = configuration.baseURL.scheme == "https" ? "wss" : "ws"
        components?.path = "/realtime/v1/websocket"
        components?.queryItems = [URLQueryItem(name: "apikey", value: configuration.apiKey),
                                  URLQueryItem(name: "vsn", value: "2.0.0")]
        return components?.url ?? configuration.baseURL
    }

    // MARK: edits, deletes, reactions, receipts, typing

    /// Replaces the text of `target` in `conversation`; the server enforces sender-only and the 15-minute window.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        try await updateOwnMessage(target, in: conversation, body: ["body": .string(text)], what: "edit")
    }

    /// Soft-deletes (sets `deleted_at`), so delta sync carries the deletion; the server enforces the 2-hour window.
    public func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        try await updateOwnMessage(target, in: conversation,
                                   body: ["deleted_at": .string(SupabaseTimestamp.format(Date()))], what: "delete")
    }

    /// PATCHes the row with ID `target` and conversation `conversation` (both filters, so a call naming one
    /// conversation can never change a row of another); when no row changed, says why.
    private func updateOwnMessage(_ target: RemoteID, in conversation: ConversationID, body: JSONValue,
                                  what: String) async throws {
        try Self.requireConversationID(conversation)
        let rows = try await rest.write(.patch, "messages",
                                        query: [("id", "eq.\(target.rawValue)"), ("conversation_id", "eq.\(conversation.rawValue)")],
                                        body: body, prefer: "return=representation")
        guard rows.isEmpty else { return }
        // Nothing matched: read the row (members see their conversations' rows) to tell the caller which rule held.
        let found = try await rest.select("messages", [("select", "conversation_id,sender_id"), ("id", "eq.\(target.rawValue)")])
        if let row = found.first, let actual = row["conversation_id"]?.stringValue,
           UUIDText.canonical(actual) != UUIDText.canonical(conversation.rawValue) {
            throw SwitchboardError(.notFound, "\(what) refused: message \(target) is not in conversation \(conversation)")
        }
        throw SwitchboardError(.refused, "\(what) refused: message \(target) is not yours or not visible")
    }

    /// Throws `unknownConversation` unless `conversation` is a UUID, as every conversation ID here is.
    private static func requireConversationID(_ conversation: ConversationID) throws {
        guard UUIDText.isUUID(conversation.rawValue) else {
            throw SwitchboardError(.unknownConversation, "Supabase conversation IDs are UUIDs (got \(conversation))")
        }
    }

    /// Sets the local user's `symbol` on `target` active or not (an upsert, so repeating it is harmless). The row
    /// names `conversation`, and the server refuses it when the message is in another one.
    public func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID) async throws {
        try Self.requireConversationID(conversation)
        let row: JSONValue = ["message_id": .string(target.rawValue), "user_id": .string(localUser.rawValue),
                              "symbol": .string(symbol), "active": .bool(isActive),
                              "conversation_id": .string(conversation.rawValue)]
        _ = try await rest.write(.post, "reactions", query: [("on_conflict", "message_id,user_id,symbol")], body: row,
                                 prefer: "resolution=merge-duplicates,return=minimal")
    }

    /// Upserts the local user's receipt (naming `conversation`, as a reaction does); the server never lets read step
    /// back to delivered.
    public func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws {
        try Self.requireConversationID(conversation)
        let row: JSONValue = ["message_id": .string(target.rawValue), "user_id": .string(localUser.rawValue),
                              "state": .string(state.rawValue), "conversation_id": .string(conversation.rawValue)]
        _ = try await rest.write(.post, "receipts", query: [("on_conflict", "message_id,user_id")], body: row,
                                 prefer: "resolution=merge-duplicates,return=minimal")
    }

    /// Broadcasts typing on the conversation's live channel (dropped when no live stream is joined).
    public func sendTyping(_ isTyping: Bool, in conversation: ConversationID) async throws {
        let connections = live.withLock { $0.values.filter { $0.0 == conversation }.map(\.1) }
        for connection in connections { await connection.sendTyping(isTyping) }
    }

    // MARK: attachments

    /// Uploads through a signed upload URL with progress; the attachment's location is `bucket/path`.
    public func upload(_ attachment: Attachment, data: Data, in conversation: ConversationID,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> Attachment {
        let digest = try attachment.verifiedDigest(of: data, limit: capabilities.maxAttachmentBytes)
        let path = "\(conversation.rawValue)/\(attachment.id.rawValue)/\(Self.safeName(attachment.filename))"
        let objectPath = "\(configuration.bucket)/\(path)"
        let sign = HTTPRequest(method: .post, url: rest.url("/storage/v1/object/upload/sign/\(Self.encodePath(objectPath))"),
                               headers: rest.headers(json: true), body: Data("{}".utf8), timeout: .seconds(30))
        let signed = try await rest.send(sign)
        guard let json = JSONValue.parseOrNil(signed.body), let relative = json["url"]?.stringValue else {
            throw SwitchboardError(.transport, "signed upload URL missing in the storage answer", retryable: true)
        }
        var headers = HTTPHeaders()
        headers.add("Content-Type", attachment.mimeType)
        headers.add("x-upsert", "true")
        let put = HTTPRequest(method: .put, url: rest.url("/storage/v1" + relative), headers: headers, timeout: .seconds(120))
        _ = try await rest.upload(put, body: data) { fraction in progress(min(fraction, 0.99)) }
        progress(1)
        return attachment.uploaded(data, digest: digest, to: objectPath)
    }

    /// Downloads `bucket/path` with the user's token and checks the SHA-256 before returning the bytes.
    public func download(_ attachment: Attachment) async throws -> Data {
        guard let location = attachment.remoteLocation else {
            throw SwitchboardError(.notFound, "\(attachment.filename) has no remote copy")
        }
        let request = HTTPRequest(method: .get, url: rest.url("/storage/v1/object/authenticated/\(Self.encodePath(location))"),
                                  headers: rest.headers(), timeout: .seconds(120),
                                  maximumResponseBytes: Int(capabilities.maxAttachmentBytes))
        let response = try await rest.send(request)
        if !attachment.sha256.isEmpty, Digest.sha256Hex(response.body) != attachment.sha256 {
            throw SwitchboardError(.storage, "\(attachment.filename): downloaded bytes do not match the SHA-256")
        }
        return response.body
    }

    /// A file name safe as one storage path segment.
    static func safeName(_ name: String) -> String {
        let cleaned = name.map { character -> Character in
            character.isLetter || character.isNumber || "-_.".contains(character) ? character : "_"
        }
        let text = String(cleaned).trimmingCharacters(in: CharacterSet(charactersIn: "."))
        return text.isEmpty ? "file" : String(text.prefix(100))
    }

    /// Percent-encodes each segment of a storage path.
    static func encodePath(_ path: String) -> String {
        path.split(separator: "/").map { SupabaseREST.encode(String($0)) }.joined(separator: "/")
    }
}

/// A delta-sync position: the last version read from each of `messages`, `reactions` and `receipts`, written
/// `v:<m>,<r>,<c>`. `v:<n>` (one version for all three, as `latestCursor` wrote before) still parses.
struct SupabaseChangeCursor: Hashable {
    /// The tables in cursor order.
    static let tables = ["messages", "reactions", "receipts"]
    /// The last version read per table, in `tables` order.
    var versions: [Int64]

    /// A cursor from three versions.
    init(versions: [Int64]) {
        precondition(versions.count == Self.tables.count)
        self.versions = versions
    }

    /// Parses `v:<m>,<r>,<c>` or `v:<n>`; nil for anything else (negative versions included).
    init?(_ cursor: Cursor) {
        guard cursor.rawValue.hasPrefix("v:") else { return nil }
        let parts = cursor.rawValue.dropFirst(2).split(separator: ",", omittingEmptySubsequences: false)
        let values = parts.compactMap { Int64($0) }.filter { $0 >= 0 }
        guard values.count == parts.count else { return nil }
        switch values.count {
        case 1: versions = Array(repeating: values[0], count: Self.tables.count)
        case Self.tables.count: versions = values
        default: return nil
        }
    }

    /// The cursor text.
    var cursor: Cursor { Cursor("v:" + versions.map(String.init).joined(separator: ",")) }
}

/// A history position: the oldest message of a page, by (created_at, id).
struct HistoryCursor {
    /// The message's server time.
    var createdAt: Date
    /// The message's row ID.
    var id: String

    /// A position from its parts.
    init(createdAt: Date, id: String) {
        self.createdAt = createdAt
        self.id = id
    }

    /// Parses `h:<micros>:<uuid>`.
    init?(_ cursor: Cursor) {
        let parts = cursor.rawValue.split(separator: ":", maxSplits: 2)
        guard parts.count == 3, parts[0] == "h", let micros = Int64(parts[1]), UUIDText.isUUID(String(parts[2]))
        else { return nil }
        createdAt = Date(timeIntervalSince1970: Double(micros) / 1_000_000)
        id = String(parts[2])
    }

    /// The cursor text.
    var cursor: Cursor {
        Cursor("h:\(Int64((createdAt.timeIntervalSince1970 * 1_000_000).rounded())):\(id)")
    }
}
