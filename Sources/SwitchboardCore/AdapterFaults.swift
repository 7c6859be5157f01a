import Foundation
import Synchronization

/// Faults injected at a network adapter's transport boundary, so conformance scenarios can exercise a real
/// server under failure: requests that fail before reaching it, responses lost after it committed, refusals,
/// cut sockets, duplicated or reordered live events. Production adapters have none set.
public final class AdapterFaults: Sendable {
    private struct State {
        var failPublishes = 0
        var losePublishResponses = 0
        var publishDelay: Duration = .zero
        var duplicateDeliveries = false
        var outOfOrder = false
        var refuseEdits = false
        var refuseDeletes = false
        var failingUpload: String?
        var offline: Set<UserID> = []
        var dropGeneration = 0
        var observers: [UUID: @Sendable () -> Void] = [:]
        var socketCuts = 0
    }

    private let state = Mutex(State())

    /// No faults.
    public init() {}

    /// What to do with the next publish.
    public enum PublishFault: Sendable {
        /// Send it normally.
        case none
        /// Fail before sending.
        case fail
        /// Send it, then report the response as lost.
        case loseResponse
    }

    /// The fault for `user`'s next publish, consuming a counted one; `delay` to wait first.
    public func nextPublish(by user: UserID) -> (fault: PublishFault, delay: Duration) {
        state.withLock { state in
            if state.offline.contains(user) { return (.fail, state.publishDelay) }
            if state.failPublishes > 0 { state.failPublishes -= 1; return (.fail, state.publishDelay) }
            if state.losePublishResponses > 0 { state.losePublishResponses -= 1; return (.loseResponse, state.publishDelay) }
            return (.none, state.publishDelay)
        }
    }

    /// Whether `user`'s requests are cut off.
    public func isOffline(_ user: UserID) -> Bool { state.withLock { $0.offline.contains(user) } }
    /// Whether edits are refused.
    public var refusesEdits: Bool { state.withLock { $0.refuseEdits } }
    /// Whether deletes are refused.
    public var refusesDeletes: Bool { state.withLock { $0.refuseDeletes } }
    /// Whether live events are delivered twice.
    public var duplicatesDeliveries: Bool { state.withLock { $0.duplicateDeliveries } }
    /// Whether live events are delivered in swapped pairs.
    public var reordersDeliveries: Bool { state.withLock { $0.outOfOrder } }

    /// Whether `user`'s upload of `filename` must fail.
    public func uploadFails(_ filename: String, by user: UserID) -> Bool {
        state.withLock { $0.offline.contains(user) || $0.failingUpload == filename }
    }

    /// The next `count` publishes fail without reaching the server.
    public func failNextPublishes(_ count: Int) { state.withLock { $0.failPublishes += count } }
    /// The next `count` publishes reach the server but their responses are lost.
    public func loseNextPublishResponses(_ count: Int) { state.withLock { $0.losePublishResponses += count } }
    /// Every publish waits this long first.
    public func setPublishDelay(_ delay: Duration) { state.withLock { $0.publishDelay = delay } }
    /// Every live socket drops now (and reconnects on its own).
    public func dropLiveStreams() {
        let observers = state.withLock { state in
            state.dropGeneration += 1
            return Array(state.observers.values)
        }
        for observer in observers { observer() }
    }

    /// Open sockets actually cut by `dropLiveStreams` or `setOffline` so far.
    public var socketCuts: Int { state.withLock { $0.socketCuts } }

    /// Counts one socket cut.
    public func recordCut() { state.withLock { $0.socketCuts += 1 } }

    /// Calls `observer` on every drop until `removeObserver` with the returned key.
    public func addDropObserver(_ observer: @escaping @Sendable () -> Void) -> UUID {
        let key = UUID()
        state.withLock { $0.observers[key] = observer }
        return key
    }

    /// Stops calling an observer.
    public func removeObserver(_ key: UUID) { state.withLock { _ = $0.observers.removeValue(forKey: key) } }
    /// Every live event is delivered twice.
    public func setDuplicateDeliveries(_ isOn: Bool) { state.withLock { $0.duplicateDeliveries = isOn } }
    /// Live events are delivered in swapped pairs.
    public func setOutOfOrderDelivery(_ isOn: Bool) { state.withLock { $0.outOfOrder = isOn } }
    /// Edits are answered with a refusal.
    public func setRefuseEdits(_ isOn: Bool) { state.withLock { $0.refuseEdits = isOn } }
    /// Deletes are answered with a refusal.
    public func setRefuseDeletes(_ isOn: Bool) { state.withLock { $0.refuseDeletes = isOn } }
    /// Uploads of files named `filename` fail (nil: none).
    public func setFailingUpload(named filename: String?) { state.withLock { $0.failingUpload = filename } }
    /// Cuts `user`'s adapters off the network (requests fail, sockets drop and stay down) or restores them.
    public func setOffline(_ user: UserID, _ isOffline: Bool) {
        state.withLock { state in
            if isOffline { state.offline.insert(user) } else { state.offline.remove(user) }
        }
        if isOffline { dropLiveStreams() }
    }
    /// Clears every fault.
    public func reset() {
        state.withLock { state in
            let (generation, observers, cuts) = (state.dropGeneration, state.observers, state.socketCuts)
            state = State()
            state.dropGeneration = generation
            state.observers = observers
            state.socketCuts = cuts
        }
    }
}
