import Foundation
import SwitchboardCore

/// Wraps an adapter but replaces its live stream with one the benchmark feeds (duplicates, or silence).
final class ScriptedAdapter: ChatAdapter, Sendable {
    /// The adapter every other call goes to.
    let inner: any ChatAdapter
    /// The continuation of the live stream the engine opened last.
    private let live = Locked<AsyncStream<AdapterEvent>.Continuation?>(nil)

    /// Wraps `inner`.
    init(_ inner: any ChatAdapter) { self.inner = inner }

    /// The inner adapter's backend name.
    var backend: BackendID { inner.backend }
    /// The inner adapter's user.
    var localUser: UserID { inner.localUser }
    /// The inner adapter's capabilities.
    var capabilities: AdapterCapabilities { inner.capabilities }

    /// Delegates to the inner adapter.
    nonisolated(nonsending) func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        try await inner.prepare(message, noSend: noSend)
    }
    /// Delegates to the inner adapter.
    func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt { try await inner.publish(prepared) }
    /// Delegates to the inner adapter.
    func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        try await inner.latestCursor(in: conversation)
    }
    /// Delegates to the inner adapter.
    func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        try await inner.history(in: conversation, before: cursor, limit: limit)
    }
    /// Delegates to the inner adapter.
    func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        try await inner.changes(in: conversation, after: cursor, limit: limit)
    }

    /// A stream only `deliver` feeds.
    func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: AdapterEvent.self, bufferingPolicy: .unbounded)
        live.withLock { $0 = continuation }
        return stream
    }

    /// Delivers `events` on the live stream, in order; false when no stream is open.
    @discardableResult
    func deliver(_ events: [AdapterEvent]) -> Bool {
        guard let continuation = live.withLock({ $0 }) else { return false }
        for event in events { continuation.yield(event) }
        return true
    }

    /// Every change delivered `copies` times, each repeat trailing its original by one and two places
    /// (e1 e0' e2 e1' e0'' …), the way a reconnect replay overlaps a live stream.
    static func duplicated<T>(_ items: [T], copies: Int) -> [T] {
        var out: [T] = []
        out.reserveCapacity(items.count * copies)
        for index in 0..<(items.count + copies - 1) {
            for lag in 0..<copies {
                let source = index - lag
                if source >= 0 && source < items.count { out.append(items[source]) }
            }
        }
        return out
    }
}
