import Foundation
import SwitchboardCore

/// The lock-guarded server state shared by a `MemoryBackend` and its `FaultPlan`.
final class MemoryServer: Sendable {
    /// Everything the server knows; one lock, so every change and its live delivery happen in one order.
    let state: Locked<ServerState>

    init(state: consuming ServerState) {
        self.state = Locked(state)
    }

    deinit {
        let continuations = state.withLock { state in
            state.journal?.close()
            state.journal = nil
            return state.removeAllSubscribers()
        }
        for continuation in continuations { continuation.finish() }
    }

    /// Removes a subscription (its consumer stopped).
    func unsubscribe(_ token: UInt64) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: token) }
    }

    /// Drops every live stream now and restores them after the configured reconnect delay.
    func dropLiveStreams() {
        let (epoch, delay) = state.withLock { state in (state.dropLiveStreams(), state.faults.reconnectDelay) }
        Task { [weak self] in
            try? await Task.sleep(for: delay)
            self?.state.withLock { $0.reconnect(epoch: epoch) }
        }
    }
}
