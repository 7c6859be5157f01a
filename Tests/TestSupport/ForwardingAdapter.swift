import SwitchboardCore

/// A test adapter around another: whatever the wrapper does not implement itself goes to `inner` unchanged.
/// A wrapper that also declares `EditingAdapter` or `DeletingAdapter` forwards those calls as well.
public protocol ForwardingAdapter: ChatAdapter {
    /// The wrapped adapter's type.
    associatedtype Inner: ChatAdapter
    /// The wrapped adapter.
    var inner: Inner { get }
}

extension ForwardingAdapter {
    /// The inner adapter's backend.
    public var backend: BackendID { inner.backend }
    /// The inner adapter's user.
    public var localUser: UserID { inner.localUser }
    /// The inner adapter's capabilities.
    public var capabilities: AdapterCapabilities { inner.capabilities }

    /// Forwards.
    public nonisolated(nonsending) func prepare(_ message: OutgoingMessage, noSend: Bool) async throws -> PreparedMessage {
        try await inner.prepare(message, noSend: noSend)
    }
    /// Forwards.
    public func publish(_ prepared: PreparedMessage) async throws -> PublishReceipt { try await inner.publish(prepared) }
    /// Forwards.
    public func latestCursor(in conversation: ConversationID) async throws -> Cursor? {
        try await inner.latestCursor(in: conversation)
    }
    /// Forwards.
    public func history(in conversation: ConversationID, before cursor: Cursor?, limit: Int) async throws -> HistoryPage {
        try await inner.history(in: conversation, before: cursor, limit: limit)
    }
    /// Forwards.
    public func changes(in conversation: ConversationID, after cursor: Cursor?, limit: Int) async throws -> ChangeBatch {
        try await inner.changes(in: conversation, after: cursor, limit: limit)
    }
    /// Forwards.
    public func liveEvents(in conversation: ConversationID) -> AsyncStream<AdapterEvent> { inner.liveEvents(in: conversation) }
}

extension ForwardingAdapter where Self: EditingAdapter, Inner: EditingAdapter {
    /// Forwards.
    public func edit(_ target: RemoteID, in conversation: ConversationID, text: String) async throws {
        try await inner.edit(target, in: conversation, text: text)
    }
}

extension ForwardingAdapter where Self: DeletingAdapter, Inner: DeletingAdapter {
    /// Forwards.
    public func delete(_ target: RemoteID, in conversation: ConversationID) async throws {
        try await inner.delete(target, in: conversation)
    }
}
