import Synchronization

/// Fans stored messages out to live subscriptions, in id order.
///
/// Each listener has a bounded buffer; one that falls `bufferLimit` messages behind is ended with `overflowed`
/// set (its client resumes from its last cursor) rather than silently losing messages.
final class MessageHub: Sendable {
    /// One live subscription's inbox.
    final class Listener: Sendable {
        /// The groups it follows.
        let groups: Set<XMTPNodeGroupID>
        /// Delivered messages, in publication order.
        let stream: AsyncStream<XMTPNodeStoredMessage>
        fileprivate let continuation: AsyncStream<XMTPNodeStoredMessage>.Continuation
        private let overflow = Atomic<Bool>(false)

        /// Whether the buffer overflowed (the stream then ended).
        var overflowed: Bool { overflow.load(ordering: .acquiring) }

        fileprivate init(groups: Set<XMTPNodeGroupID>, bufferLimit: Int) {
            self.groups = groups
            (stream, continuation) = AsyncStream.makeStream(of: XMTPNodeStoredMessage.self,
                                                            bufferingPolicy: .bufferingOldest(bufferLimit))
        }

        fileprivate func deliver(_ message: XMTPNodeStoredMessage) {
            if case .dropped = continuation.yield(message) {
                overflow.store(true, ordering: .releasing)
                continuation.finish()
            }
        }
    }

    private let listeners = Mutex<[ObjectIdentifier: Listener]>([:])
    private let bufferLimit: Int

    /// A hub whose listeners buffer up to `bufferLimit` messages each.
    init(bufferLimit: Int) {
        self.bufferLimit = max(1, bufferLimit)
    }

    /// How many listeners are registered (tests check that closed subscriptions leave none behind).
    var listenerCount: Int { listeners.withLock { $0.count } }

    /// Registers a listener for `groups`; call `remove` when done.
    func add(groups: Set<XMTPNodeGroupID>) -> Listener {
        let listener = Listener(groups: groups, bufferLimit: bufferLimit)
        listeners.withLock { $0[ObjectIdentifier(listener)] = listener }
        return listener
    }

    /// Unregisters and finishes `listener`.
    func remove(_ listener: Listener) {
        _ = listeners.withLock { $0.removeValue(forKey: ObjectIdentifier(listener)) }
        listener.continuation.finish()
    }

    /// Delivers `messages` (already committed, in id order) to every listener following their groups.
    /// Callers serialise publication so ids reach listeners in increasing order.
    func publish(_ messages: [XMTPNodeStoredMessage]) {
        let current = listeners.withLock { Array($0.values) }
        for listener in current {
            for message in messages where listener.groups.contains(message.groupID) { listener.deliver(message) }
        }
    }

    /// Ends every listener (the node is stopping).
    func finishAll() {
        let all = listeners.withLock { state -> [Listener] in defer { state.removeAll() }; return Array(state.values) }
        for listener in all { listener.continuation.finish() }
    }
}
