import SwitchboardCore

/// A queue one writer drains a batch at a time: producers append without blocking, the writer takes everything
/// queued since its last take (so a burst becomes one write, not one per item) and waits while there is nothing.
public final class BatchQueue<Element: Sendable>: Sendable {
    private struct State {
        var items: [Element] = []
        var head = 0
        var finished = false
    }

    private let state = Locked(State())
    /// Wakes the writer; holds at most one signal.
    private let signals: AsyncStream<Void>
    private let signal: AsyncStream<Void>.Continuation

    /// An empty queue.
    public init() {
        (signals, signal) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Items waiting to be taken.
    public var count: Int { state.withLock { $0.items.count - $0.head } }

    /// Appends `items` in order; returns false (and drops them) once the queue is finished.
    @discardableResult
    public func append(contentsOf items: [Element]) -> Bool {
        guard !items.isEmpty else { return true }
        let accepted = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            state.items += items
            return true
        }
        if accepted { signal.yield() }
        return accepted
    }

    /// Appends one item; returns false (and drops it) once the queue is finished.
    @discardableResult
    public func append(_ item: Element) -> Bool { append(contentsOf: [item]) }

    /// Ends the queue: `next` hands out what is already queued, then nil.
    public func finish() {
        state.withLock { $0.finished = true }
        signal.yield()
    }

    /// Up to `limit` items queued so far, oldest first, waiting while there are none; nil once the queue is
    /// finished and empty. Meant for one writer at a time.
    public func next(limit: Int = .max) async -> [Element]? {
        var iterator = signals.makeAsyncIterator()
        while true {
            let (batch, finished) = state.withLock { state -> ([Element], Bool) in
                let end = state.head + min(max(1, limit), state.items.count - state.head)
                let batch = Array(state.items[state.head..<end])
                state.head = end
                if state.head == state.items.count {
                    state.items.removeAll(keepingCapacity: true)
                    state.head = 0
                } else if state.head >= 4096 {
                    state.items.removeFirst(state.head)
                    state.head = 0
                }
                return (batch, state.finished)
            }
            if !batch.isEmpty { return batch }
            if finished { return nil }
            guard await iterator.next() != nil else { return nil }
        }
    }
}
