import Foundation
import SwitchboardCore

/// The faults currently planned, kept inside the server's state so they apply atomically with its changes.
struct FaultSettings: Sendable {
    var failingPublishes = 0
    var failingPublishesRetryable = true
    var lostPublishResponses = 0
    var publishDelay: Duration = .zero
    var publishesHeld = false
    var echoOnly = false
    var duplicateDeliveries = false
    var outOfOrderDelivery = false
    var reconnectDelay: Duration = .milliseconds(20)
    var offlineUsers: Set<UserID> = []
    var refuseEdits = false
    var refuseDeletes = false
    var refuseReactions = false
    var failingUploadNames: Set<String> = []
    var failingUploads = 0
    var publishCallCount = 0
}

/// What a `MemoryBackend` will do wrong next, settable at any time from tests, plus counters to assert on.
public final class FaultPlan: Sendable {
    private let server: MemoryServer

    init(server: MemoryServer) {
        self.server = server
    }

    private func read<T: Sendable>(_ body: (FaultSettings) -> T) -> T {
        server.state.withLock { body($0.faults) }
    }

    private func update(_ body: (inout FaultSettings) -> Void) {
        server.state.withLock { body(&$0.faults) }
    }

    // MARK: Publish

    /// The next `count` publishes throw a transport error without storing anything.
    public func failNextPublishes(_ count: Int, retryable: Bool = true) {
        update {
            $0.failingPublishes = max(0, count)
            $0.failingPublishesRetryable = retryable
        }
    }

    /// The next `count` publishes store the message (and notify) but then throw a transport error to the caller.
    public func loseNextPublishResponses(_ count: Int) {
        update { $0.lostPublishResponses = max(0, count) }
    }

    /// How long each publish waits before it is handled (cancellable).
    public var publishDelay: Duration {
        get { read(\.publishDelay) }
        set { update { $0.publishDelay = newValue } }
    }

    /// While true, every publish waits (cancellable) before it is handled, until this is set back to false: a
    /// test can look at the in-flight state for as long as it needs, however slowly the machine runs it.
    public var holdsPublishes: Bool {
        get { read(\.publishesHeld) }
        set { update { $0.publishesHeld = newValue } }
    }

    /// Whether publish responses omit the remote ID and time, so the ID is only learnt from the echo.
    public var echoOnly: Bool {
        get { read(\.echoOnly) }
        set { update { $0.echoOnly = newValue } }
    }

    // MARK: Live delivery

    /// Whether every live change and typing event is delivered twice.
    public var duplicateDeliveries: Bool {
        get { read(\.duplicateDeliveries) }
        set { update { $0.duplicateDeliveries = newValue } }
    }

    /// Whether live changes arrive in swapped pairs (one is held until the next; flushed on disconnect or switch-off).
    public var outOfOrderDelivery: Bool {
        get { read(\.outOfOrderDelivery) }
        set {
            server.state.withLock { state in
                state.faults.outOfOrderDelivery = newValue
                if !newValue { state.flushAllHeld() }
            }
        }
    }

    /// How long dropped live streams stay down before reconnecting (default 20 ms).
    public var reconnectDelay: Duration {
        get { read(\.reconnectDelay) }
        set { update { $0.reconnectDelay = newValue } }
    }

    /// Disconnects every current live stream; changes meanwhile are lost live; each reconnects after `reconnectDelay`.
    public func dropLiveStreams() {
        server.dropLiveStreams()
    }

    /// Takes a user offline (calls throw retryable transport errors, streams disconnect) or back online.
    public func setOffline(_ user: UserID, _ offline: Bool) {
        server.state.withLock { $0.setOffline(user, offline) }
    }

    /// Whether a user is offline.
    public func isOffline(_ user: UserID) -> Bool {
        read { $0.offlineUsers.contains(user) }
    }

    // MARK: Refusals

    /// Whether edits are refused.
    public var refuseEdits: Bool {
        get { read(\.refuseEdits) }
        set { update { $0.refuseEdits = newValue } }
    }

    /// Whether deletes are refused.
    public var refuseDeletes: Bool {
        get { read(\.refuseDeletes) }
        set { update { $0.refuseDeletes = newValue } }
    }

    /// Whether reaction changes are refused.
    public var refuseReactions: Bool {
        get { read(\.refuseReactions) }
        set { update { $0.refuseReactions = newValue } }
    }

    // MARK: Uploads

    /// Every upload of a file with this name fails with a transport error after reporting some progress.
    public func failUploads(named filename: String) {
        update { $0.failingUploadNames.insert(filename) }
    }

    /// Uploads of a file with this name succeed again.
    public func stopFailingUploads(named filename: String) {
        update { $0.failingUploadNames.remove(filename) }
    }

    /// The next `count` uploads fail with a transport error after reporting some progress.
    public func failNextUploads(_ count: Int) {
        update { $0.failingUploads = max(0, count) }
    }

    // MARK: Whole plan

    /// Clears every planned fault and brings every user online (counters are kept).
    public func reset() {
        server.state.withLock { state in
            for user in state.faults.offlineUsers { state.setOffline(user, false) }
            state.flushAllHeld()
            let count = state.faults.publishCallCount
            state.faults = FaultSettings()
            state.faults.publishCallCount = count
        }
    }

    // MARK: Counters

    /// How many publish calls reached the backend (failed ones included).
    public var publishCallCount: Int { read(\.publishCallCount) }

    /// How many message rows the server holds in a conversation.
    public func storedMessageCount(in conversation: ConversationID) -> Int {
        server.state.withLock { $0.conversations[conversation]?.seqs.count ?? 0 }
    }

    /// The server rows of a conversation, in seq order.
    public func messages(in conversation: ConversationID) -> [MemoryMessageRow] {
        server.state.withLock { $0.messages(in: conversation) }
    }
}
