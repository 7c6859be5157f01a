import Synchronization
import SwitchboardCore

/// One live event for a socket: a Socket.IO event name and its single argument.
struct SocketIOLiveEvent: Sendable, Hashable {
    /// The event name, e.g. `message` or `typing`.
    var name: String
    /// The event's only argument.
    var payload: JSONValue

    /// Makes an event.
    init(name: String, payload: JSONValue) {
        self.name = name
        self.payload = payload
    }
}

/// Fans live events out to the listeners of their recipients, per user, in publication order.
///
/// Each listener (one per connected socket) has a bounded buffer; one that falls `bufferLimit` events behind is
/// ended with `overflowed` set (its socket closes, the client reconnects and catches up over REST) rather than
/// silently losing events.
final class SocketIOEventHub: Sendable {
    /// One socket's inbox.
    final class Listener: Sendable {
        /// Whose socket.
        let userID: String
        /// Delivered events, in publication order.
        let stream: AsyncStream<SocketIOLiveEvent>
        fileprivate let continuation: AsyncStream<SocketIOLiveEvent>.Continuation
        private let overflow = Atomic<Bool>(false)

        /// Whether the buffer overflowed (the stream then ended).
        var overflowed: Bool { overflow.load(ordering: .acquiring) }

        fileprivate init(userID: String, bufferLimit: Int) {
            self.userID = userID
            (stream, continuation) = AsyncStream.makeStream(of: SocketIOLiveEvent.self, bufferingPolicy: .bufferingOldest(bufferLimit))
        }

        fileprivate func deliver(_ event: SocketIOLiveEvent) {
            if case .dropped = continuation.yield(event) {
                overflow.store(true, ordering: .releasing)
                continuation.finish()
            }
        }
    }

    private let listeners = Locked<[String: [ObjectIdentifier: Listener]]>([:])
    private let bufferLimit: Int

    /// A hub whose listeners buffer up to `bufferLimit` events each.
    init(bufferLimit: Int) {
        self.bufferLimit = max(1, bufferLimit)
    }

    /// How many listeners are registered (tests check that closed sockets leave none behind).
    var listenerCount: Int { listeners.withLock { $0.values.reduce(0) { $0 + $1.count } } }

    /// Registers a listener for `userID`'s events; call `remove` when the socket goes away.
    func add(userID: String) -> Listener {
        let listener = Listener(userID: userID, bufferLimit: bufferLimit)
        listeners.withLock { $0[userID, default: [:]][ObjectIdentifier(listener)] = listener }
        return listener
    }

    /// Unregisters and finishes `listener`.
    func remove(_ listener: Listener) {
        listeners.withLock { state in
            state[listener.userID]?.removeValue(forKey: ObjectIdentifier(listener))
            if state[listener.userID]?.isEmpty == true { state.removeValue(forKey: listener.userID) }
        }
        listener.continuation.finish()
    }

    /// Delivers `event` to every listener of `recipients`. Callers serialise publication, so each listener sees
    /// events in the order they were committed.
    func publish(_ event: SocketIOLiveEvent, to recipients: some Sequence<String>) {
        let targets = listeners.withLock { state in recipients.flatMap { state[$0].map { Array($0.values) } ?? [] } }
        for listener in targets { listener.deliver(event) }
    }

    /// Ends every listener (the server is stopping).
    func finishAll() {
        let all = listeners.withLock { state -> [Listener] in
            defer { state.removeAll() }
            return state.values.flatMap(\.values)
        }
        for listener in all { listener.continuation.finish() }
    }
}
