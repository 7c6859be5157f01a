import Foundation
import SwitchboardCore

/// The faults planned for every `FaultInjectingAdapter` of one environment (a harness's fixture, a test), set at
/// any time from outside: publishes that fail or lose their response, a publish delay, refused edits and deletes,
/// failing uploads, offline users, dropped, duplicated or reordered live deliveries. Nothing is planned at first.
public final class InjectedFaults: Sendable {
    /// What to do with one publish call.
    enum PublishFault: Sendable, Equatable {
        /// Pass it on.
        case none
        /// Fail it before it reaches the inner adapter.
        case fail
        /// Pass it on, then report its response as lost.
        case loseResponse
        /// Refuse it as rate limited, asking to wait this long (`Retry-After`), before it reaches the inner adapter.
        case rateLimit(Duration)
    }

    /// What a live relay is told.
    enum LiveSignal: Sendable {
        /// Cut the open inner stream (the reason goes into the `.disconnected` event).
        case cut(reason: String)
        /// The relay's user is online again: connect if down.
        case online
        /// Deliver any change held back by the reorder fault.
        case flush
    }

    private struct Observer {
        let user: UserID
        let signal: @Sendable (LiveSignal) -> Void
    }

    private struct State {
        var failPublishes = 0
        var losePublishResponses = 0
        var rateLimitedPublishes = 0
        var rateLimitRetryAfter: Duration = .zero
        var publishDelay: Duration = .zero
        var duplicateDeliveries = false
        var reorderDeliveries = false
        var refuseEdits = false
        var refuseDeletes = false
        var failingUploads: Set<String> = []
        var offline: Set<UserID> = []
        var reconnectDelay: Duration = .milliseconds(20)
    }

    private let state = Locked(State())
    private let observers = Locked<[UUID: Observer]>([:])
    private let cuts = Locked(0)

    /// No faults planned.
    public init() {}

    // MARK: Planning

    /// The next `count` publish calls fail with a retryable transport error before reaching the inner adapter.
    public func failNextPublishes(_ count: Int) { state.withLock { $0.failPublishes += max(0, count) } }

    /// The next `count` publish calls reach the inner adapter, which commits them, then fail with a retryable
    /// transport error as if the response had been lost on the way back.
    public func loseNextPublishResponses(_ count: Int) { state.withLock { $0.losePublishResponses += max(0, count) } }

    /// The next `count` publish calls are refused before reaching the inner adapter as a server's rate limit (HTTP
    /// 429) refuses them: a retryable `transport` error asking to wait `retryAfter`.
    public func rateLimitNextPublishes(_ count: Int, retryAfter: Duration) {
        state.withLock { state in
            state.rateLimitedPublishes += max(0, count)
            state.rateLimitRetryAfter = retryAfter
        }
    }

    /// Every publish call waits this long before anything else (cancellable).
    public func setPublishDelay(_ delay: Duration) { state.withLock { $0.publishDelay = delay } }

    /// Edits are refused (`refused`) without reaching the inner adapter.
    public func setRefuseEdits(_ isOn: Bool) { state.withLock { $0.refuseEdits = isOn } }

    /// Deletes are refused (`refused`) without reaching the inner adapter.
    public func setRefuseDeletes(_ isOn: Bool) { state.withLock { $0.refuseDeletes = isOn } }

    /// Uploads of files named `filename` fail with a retryable transport error; nil stops every such failure.
    public func setFailingUpload(named filename: String?) {
        state.withLock { state in
            if let filename { state.failingUploads.insert(filename) } else { state.failingUploads.removeAll() }
        }
    }

    /// Every live change is delivered twice.
    public func setDuplicateDeliveries(_ isOn: Bool) { state.withLock { $0.duplicateDeliveries = isOn } }

    /// Live changes arrive in swapped pairs; switching it off delivers any change still held back.
    public func setOutOfOrderDelivery(_ isOn: Bool) {
        state.withLock { $0.reorderDeliveries = isOn }
        if !isOn { signal(.flush) }
    }

    /// How long a dropped live stream stays down before it connects again (20 ms unless set).
    public var reconnectDelay: Duration {
        get { state.withLock { $0.reconnectDelay } }
        set { state.withLock { $0.reconnectDelay = newValue } }
    }

    /// Every open live stream is cut now: it reports `.disconnected`, whatever changes meanwhile is lost live, and
    /// after `reconnectDelay` it subscribes again (the inner adapter then reports `.connected`).
    public func dropLiveStreams() { signal(.cut(reason: "live stream dropped (injected)")) }

    /// Cuts `user` off (every call of theirs fails with a retryable transport error; their live streams are cut and
    /// stay down) or brings them back (their live streams subscribe again).
    public func setOffline(_ user: UserID, _ isOffline: Bool) {
        let changed = state.withLock { state in
            isOffline ? state.offline.insert(user).inserted : state.offline.remove(user) != nil
        }
        guard changed else { return }
        signal(isOffline ? .cut(reason: "offline (injected)") : .online, to: user)
    }

    /// Clears every planned fault and brings every user back online (the reconnect delay and the cut count stay).
    public func reset() {
        let wasOffline = state.withLock { state in
            let offline = state.offline
            let delay = state.reconnectDelay
            state = State()
            state.reconnectDelay = delay
            return offline
        }
        signal(.flush)
        for user in wasOffline { signal(.online, to: user) }
    }

    /// How many connected live streams (ones whose inner stream had said `.connected`) `dropLiveStreams` and
    /// `setOffline` have cut so far.
    public var liveStreamCuts: Int { cuts.withLock { $0 } }

    // MARK: Reading (the decorators)

    /// The fault for `user`'s next publish call, consuming a counted one, and the delay to wait first.
    func nextPublish(by user: UserID) -> (fault: PublishFault, delay: Duration) {
        state.withLock { state in
            if state.offline.contains(user) { return (.fail, state.publishDelay) }
            if state.failPublishes > 0 {
                state.failPublishes -= 1
                return (.fail, state.publishDelay)
            }
            if state.losePublishResponses > 0 {
                state.losePublishResponses -= 1
                return (.loseResponse, state.publishDelay)
            }
            if state.rateLimitedPublishes > 0 {
                state.rateLimitedPublishes -= 1
                return (.rateLimit(state.rateLimitRetryAfter), state.publishDelay)
            }
            return (.none, state.publishDelay)
        }
    }

    /// Whether `user` is cut off.
    func isOffline(_ user: UserID) -> Bool { state.withLock { $0.offline.contains(user) } }
    /// Whether edits are refused.
    var refusesEdits: Bool { state.withLock { $0.refuseEdits } }
    /// Whether deletes are refused.
    var refusesDeletes: Bool { state.withLock { $0.refuseDeletes } }
    /// Whether uploads of `filename` fail.
    func uploadFails(_ filename: String) -> Bool { state.withLock { $0.failingUploads.contains(filename) } }
    /// Whether live changes are delivered twice, and whether in swapped pairs.
    var delivery: (duplicates: Bool, reorders: Bool) {
        state.withLock { ($0.duplicateDeliveries, $0.reorderDeliveries) }
    }

    /// Calls `signal` for every live fault that concerns `user` until `removeObserver` with the returned key.
    func addObserver(for user: UserID, _ signal: @escaping @Sendable (LiveSignal) -> Void) -> UUID {
        let key = UUID()
        observers.withLock { $0[key] = Observer(user: user, signal: signal) }
        return key
    }

    /// Stops telling an observer.
    func removeObserver(_ key: UUID) { observers.withLock { _ = $0.removeValue(forKey: key) } }

    /// Counts one open live stream cut.
    func recordCut() { cuts.withLock { $0 += 1 } }

    /// Tells the relays of `user` (every relay when nil).
    private func signal(_ signal: LiveSignal, to user: UserID? = nil) {
        let targets = observers.withLock { observers in
            observers.values.filter { user == nil || $0.user == user }.map(\.signal)
        }
        for target in targets { target(signal) }
    }
}
