import Foundation
import SwitchboardCore
import SwitchboardStore

/// What an app links: one signed-in user on one backend, with optimistic sends, a persisted outbox,
/// reconciliation, delta sync, timelines, edits, reactions, receipts, typing and attachments.
public actor ChatClient {
    /// The backend adapter.
    public nonisolated let adapter: any ChatAdapter
    /// The local store.
    public nonisolated let store: any Store
    /// Settings.
    public nonisolated let configuration: EngineConfiguration

    var conversations: [ConversationID: ConversationState] = [:]
    /// Live changes dropped so far because they ran more than `maxQueuedLiveChanges` ahead of the reconciler (each
    /// drop was followed by a resync that brought them back).
    public internal(set) var droppedLiveChanges = 0
    /// Incoming messages whose carried key named another party's message (DESIGN §2); each was kept apart under
    /// an ID of its own and logged.
    public internal(set) var keyCollisions = 0
    var inFlight: Set<MessageID> = []
    var uploadTasks: [MessageID: Task<Void, Never>] = [:]
    var uploadTokens: [MessageID: UUID] = [:]
    var uploadProgress: [MessageID: [AttachmentID: Double]] = [:]
    var workerTask: Task<Void, Never>?
    var wakeContinuation: CheckedContinuation<Void, Never>?
    var wakeRequested = false
    var wakeTimer: Task<Void, Never>?
    var isStarted = false
    /// Every wait key that may have queued operations (a superset: a key leaves only once a flush finds it
    /// empty), so the per-change flush skips its store read when nothing can be waiting.
    var pendingWaitKeys: Set<WaitKey> = []
    /// Per message, the local user's reaction changes on their way to the backend (`react`). While one is, the
    /// local user's own reactions arriving for that message are echoes of this or an earlier change and are not
    /// applied: an earlier one would undo for a moment what was just asked for.
    var reactionsInFlight: [MessageID: Int] = [:]

    /// Creates a client; call `start()` to restore in-flight work and run the outbox.
    public init(adapter: any ChatAdapter, store: any Store, configuration: EngineConfiguration = EngineConfiguration()) {
        self.adapter = adapter
        self.store = store
        self.configuration = configuration
    }

    /// The backend's name.
    public nonisolated var backend: BackendID { adapter.backend }
    /// The signed-in user.
    public nonisolated var localUser: UserID { adapter.localUser }

    var now: Date { configuration.clock().roundedToMicroseconds }

    /// Logs `message` at `level` to the configured logger (the message is built only when the level is logged).
    func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        configuration.logger.log(level: level, message())
    }

    /// Restores every in-flight message in its state (after a crash too), resumes uploads and starts the outbox worker.
    public func start() async throws {
        guard !isStarted else { return }
        isStarted = true
        let backend = self.backend
        let entries = try await store.write { tx -> [OutboxEntry] in
            let entries = try tx.outbox(backend: backend)
            for entry in entries where entry.status == .queued {
                // A crash while "sending" leaves the outcome unknown: publish again under the same key.
                if var message = try tx.message(entry.messageID), message.delivery == .sending {
                    message.delivery = entry.noSend ? .draft : .pending
                    try tx.upsertMessage(message)
                }
            }
            return entries
        }
        pendingWaitKeys = Set(try await store.read { tx in try tx.allPendingOperations().map(\.waitKey) })
        for entry in entries where entry.status == .awaitingUploads {
            startUploads(for: entry.messageID)
        }
        workerTask = Task { [weak self] in await self?.runOutboxWorker() }
        log(.info, "started with \(entries.count) outbox entries")
    }

    /// Stops the worker, uploads and live streams and returns once they have ended; persisted work resumes on the
    /// next `start()`.
    ///
    /// What was cancelled may be inside an adapter call (a publish whose answer is on its way) or a store write:
    /// `stop()` waits for each to return and record its outcome, so nothing writes to the store once it returns
    /// and the store can be closed. Adapter calls end early when cancelled; one that does not is waited for.
    public func stop() async {
        var running: [Task<Void, Never>] = []
        if let workerTask {
            workerTask.cancel()
            running.append(workerTask)
        }
        workerTask = nil
        wakeTimer?.cancel()
        wakeContinuation?.resume()
        wakeContinuation = nil
        for task in uploadTasks.values {
            task.cancel()
            running.append(task)
        }
        uploadTasks.removeAll()
        uploadTokens.removeAll()
        for state in conversations.values { running += state.shutDown() }
        conversations.removeAll()
        isStarted = false
        for task in running { await task.value }
    }

    /// Closes a conversation `open` opened (a chat screen left): its live subscription ends, its event streams
    /// finish and its window is let go; returns once the live work it cancelled has ended. What is stored stays,
    /// and the outbox goes on sending what was queued in it; the next `open` shows the stored timeline and catches
    /// up by delta sync. Closing a conversation that is not open does nothing.
    public func close(_ id: ConversationID) async {
        guard let state = conversations.removeValue(forKey: id) else { return }
        for task in state.shutDown() { await task.value }
    }

    /// Opens a conversation: shows the newest stored page, subscribes to live events and runs a delta sync.
    public func open(_ id: ConversationID) async throws -> Conversation {
        if conversations[id] == nil {
            let state = ConversationState(id: id, windowLimit: configuration.windowLimit)
            let floor = try await historyFloor(id)
            let newest = try await contiguousMessages(in: id, before: nil, floor: floor)
            state.window.floor = floor
            let backend = self.backend
            let historyCursor = try await store.read { tx in try tx.cursor(conversation: id, backend: backend, kind: .history) }
            let remoteOlder = historyCursor != nil && historyCursor != Self.historyExhausted
            state.window.reset(newest: newest, hasOlder: newest.count == configuration.pageSize || remoteOlder)
            conversations[id] = state
            let stream = adapter.liveEvents(in: id)
            let inbox = LiveInbox(limit: configuration.maxQueuedLiveChanges)
            // The feeder only queues; the reconciler takes everything queued at once, so a burst (a replay
            // after a reconnect, say) costs one store transaction rather than one per event.
            let feeder = Task {
                for await event in stream { inbox.push(event) }
                inbox.finish()
            }
            state.feederTask = feeder
            state.liveTask = Task { [weak self] in
                await withTaskCancellationHandler {
                    for await _ in inbox.rings {
                        guard let self else { return }
                        let (events, dropped) = inbox.takeAll()
                        await self.handleLive(events, in: id)
                        if dropped > 0 { await self.resynchronize(id, afterDropping: dropped) }
                    }
                } onCancel: {
                    feeder.cancel()
                    inbox.finish()
                }
            }
            do {
                try await synchronize(id)
            } catch let error where SwitchboardError.wrapping(error).isRetryable {
                // Offline: the stored timeline shows, and the next `.connected` runs the sync.
                log(.warning, "initial sync of \(id) deferred: \(error)")
            } catch {
                conversations[id] = nil
                for task in state.shutDown() { await task.value }
                throw error
            }
        }
        return Conversation(client: self, id: id)
    }

    func state(_ id: ConversationID) throws -> ConversationState {
        guard let state = conversations[id] else {
            throw SwitchboardError(.unknownConversation, "conversation \(id) is not open")
        }
        return state
    }

    /// An ordered stream of this conversation's events, starting now.
    public func events(in id: ConversationID) throws -> AsyncStream<SequencedEvent> {
        let state = try state(id)
        let (stream, continuation) = AsyncStream<SequencedEvent>.makeStream(bufferingPolicy: .unbounded)
        let token = UUID()
        state.subscribers[token] = continuation
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(token, from: id) }
        }
        return stream
    }

    func unsubscribe(_ token: UUID, from id: ConversationID) {
        conversations[id]?.subscribers[token] = nil
    }

    /// Sends one event to the conversation's subscribers and keeps the window in step.
    func emit(_ event: ConversationEvent, in id: ConversationID) {
        guard let state = conversations[id] else { return }
        switch event {
        case .removed(let messageID): state.window.remove(messageID)
        default: if let message = event.message { state.window.apply(message) }
        }
        state.sequence += 1
        let sequenced = SequencedEvent(sequence: state.sequence, conversation: id, event: event)
        for continuation in state.subscribers.values { continuation.yield(sequenced) }
    }

    /// The window of messages held in memory, oldest first.
    public func timeline(of id: ConversationID) throws -> [Message] { try state(id).window.messages }

    /// Whether the conversation is open and its live stream connected (what `.syncStateChanged(.live)` announced).
    public func isLive(_ id: ConversationID) -> Bool { conversations[id]?.isConnected ?? false }

    /// Whether older messages may exist before the window, in the store or on the backend.
    public func hasOlder(in id: ConversationID) async throws -> Bool {
        if try state(id).window.hasOlder { return true }
        return try await !isHistoryExhausted(id)
    }

    /// Pages backwards: older messages from the store, fetching history from the backend when the store runs out.
    /// Returns how many messages were added to the window.
    @discardableResult
    public func loadOlder(in id: ConversationID) async throws -> Int {
        let state = try state(id)
        let pageSize = configuration.pageSize
        var local = try await contiguousMessages(in: id, before: state.window.oldest, floor: try historyFloor(id))
        // Stored rows below the history floor are islands (old messages an edit brought in), not the next page:
        // fetch history until a full contiguous page exists or the beginning is reached.
        var fetches = 0
        while local.count < pageSize, try await !isHistoryExhausted(id), fetches < 8 {
            fetches += 1
            let fetched = try await fetchOlderHistory(id)
            local = try await contiguousMessages(in: id, before: state.window.oldest, floor: try historyFloor(id))
            if fetched == 0 { break }
        }
        state.window.floor = try await historyFloor(id)
        state.window.prepend(local)
        let exhausted = try await isHistoryExhausted(id)
        state.window.hasOlder = local.count == pageSize || !exhausted
        return local.count
    }

    /// Up to a page of stored messages before `position`, newest first, none below the history floor.
    func contiguousMessages(in id: ConversationID, before position: TimelinePosition?,
                            floor: TimelinePosition?) async throws -> [Message] {
        let limit = configuration.pageSize
        let rows = try await store.read { tx in try tx.messages(in: id, before: position, limit: limit) }
        guard let floor else { return rows }
        return rows.filter { $0.position >= floor }
    }

    /// Message by ID from the store.
    public func message(_ id: MessageID) async throws -> Message? { try await store.read { tx in try tx.message(id) } }

    /// Receipts of a message.
    public func receipts(of id: MessageID) async throws -> [Receipt] { try await store.read { tx in try tx.receipts(of: id) } }

    /// Waits until no outbox entry is due or in flight and no upload runs, or until `timeout` passes; returns whether idle.
    @discardableResult
    public func waitUntilIdle(timeout: TimeInterval = 10) async -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let backend = self.backend
            let busy = (try? await store.read { tx in
                try tx.outbox(backend: backend).contains { $0.status != .failed && !$0.noSend }
            }) ?? true
            if !busy && inFlight.isEmpty && uploadTasks.isEmpty { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }
}

/// Per-conversation state the client keeps in memory (never persisted: the store is the truth).
final class ConversationState {
    let id: ConversationID
    var window: TimelineWindow
    var subscribers: [UUID: AsyncStream<SequencedEvent>.Continuation] = [:]
    var sequence: UInt64 = 0
    var liveTask: Task<Void, Never>?
    /// The task moving the adapter's live events into the inbox (`liveTask` cancels it).
    var feederTask: Task<Void, Never>?
    var isSyncing = false
    var resyncRequested = false
    var isConnected = false
    var typingExpiry: [UserID: Task<Void, Never>] = [:]
    var localTypingSentAt: Date?
    var localTypingIdleTask: Task<Void, Never>?
    /// Changes applied recently, so an identical repeat (replay, duplicate delivery) costs one hash lookup.
    var recentChanges = RecentSet<RemoteChange>(capacity: 4096)

    init(id: ConversationID, windowLimit: Int) {
        self.id = id
        self.window = TimelineWindow(limit: windowLimit)
    }

    /// Cancels the live stream (the feeder with it) and the typing timers and finishes every event stream; returns
    /// the tasks to wait for, which may be inside an adapter call or a store write.
    func shutDown() -> [Task<Void, Never>] {
        liveTask?.cancel()
        for continuation in subscribers.values { continuation.finish() }
        subscribers.removeAll()
        for task in typingExpiry.values { task.cancel() }
        localTypingIdleTask?.cancel()
        return [liveTask, feederTask].compactMap { $0 }
    }
}

/// A bounded set that forgets its oldest members first.
struct RecentSet<Element: Hashable> {
    private var members: Set<Element> = []
    private var order: [Element] = []
    private var head = 0
    let capacity: Int

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func contains(_ element: Element) -> Bool { members.contains(element) }

    /// Forgets `element` (it stays in the eviction order, which then evicts nothing).
    mutating func remove(_ element: Element) { members.remove(element) }

    /// Adds `element`; returns false when it was already present.
    @discardableResult
    mutating func insert(_ element: Element) -> Bool {
        guard members.insert(element).inserted else { return false }
        if order.count < capacity {
            order.append(element)
        } else {
            members.remove(order[head])
            order[head] = element
            head = (head + 1) % capacity
        }
        return true
    }
}
