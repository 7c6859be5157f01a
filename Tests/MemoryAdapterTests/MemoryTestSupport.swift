import Foundation
import MemoryAdapter
import SwitchboardCore
import TestSupport
import Testing

/// A clock tests move by hand.
final class TestClock: Sendable {
    private let current = Locked(Date(timeIntervalSince1970: 1_750_000_000))

    /// The current time.
    var now: Date { current.withLock { $0 } }

    /// Moves time forward.
    func advance(by interval: TimeInterval) { current.withLock { $0 += interval } }
}

/// The events a live stream delivered, recorded by a background consumer.
final class EventRecorder: Sendable {
    private let log: Locked<[AdapterEvent]>
    private let finished: Locked<Bool>
    private let consumer: Locked<Task<Void, Never>?>

    private init() {
        log = Locked([])
        finished = Locked(false)
        consumer = Locked(nil)
    }

    /// Starts consuming `stream`.
    static func recording(_ stream: AsyncStream<AdapterEvent>) -> EventRecorder {
        let recorder = EventRecorder()
        let task = Task { [recorder] in
            for await event in stream { recorder.log.withLock { $0.append(event) } }
            recorder.finished.withLock { $0 = true }
        }
        recorder.consumer.withLock { $0 = task }
        return recorder
    }

    /// Everything recorded so far.
    var events: [AdapterEvent] { log.withLock { $0 } }

    /// Whether the stream ended.
    var isFinished: Bool { finished.withLock { $0 } }

    /// The messages of recorded change events, in order.
    var messages: [RemoteMessage] { events.compactMap(\.message) }

    /// Stops consuming (the stream's subscription ends).
    func stop() { consumer.withLock { $0?.cancel() } }

    /// Waits until `predicate` holds for the recorded events, or the timeout passes; returns whether it held.
    func waitUntil(timeout: Duration = .seconds(30), _ predicate: ([AdapterEvent]) -> Bool) async -> Bool {
        let deadline = TestTime.deadline(after: timeout)
        while ContinuousClock.now < deadline {
            if predicate(events) { return true }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return predicate(events)
    }

    /// Waits until at least `count` message changes arrived.
    func waitForMessages(_ count: Int) async -> Bool {
        await waitUntil { $0.compactMap(\.message).count >= count }
    }

    /// Lets in-flight events land before asserting that something did not arrive.
    func settle() async { try? await Task.sleep(for: .milliseconds(60)) }

    /// Expects at least `count` messages to arrive, lets in-flight events land and returns every message recorded,
    /// for checking that no more arrived.
    func settledMessages(atLeast count: Int, sourceLocation: SourceLocation = #_sourceLocation) async -> [RemoteMessage] {
        #expect(await waitForMessages(count), sourceLocation: sourceLocation)
        await settle()
        return messages
    }
}

extension AdapterEvent {
    /// The message this event carries, if it is a message change.
    var message: RemoteMessage? {
        if case .change(.message(let message)) = self { message } else { nil }
    }

    /// The reaction this event carries, if it is a reaction change.
    var reaction: RemoteReaction? {
        if case .change(.reaction(let reaction)) = self { reaction } else { nil }
    }

    /// Whether this is a `.connected` event.
    var isConnected: Bool { self == .connection(.connected) }

    /// Whether this is a `.disconnected` event.
    var isDisconnected: Bool {
        if case .connection(.disconnected) = self { true } else { false }
    }

    /// Whether this is a typing event.
    var isTyping: Bool {
        if case .typing = self { true } else { false }
    }
}

extension RemoteChange {
    /// The message of a message change.
    var message: RemoteMessage? { if case .message(let message) = self { message } else { nil } }
    /// The reaction of a reaction change.
    var reaction: RemoteReaction? { if case .reaction(let reaction) = self { reaction } else { nil } }
    /// The receipt of a receipt change.
    var receipt: RemoteReceipt? { if case .receipt(let receipt) = self { receipt } else { nil } }
}

/// A backend with two members, alice and bob, in `room`, and carol who is not a member.
struct Fixture {
    let clock = TestClock()
    let backend: MemoryBackend
    let alice: MemoryAdapter
    let bob: MemoryAdapter
    let carol: MemoryAdapter
    let room: ConversationID = "room"

    init(_ scheme: IDScheme, policy: ReactionPolicy = .onePerUserPerSymbol, journal: URL? = nil) throws {
        let clock = clock
        backend = try MemoryBackend(scheme: scheme, reactionPolicy: policy, clock: { clock.now }, journal: journal)
        alice = backend.makeAdapter(for: "alice")
        bob = backend.makeAdapter(for: "bob")
        carol = backend.makeAdapter(for: "carol")
        try backend.createConversation(room, members: ["alice", "bob"])
    }

    /// A message composed by `adapter`'s user.
    func outgoing(_ text: String, from adapter: MemoryAdapter, id: MessageID = .make(),
                  attachments: [SwitchboardCore.Attachment] = [], in conversation: ConversationID? = nil) -> OutgoingMessage {
        OutgoingMessage(id: id, conversation: conversation ?? room, sender: adapter.localUser, text: text,
                        attachments: attachments, createdAt: clock.now)
    }

    /// Prepares and publishes a message; returns what prepare gave and the server's remote ID.
    @discardableResult
    func send(_ text: String, from adapter: MemoryAdapter) async throws -> (prepared: PreparedMessage, remoteID: RemoteID) {
        let prepared = try await adapter.prepare(outgoing(text, from: adapter), noSend: false)
        _ = try await adapter.publish(prepared)
        return (prepared, try remoteID(of: prepared.id))
    }

    /// The server's remote ID for an idempotency key.
    func remoteID(of key: MessageID) throws -> RemoteID {
        try #require(backend.messages(in: room).first { $0.idempotencyKey == key }).remoteID
    }

    /// Every change after `cursor`, following `hasMore`.
    func allChanges(after cursor: Cursor?, as adapter: MemoryAdapter, pageSize: Int = 100) async throws -> [RemoteChange] {
        var cursor = cursor
        var changes: [RemoteChange] = []
        while true {
            let batch = try await adapter.changes(in: room, after: cursor, limit: pageSize)
            changes += batch.changes
            cursor = batch.cursor
            if !batch.hasMore { return changes }
        }
    }
}

/// Runs `body` and checks it throws a `SwitchboardError` with `code` (and, when given, that retryability).
func expectError(_ code: SwitchboardError.Code, retryable: Bool? = nil, sourceLocation: SourceLocation = #_sourceLocation,
                 _ body: () async throws -> Void) async {
    do {
        try await body()
        Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as SwitchboardError {
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
        if let retryable { #expect(error.isRetryable == retryable, "\(error)", sourceLocation: sourceLocation) }
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// A fresh temporary file URL (not created).
func temporaryJournalURL() -> URL {
    FileManager.default.temporaryDirectory.appendingPathComponent("memory-journal-\(UUID().uuidString).jsonl")
}
