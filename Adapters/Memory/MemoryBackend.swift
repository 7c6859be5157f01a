import Foundation
import SwitchboardCore

/// An in-process chat server: the reference semantics every other adapter is compared against.
///
/// It behaves like a real server: publishes are idempotent by key, edit and delete windows are checked with the
/// server's clock, history pages by a server-assigned sequence and delta sync by a global change version, and live
/// subscribers hear every change (their own included). `faults` injects network trouble. With a journal, every
/// mutation is appended to a file and replayed by the next backend opened on it.
public final class MemoryBackend: Sendable {
    /// Names this backend in ID mappings.
    public let backendID: BackendID
    /// How messages are named.
    public let scheme: IDScheme
    /// How re-tapping a reaction behaves.
    public let reactionPolicy: ReactionPolicy
    /// How long after sending the sender may edit.
    public let editWindow: TimeInterval
    /// How long after sending the sender may delete.
    public let deleteWindow: TimeInterval
    /// What the server accepts.
    public let limits: MemoryWire.Limits
    /// Faults to inject and counters to read.
    public let faults: FaultPlan
    /// The journal file, when mutations are journaled.
    public let journal: URL?

    let server: MemoryServer
    private let clock: @Sendable () -> Date

    /// Creates a server (replaying `journal` when given) under an ID scheme, a reaction policy and a clock.
    ///
    /// The clock is read under the server's lock, so it must not call back into the backend. A journal has one
    /// writer at a time: open a second backend on it only after the first is gone (or its process was killed).
    public init(scheme: IDScheme, reactionPolicy: ReactionPolicy = .onePerUserPerSymbol,
                clock: @escaping @Sendable () -> Date = { Date() }, journal: URL? = nil,
                editWindow: TimeInterval = 15 * 60, deleteWindow: TimeInterval = 2 * 3600,
                limits: MemoryWire.Limits = MemoryWire.Limits(), backendID: BackendID = BackendID("memory")) throws {
        let configuration = MemoryConfiguration(backendID: backendID, scheme: scheme, reactionPolicy: reactionPolicy,
                                                editWindow: editWindow, deleteWindow: deleteWindow, limits: limits)
        var opened: MemoryJournal?
        var records: [JournalRecord] = []
        if let journal { (opened, records) = try MemoryJournal.open(journal) }
        let state: ServerState
        do {
            state = try ServerState(configuration: configuration, journal: opened, replaying: records)
        } catch {
            opened?.close()
            throw error
        }
        self.server = MemoryServer(state: state)
        self.faults = FaultPlan(server: server)
        self.backendID = backendID
        self.scheme = scheme
        self.reactionPolicy = reactionPolicy
        self.editWindow = editWindow
        self.deleteWindow = deleteWindow
        self.limits = limits
        self.journal = journal
        self.clock = clock
    }

    /// What an adapter of this backend declares.
    public var capabilities: AdapterCapabilities {
        AdapterCapabilities(idScheme: scheme, maxTextBytes: limits.maxTextBytes,
                            maxAttachmentBytes: limits.maxAttachmentBytes,
                            maxAttachmentsPerMessage: limits.maxAttachmentsPerMessage, hasNativeNoSend: false)
    }

    /// An adapter signed in as `user`.
    public func makeAdapter(for user: UserID) -> MemoryAdapter {
        MemoryAdapter(backend: self, user: user)
    }

    /// The server's current time.
    public var now: Date { clock() }

    // MARK: Conversations

    /// Creates a conversation with its members (or adds missing members to an existing one).
    public func createConversation(_ id: ConversationID, members: [UserID]) throws {
        try server.state.withLock { try $0.createConversation(id, members: members) }
    }

    /// Adds a member to an existing conversation.
    public func addMember(_ user: UserID, to conversation: ConversationID) throws {
        try server.state.withLock { try $0.addMember(user, to: conversation) }
    }

    /// The members of a conversation (empty when unknown).
    public func members(of conversation: ConversationID) -> Set<UserID> {
        server.state.withLock { $0.conversations[conversation]?.members ?? [] }
    }

    // MARK: Messages

    /// Stores `message` sent by `user` once per idempotency key and notifies subscribers; applies publish faults.
    public func publish(_ message: OutgoingMessage, as user: UserID) async throws -> PublishReceipt {
        let delay = server.state.withLock { state in
            state.faults.publishCallCount += 1
            return state.faults.publishDelay
        }
        do {
            if delay > .zero { try await Task.sleep(for: delay) }
            while server.state.withLock({ $0.faults.publishesHeld }) { try await Task.sleep(for: .milliseconds(2)) }
        } catch {
            throw SwitchboardError(.cancelled, "publish cancelled", retryable: true)
        }
        return try server.state.withLock { try $0.publish(message, as: user, now: clock()) }
    }

    /// Replaces the text of `target`; only its sender, within the edit window.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String, as user: UserID) throws {
        try server.state.withLock { try $0.edit(target, in: conversation, text: text, as: user, now: clock()) }
    }

    /// Tombstones `target` (text emptied); only its sender, within the delete window.
    public func delete(_ target: RemoteID, in conversation: ConversationID, as user: UserID) throws {
        try server.state.withLock { try $0.delete(target, in: conversation, as: user, now: clock()) }
    }

    /// Adds or removes `user`'s reaction `symbol` on `target` under the reaction policy.
    public func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID,
                            as user: UserID) throws {
        try server.state.withLock {
            try $0.setReaction(symbol, isActive: isActive, on: target, in: conversation, as: user, now: clock())
        }
    }

    /// Records `user`'s receipt on `target` if it climbs (delivered < read); lower ones are ignored.
    public func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID,
                            as user: UserID) throws {
        try server.state.withLock {
            try $0.sendReceipt(state, for: target, in: conversation, as: user, now: clock())
        }
    }

    /// Forwards a typing indicator to the other members' live streams; never stored.
    public func sendTyping(_ isTyping: Bool, in conversation: ConversationID, as user: UserID) throws {
        try server.state.withLock { state in
            try state.requireOnline(user)
            try state.requireMember(user, of: conversation)
            state.deliverTyping(isTyping, in: conversation, from: user)
        }
    }

    // MARK: Blobs

    /// Stores `data` in four chunks, reporting progress after each, and returns its location.
    public func upload(_ data: Data, filename: String, in conversation: ConversationID, as user: UserID,
                       progress: @escaping @Sendable (Double) -> Void) async throws -> String {
        let failing = try server.state.withLock {
            try $0.beginUpload(byteCount: data.count, filename: filename, in: conversation, as: user)
        }
        let chunks = 4
        for chunk in 1..<chunks {
            await Task.yield()
            if Task.isCancelled { throw SwitchboardError(.cancelled, "upload of \(filename) cancelled", retryable: true) }
            if failing && chunk == chunks - 1 {
                throw SwitchboardError(.transport, "upload of \(filename) failed (injected)", retryable: true)
            }
            progress(Double(chunk) / Double(chunks))
        }
        let location = try server.state.withLock { try $0.storeBlob(data, filename: filename, as: user) }
        progress(1)
        return location
    }

    /// The bytes stored at `location`; `notFound` for an unknown location.
    public func download(_ location: String, as user: UserID) throws -> Data {
        try server.state.withLock { try $0.blob(at: location, as: user) }
    }

    // MARK: Reading

    /// The change-feed position now (the global version).
    public func latestCursor(in conversation: ConversationID, as user: UserID) throws -> Cursor {
        try server.state.withLock { try $0.latestCursor(in: conversation, as: user) }
    }

    /// Up to `limit` messages older than `cursor` (newest when nil), oldest first, with reactions and receipts.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int,
                        as user: UserID) throws -> HistoryPage {
        try server.state.withLock { try $0.history(in: conversation, before: cursor, limit: limit, as: user) }
    }

    /// The number of messages `history` lists in `conversation` for `user`, deleted ones included.
    public func messageCount(in conversation: ConversationID, as user: UserID) throws -> Int {
        try server.state.withLock { try $0.messageCount(in: conversation, as: user) }
    }

    /// Everything that changed after `cursor`, in version order, each item in its current state.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int,
                        as user: UserID) throws -> ChangeBatch {
        try server.state.withLock { try $0.changes(in: conversation, after: cursor, limit: limit, as: user) }
    }

    /// A live stream of `conversation` for `user`: `.connected` first, then every change; ends when the consumer stops.
    public func subscribe(to conversation: ConversationID, as user: UserID) -> AsyncStream<AdapterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        let token = server.state.withLock { $0.subscribe(to: conversation, as: user, continuation: continuation) }
        if let token {
            // Not under the server's lock here: a consumer's cancellation runs this while the runtime holds that
            // task's status lock, and a publish holds the server's lock while its yield needs the same status lock.
            // Taking the server's lock here deadlocked the two (and with them the two-thread cooperative pool).
            // Until the unsubscribe runs, yields to the ended stream are dropped by the stream itself.
            continuation.onTermination = { [weak server] _ in
                guard let server else { return }
                Task { server.unsubscribe(token) }
            }
        } else {
            continuation.finish()
        }
        return stream
    }

    // MARK: Counters

    /// How many publish calls reached the backend (failed ones included).
    public var publishCallCount: Int { faults.publishCallCount }

    /// How many message rows the server holds in a conversation.
    public func storedMessageCount(in conversation: ConversationID) -> Int {
        faults.storedMessageCount(in: conversation)
    }

    /// The server rows of a conversation, in seq order.
    public func messages(in conversation: ConversationID) -> [MemoryMessageRow] {
        faults.messages(in: conversation)
    }

    /// How many live subscriptions are open.
    public var subscriberCount: Int {
        server.state.withLock { $0.subscribers.count }
    }
}
