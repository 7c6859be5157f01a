import Foundation
import SwitchboardCore

/// Wraps any adapter and injects the faults an `InjectedFaults` plans at its boundary, so tests and the conformance
/// kit can put a real backend under failure without hooks inside the adapter: a publish that fails before reaching
/// it or loses its response after it committed, a publish delay, refused edits and deletes, failing uploads, an
/// offline user, dropped, duplicated or reordered live deliveries. With nothing planned every call passes through.
///
/// It offers exactly the capability protocols its inner adapter offers (conditional conformances), so
/// `adapter as? any EditingAdapter` answers as it would for the inner adapter. Wrap an existential with
/// `InjectedFaults.wrap(_:)`.
public final class FaultInjectingAdapter<Inner: ChatAdapter>: ChatAdapter {
    /// The wrapped adapter.
    public let inner: Inner
    /// The planned faults, shared with the other decorators of the same environment.
    public let faults: InjectedFaults

    /// Wraps `inner` under `faults`.
    public init(wrapping inner: Inner, faults: InjectedFaults) {
        self.inner = inner
        self.faults = faults
    }

    /// The inner adapter's backend.
    public var backend: BackendID { inner.backend }
    /// The inner adapter's user.
    public var localUser: UserID { inner.localUser }
    /// The inner adapter's capabilities.
    public var capabilities: AdapterCapabilities { inner.capabilities }

    /// Passed through: preparing touches no network, so no fault applies.
    nonisolated(nonsending) public func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        try await inner.prepare(message, noSend: noSend)
    }

    /// Publishes through the inner adapter under the next publish fault.
    public func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt {
        try await underPublishFault { try await inner.publish(prepared) }
    }

    /// Publishes through the inner adapter's `publishAll`; the whole call draws one publish fault.
    public func publishAll(_ prepared: [PreparedMessage]) async throws -> [PublishReceipt] {
        try await underPublishFault { try await inner.publishAll(prepared) }
    }

    /// Discards through the inner adapter unless the user is offline.
    public func discard(_ prepared: PreparedMessage) async throws {
        try requireOnline()
        try await inner.discard(prepared)
    }

    /// The inner adapter's cursor unless the user is offline.
    public func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        try requireOnline()
        return try await inner.latestCursor(in: conversation)
    }

    /// The inner adapter's history unless the user is offline.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        try requireOnline()
        return try await inner.history(in: conversation, before: cursor, limit: limit)
    }

    /// The inner adapter's changes unless the user is offline.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        try requireOnline()
        return try await inner.changes(in: conversation, after: cursor, limit: limit)
    }

    /// The inner adapter's live stream under the live faults (`FaultyLiveStream`).
    public func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> {
        let inner = self.inner
        return FaultyLiveStream.make(for: localUser, faults: faults) { inner.liveEvents(in: conversation) }
    }

    /// Throws a retryable transport error while the user is offline.
    func requireOnline() throws {
        if faults.isOffline(localUser) { throw SwitchboardError(.transport, "offline (injected)", retryable: true) }
    }

    /// Runs one publish call under the next publish fault: delayed, failed before `body`, or with `body`'s result
    /// replaced by a lost response.
    private func underPublishFault<T>(_ body: () async throws -> T) async throws -> T {
        let (fault, delay) = faults.nextPublish(by: localUser)
        if delay > .zero { try await Task.sleep(for: delay) }
        switch fault {
        case .fail:
            throw SwitchboardError(.transport, "publish failed (injected)", retryable: true)
        case .loseResponse:
            _ = try await body()
            throw SwitchboardError(.transport, "publish response lost (injected)", retryable: true)
        case .rateLimit(let retryAfter):
            throw SwitchboardError(.transport, "HTTP 429: rate limited (injected)", retryable: true, retryAfter: retryAfter)
        case .none:
            return try await body()
        }
    }
}

extension InjectedFaults {
    /// `adapter` in a `FaultInjectingAdapter` under these faults, offering the capabilities of its dynamic type.
    public func wrap(_ adapter: any ChatAdapter) -> any ChatAdapter { decorate(adapter) }

    /// Wraps `adapter`, its dynamic type opened as `A`.
    private func decorate<A: ChatAdapter>(_ adapter: A) -> any ChatAdapter {
        FaultInjectingAdapter(wrapping: adapter, faults: self)
    }
}
