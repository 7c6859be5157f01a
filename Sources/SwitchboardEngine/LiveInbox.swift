import SwitchboardCore

/// Collects a live stream's events as they arrive so the engine can reconcile everything queued at that moment
/// in one store transaction, instead of one transaction (and one actor hop) per event.
final class LiveInbox: Sendable {
    private struct Queue {
        var events: [AdapterEvent] = []
        var changes = 0
        var dropped = 0
    }

    private let queued = Locked(Queue())
    private let doorbell: AsyncStream<Void>.Continuation
    /// The most changes that may wait; beyond that the queued changes are dropped (see `push`).
    let limit: Int
    /// Rings once (coalesced) whenever events were queued since the last `takeAll`.
    let rings: AsyncStream<Void>

    /// An empty inbox holding at most `limit` changes.
    init(limit: Int = .max) {
        self.limit = max(1, limit)
        (rings, doorbell) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues `event` and rings. A change that would make more than `limit` changes wait drops every queued
    /// change (signals stay) and then waits alone: the reader resynchronizes from its stored cursor instead,
    /// which brings the dropped ones back (live changes never move that cursor).
    func push(_ event: AdapterEvent) {
        queued.withLock { queue in
            if case .change = event {
                if queue.changes >= limit {
                    queue.dropped += queue.changes
                    queue.events.removeAll { if case .change = $0 { true } else { false } }
                    queue.changes = 0
                }
                queue.changes += 1
            }
            queue.events.append(event)
        }
        doorbell.yield()
    }

    /// Everything queued so far, in arrival order, and how many changes were dropped since the last call; the
    /// inbox is empty afterwards.
    func takeAll() -> (events: [AdapterEvent], dropped: Int) {
        queued.withLock { queue in
            defer {
                queue.events.removeAll(keepingCapacity: true)
                queue.changes = 0
                queue.dropped = 0
            }
            return (queue.events, queue.dropped)
        }
    }

    /// Ends `rings` (after the stream it was fed from ended or was cancelled).
    func finish() { doorbell.finish() }
}
