import Synchronization
import SwitchboardCore

/// Collects a live stream's events as they arrive so the engine can reconcile everything queued at that moment
/// in one store transaction, instead of one transaction (and one actor hop) per event.
final class LiveInbox: Sendable {
    private let queued = Mutex<[AdapterEvent]>([])
    private let doorbell: AsyncStream<Void>.Continuation
    /// Rings once (coalesced) whenever events were queued since the last `takeAll`.
    let rings: AsyncStream<Void>

    /// An empty inbox.
    init() {
        (rings, doorbell) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Queues `event` and rings.
    func push(_ event: AdapterEvent) {
        queued.withLock { $0.append(event) }
        doorbell.yield()
    }

    /// Everything queued so far, in arrival order; the inbox is empty afterwards.
    func takeAll() -> [AdapterEvent] {
        queued.withLock { events in
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
    }

    /// Ends `rings` (after the stream it was fed from ended or was cancelled).
    func finish() { doorbell.finish() }
}
