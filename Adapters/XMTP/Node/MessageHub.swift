import Synchronization
import SwitchboardNet
import SwitchboardCore

/// Fans stored messages out to live subscriptions, in id order.
///
/// Each listener has a bounded buffer; one that falls `bufferLimit` messages behind is ended with `overflowed`
/// set (its client resumes from its last cursor) rather than silently losing messages.
final class MessageHub: Sendable {
    /// One live subscription's inbox: a queue its writer takes whole (a burst becomes one write, not one per message).
    final class Listener: Sendable {
        /// The groups it follows.
        let groups: Set<XMTPNodeGroupID>
        private let queue = BatchQueue<XMTPNodeStoredMessage>()
        private let overflow = Atomic<Bool>(false)
        private let bufferLimit: Int

        /// Whether the queue overflowed (it then ended).
        var overflowed: Bool { overflow.load(ordering: .acquiring) }

        fileprivate init(groups: Set<XMTPNodeGroupID>, bufferLimit: Int) {
            self.groups = groups
            self.bufferLimit = bufferLimit
        }

        /// Queues `messages` (in publication order); a listener more than `bufferLimit` behind ends, overflowed.
        /// Publication is serialised by the hub's callers, so the check and the append do not race each other.
        fileprivate func deliver(_ messages: [XMTPNodeStoredMessage]) {
            guard !messages.isEmpty else { return }
            if queue.count + messages.count > bufferLimit {
                overflow.store(true, ordering: .releasing)
                queue.finish()
            } else {
                queue.append(contentsOf: messages)
            }
        }

        /// Ends the queue; `next` returns what is queued, then nil.
        fileprivate func finish() { queue.finish() }

        /// Every message queued so far, oldest first, waiting while there is none; nil once ended and drained (an
        /// overflowed listener hands out what it held before the overflow, then ends).
        func next() async -> [XMTPNodeStoredMessage]? { await queue.next() }
    }

    private let listeners = Locked<[ObjectIdentifier: Listener]>([:])
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
        listener.finish()
    }

    /// Delivers `messages` (already committed, in id order) to every listener following their groups.
    /// Callers serialise publication so ids reach listeners in increasing order.
    func publish(_ messages: [XMTPNodeStoredMessage]) {
        let current = listeners.withLock { Array($0.values) }
        for listener in current {
            listener.deliver(messages.filter { listener.groups.contains($0.groupID) })
        }
    }

    /// Ends every listener (the node is stopping).
    func finishAll() {
        let all = listeners.withLock { state -> [Listener] in defer { state.removeAll() }; return Array(state.values) }
        for listener in all { listener.finish() }
    }
}
