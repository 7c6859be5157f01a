import Foundation
import TestSupport
import MemoryAdapter
import SwitchboardCore
import SwitchboardEngine
import SwitchboardStore
import Testing

// MARK: - Clock

/// Real time plus an offset tests can move forward (the engine's outbox needs time to flow; windows need jumps).
final class OffsetClock: Sendable {
    private let offset = Locked<TimeInterval>(0)

    /// The current (shifted) time.
    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// Jumps forward.
    func advance(by interval: TimeInterval) { offset.withLock { $0 += interval } }
}

// MARK: - Polling

/// Polls `condition` until it holds or `timeout` passes; returns whether it held. Never an assertion by itself.
func eventually(timeout: TimeInterval = 30, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

/// Runs `body` and checks it throws a `SwitchboardError` with `code`.
func expectError(_ code: SwitchboardError.Code, _ what: String = "", sourceLocation: SourceLocation = #_sourceLocation,
                 _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("\(what): expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as SwitchboardError {
        #expect(error.code == code, "\(what): \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(what): expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

// MARK: - Event recording

/// Records a client's ordered event stream in the background.
final class EventLog: Sendable {
    private let items = Locked<[SequencedEvent]>([])
    private let consumer = Locked<Task<Void, Never>?>(nil)

    private init() {}

    /// Starts consuming `stream`.
    static func recording(_ stream: AsyncStream<SequencedEvent>) -> EventLog {
        let log = EventLog()
        let task = Task { [log] in
            for await event in stream { log.items.withLock { $0.append(event) } }
        }
        log.consumer.withLock { $0 = task }
        return log
    }

    /// Starts recording a conversation's events of `client`.
    static func recording(_ client: ChatClient, _ conversation: ConversationID) async throws -> EventLog {
        recording(try await client.events(in: conversation))
    }

    /// Everything recorded so far.
    var events: [SequencedEvent] { items.withLock { $0 } }

    /// The events (without sequence numbers) that concern one message.
    func events(of id: MessageID) -> [ConversationEvent] {
        events.map(\.event).filter { event in
            if case .removed(let removed) = event { return removed == id }
            return event.message?.id == id
        }
    }

    /// Waits until `predicate` holds for the recorded events.
    func waitUntil(timeout: TimeInterval = 30, _ predicate: ([SequencedEvent]) -> Bool) async -> Bool {
        await eventually(timeout: timeout) { predicate(events) }
    }

    /// Stops consuming.
    func stop() { consumer.withLock { $0?.cancel() } }
}

// MARK: - A wrapping adapter with extra faults

/// An error that is not a `SwitchboardError`, as a buggy adapter might throw.
struct AdapterExploded: Error, Sendable, CustomStringConvertible {
    var description: String { "the adapter exploded" }
}

/// Forwards everything to a `MemoryAdapter`, adding what the memory backend cannot do on its own: an adapter that
/// throws around publish, slow uploads, foreign messages without idempotency keys, held and injected live events.
/// A held message (by text) is withheld from the live stream, history and delta sync until `releaseHeld()`
/// delivers it live: to the client it does not exist yet.
final class WrappedAdapter: ChatAdapter, EditingAdapter, DeletingAdapter, ReactingAdapter, ReceiptAdapter, TypingAdapter,
    UploadingAdapter, Sendable
{
    struct Knobs: Sendable {
        var throwBeforePublish = false
        var throwAfterPublish = false
        /// What those throws throw: by default an error nobody classified (which is not retried).
        var thrown: any Error = AdapterExploded()
        /// How long a publish takes to come back once the backend has the message; cancelling the caller does not
        /// shorten it (an answer already on its way over the network).
        var publishAnswerDelay: Duration = .zero
        var uploadDelayBefore: Duration = .zero
        var uploadDelayAfter: Duration = .zero
        var stripForeignKeys = false
        var heldTexts: Set<String> = []
        /// Message changes from the backend's live stream are lost (the connection stays up); delta sync still
        /// has them, and `inject` still delivers.
        var loseLiveMessages = false
        var held: [AdapterEvent] = []
        var uploadsStarted = 0
        var publishCalls = 0
        /// Runs at the start of every `setReaction`, before the backend is asked.
        var beforeReaction: (@Sendable () async -> Void)?
        var continuations: [UUID: AsyncStream<AdapterEvent>.Continuation] = [:]
    }

    let inner: MemoryAdapter
    private let knobs = Locked(Knobs())

    init(_ inner: MemoryAdapter) { self.inner = inner }

    func configure(_ body: (inout Knobs) -> Void) { knobs.withLock { body(&$0) } }
    var uploadsStarted: Int { knobs.withLock { $0.uploadsStarted } }
    var publishCalls: Int { knobs.withLock { $0.publishCalls } }
    /// Live streams handed out and not yet ended by their consumer.
    var openLiveStreams: Int { knobs.withLock { $0.continuations.count } }

    /// Delivers `event` into every open live stream, as if the backend sent it.
    func inject(_ event: AdapterEvent) {
        for continuation in knobs.withLock({ Array($0.continuations.values) }) { continuation.yield(event) }
    }

    /// Delivers the held live message events and stops holding.
    func releaseHeld() {
        let held = knobs.withLock { knobs -> [AdapterEvent] in
            let held = knobs.held
            knobs.held = []
            knobs.heldTexts = []
            return held
        }
        for event in held { inject(event) }
    }

    var backend: BackendID { inner.backend }
    var localUser: UserID { inner.localUser }
    var capabilities: AdapterCapabilities { inner.capabilities }
    var reactionPolicy: ReactionPolicy { inner.reactionPolicy }

    func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        try await inner.prepare(message, noSend: noSend)
    }

    func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        let (before, after, answerDelay, thrown) = knobs.withLock { knobs in
            knobs.publishCalls += 1
            return (knobs.throwBeforePublish, knobs.throwAfterPublish, knobs.publishAnswerDelay, knobs.thrown)
        }
        if before { throw thrown }
        let receipt = try await inner.publish(prepared)
        if answerDelay > .zero {
            // A detached sleep: cancelling this call does not cut it short.
            await Task.detached { try? await Task.sleep(for: answerDelay) }.value
        }
        if after { throw thrown }
        return receipt
    }

    func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        try await inner.latestCursor(in: conversation)
    }

    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        var page = try await inner.history(in: conversation, before: cursor, limit: limit)
        let held = knobs.withLock { $0.heldTexts }
        page.messages = page.messages.filter { !held.contains($0.text) }.map(strip)
        return page
    }

    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        var batch = try await inner.changes(in: conversation, after: cursor, limit: limit)
        let held = knobs.withLock { $0.heldTexts }
        batch.changes = batch.changes.filter { change in
            if case .message(let message) = change { return !held.contains(message.text) }
            return true
        }.map { change in
            if case .message(let message) = change { return .message(strip(message)) }
            return change
        }
        return batch
    }

    func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        let token = UUID()
        knobs.withLock { $0.continuations[token] = continuation }
        let upstream = inner.liveEvents(in: conversation)
        let forwarder = Task { [weak self] in
            for await event in upstream {
                guard let self else { break }
                if let passed = self.filterLive(event) { continuation.yield(passed) }
            }
            continuation.finish()
        }
        continuation.onTermination = { [weak self] _ in
            forwarder.cancel()
            self?.knobs.withLock { _ = $0.continuations.removeValue(forKey: token) }
        }
        return stream
    }

    func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        try await inner.edit(target, in: conversation, text: text)
    }

    func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        try await inner.delete(target, in: conversation)
    }

    func setReaction(_ symbol: String, isActive: Bool, on target: RemoteID, in conversation: ConversationID) async throws {
        if let hook = knobs.withLock({ $0.beforeReaction }) { await hook() }
        try await inner.setReaction(symbol, isActive: isActive, on: target, in: conversation)
    }

    func sendReceipt(_ state: ReceiptState, for target: RemoteID, in conversation: ConversationID) async throws {
        try await inner.sendReceipt(state, for: target, in: conversation)
    }

    func sendTyping(_ isTyping: Bool, in conversation: ConversationID) async throws {
        try await inner.sendTyping(isTyping, in: conversation)
    }

    func upload(_ attachment: SwitchboardCore.Attachment, data: Data, in conversation: ConversationID,
                progress: @escaping @Sendable (Double) -> Void) async throws -> SwitchboardCore.Attachment {
        let (before, after) = knobs.withLock { knobs in
            knobs.uploadsStarted += 1
            return (knobs.uploadDelayBefore, knobs.uploadDelayAfter)
        }
        if before > .zero { try await Task.sleep(for: before) }
        let uploaded = try await inner.upload(attachment, data: data, in: conversation, progress: progress)
        if after > .zero { try await Task.sleep(for: after) }
        return uploaded
    }

    func download(_ attachment: SwitchboardCore.Attachment) async throws -> Data {
        try await inner.download(attachment)
    }

    private func strip(_ message: RemoteMessage) -> RemoteMessage {
        guard knobs.withLock({ $0.stripForeignKeys }), message.sender != localUser else { return message }
        var stripped = message
        stripped.idempotencyKey = nil
        return stripped
    }

    private func filterLive(_ event: AdapterEvent) -> AdapterEvent? {
        guard case .change(.message(let message)) = event else { return event }
        let hold = knobs.withLock { knobs -> Bool in
            if knobs.loseLiveMessages { return true }
            guard knobs.heldTexts.contains(message.text) else { return false }
            knobs.held.append(event)
            return true
        }
        return hold ? nil : .change(.message(strip(message)))
    }
}

// MARK: - Harness

/// A memory backend with alice and bob in `room`, engine clients over SQLite files in a private folder.
final class Harness: Sendable {
    let directory: URL
    let clock = OffsetClock()
    let backend: MemoryBackend
    let room: ConversationID = "room"
    let alice: UserID = "alice"
    let bob: UserID = "bob"
    private let clients = Locked<[ChatClient]>([])

    /// The retry policy most tests use: quick, four attempts, no jitter.
    static let fastRetry = RetryPolicy(baseDelay: 0.005, maxDelay: 0.05, maxAttempts: 4, jitter: 0)

    init(scheme: IDScheme = .clientAssigned, policy: ReactionPolicy = .onePerUserPerSymbol,
         limits: MemoryWire.Limits = MemoryWire.Limits()) throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("switchboard-engine-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let clock = clock
        backend = try MemoryBackend(scheme: scheme, reactionPolicy: policy, clock: { clock.now }, limits: limits)
        try backend.createConversation(room, members: [alice, bob])
    }

    /// Engine settings for tests: fast retries, the shared clock, staging inside the folder.
    func configuration(for user: UserID, retry: RetryPolicy = Harness.fastRetry, pageSize: Int = 50,
                       windowLimit: Int = 500, typingDebounce: TimeInterval = 3, typingIdleTimeout: TimeInterval = 5,
                       remoteTypingTimeout: TimeInterval = 8) -> EngineConfiguration {
        let clock = clock
        return EngineConfiguration(retry: retry, pageSize: pageSize, windowLimit: windowLimit,
                                   typingDebounce: typingDebounce, typingIdleTimeout: typingIdleTimeout,
                                   remoteTypingTimeout: remoteTypingTimeout,
                                   stagingDirectory: directory.appendingPathComponent("staging-\(user)"),
                                   clock: { clock.now })
    }

    /// The SQLite file of a named store inside the folder.
    func storePath(_ name: String) -> String { directory.appendingPathComponent("\(name).sqlite").path }

    /// A started client for `user` over the store file `store` (fresh by default), optionally through `adapter`.
    func client(_ user: UserID, store: String? = nil, adapter: (any ChatAdapter)? = nil,
                configuration: EngineConfiguration? = nil, start: Bool = true) async throws -> ChatClient {
        let sqlite = try SQLiteStore(path: storePath(store ?? "\(user)-\(UUID().uuidString)"))
        let client = ChatClient(adapter: adapter ?? backend.makeAdapter(for: user), store: sqlite,
                                configuration: configuration ?? self.configuration(for: user))
        if start { try await client.start() }
        clients.withLock { $0.append(client) }
        return client
    }

    /// A started client that has opened `room`.
    func opened(_ user: UserID, store: String? = nil, adapter: (any ChatAdapter)? = nil,
                configuration: EngineConfiguration? = nil) async throws -> ChatClient {
        let client = try await client(user, store: store, adapter: adapter, configuration: configuration)
        _ = try await client.open(room)
        return client
    }

    /// Alice's and bob's clients, each started with the room open.
    func openedPair() async throws -> (alice: ChatClient, bob: ChatClient) {
        (try await opened(alice), try await opened(bob))
    }

    /// A message published straight to the backend by `user` (a peer that does not run the engine).
    @discardableResult
    func peerSend(_ text: String, from user: UserID = "bob", replyTo: RemoteID? = nil) async throws -> MemoryMessageRow {
        let id = MessageID.make()
        _ = try await backend.publish(OutgoingMessage(id: id, conversation: room, sender: user, text: text,
                                                      replyTo: replyTo, createdAt: clock.now), as: user)
        return try #require(row(key: id))
    }

    /// The backend rows of `room`.
    var rows: [MemoryMessageRow] { backend.messages(in: room) }

    /// The backend rows carrying `key`.
    func rows(key: MessageID) -> [MemoryMessageRow] { rows.filter { $0.idempotencyKey == key } }

    /// The one backend row carrying `key`, if any.
    func row(key: MessageID) -> MemoryMessageRow? { rows(key: key).first }

    /// Stops every client and removes the folder.
    func shutdown() async {
        for client in clients.withLock({ $0 }) { await client.stop() }
        try? FileManager.default.removeItem(at: directory)
    }
}

/// Runs `body` with a fresh harness and always shuts it down.
func withHarness(_ scheme: IDScheme = .clientAssigned, policy: ReactionPolicy = .onePerUserPerSymbol,
                 limits: MemoryWire.Limits = MemoryWire.Limits(), _ body: (Harness) async throws -> Void) async throws {
    let harness = try Harness(scheme: scheme, policy: policy, limits: limits)
    try await withCleanup({ try await body(harness) }, cleanup: { await harness.shutdown() })
}

// MARK: - Small conveniences

extension ChatClient {
    /// Every stored message of a conversation, oldest first.
    nonisolated func storedMessages(in conversation: ConversationID) async throws -> [Message] {
        try await store.read { tx in try tx.messages(in: conversation, before: nil, limit: 100_000) }.reversed()
    }

    /// The delivery state of a stored message.
    func delivery(_ id: MessageID) async throws -> DeliveryState? { try await message(id)?.delivery }

    /// Whether a stored message is on the backend (sent, delivered, read or received).
    func isPublished(_ id: MessageID) async throws -> Bool { try await message(id)?.delivery.isPublished == true }

    /// The outbox entry of a message.
    nonisolated func outboxEntry(_ id: MessageID) async throws -> OutboxEntry? { try await store.read { tx in try tx.outboxEntry(id) } }

    /// Operations waiting in the persisted queue.
    nonisolated func pendingOperations() async throws -> [PendingOperation] { try await store.read { tx in try tx.allPendingOperations() } }
}

extension DeliveryState {
    /// Whether this is `failed` with `retryable == true`.
    var isRetryableFailure: Bool { if case .failed(_, true) = self { true } else { false } }
    /// The progress of an `uploading` state.
    var uploadProgress: Double? { if case .uploading(let p) = self { p } else { nil } }
}
