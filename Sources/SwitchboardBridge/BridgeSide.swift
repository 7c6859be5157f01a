import Foundation
import SwitchboardCore

/// One end of a bridged conversation pair: an adapter signed in as the bridge's account and a conversation.
public struct BridgeSide: Sendable {
    /// A short name for logs and status lines (for example `xmtp` or `supabase`).
    public var name: String
    /// The adapter, signed in as the bridge's own account on that backend.
    public var adapter: any ChatAdapter
    /// The conversation on that backend.
    public var conversation: ConversationID

    /// A side from its parts.
    public init(name: String, adapter: any ChatAdapter, conversation: ConversationID) {
        self.name = name
        self.adapter = adapter
        self.conversation = conversation
    }

    /// The backend's ID in mappings.
    var backend: BackendID { adapter.backend }

    /// Throws `invalidArgument` when `a` and `b` use the same backend ID (their mappings would collide).
    static func checkDistinct(_ a: BridgeSide, _ b: BridgeSide) throws {
        guard a.backend != b.backend else {
            throw SwitchboardError(.invalidArgument, "both sides use backend ID \(a.backend); give each side its own")
        }
    }
}

/// Tunables of a bridge.
public struct BridgeConfiguration: Sendable {
    /// Changes read per delta-sync page.
    public var batchSize = 200
    /// How often each side is polled even without live events.
    public var pollInterval: Duration = .seconds(2)
    /// While one side's changes come in full pages (a backlog), how often the other side is read meanwhile.
    public var otherDirectionInterval: Duration = .milliseconds(50)
    /// First retry delay after an error.
    public var retryBase: Duration = .milliseconds(200)
    /// Longest retry delay.
    public var retryCap: Duration = .seconds(10)
    /// Where the bridge's records go (never secrets; nowhere unless a handler is given).
    public var logger = Logger(label: "bridge")
    /// Whether runs of plain new messages towards a `BulkPublishingAdapter` are copied in batches (prepare all →
    /// persist their mappings and prepared copies in one transaction → `publishAll` → bookkeeping).
    public var batchCopies = true
    /// Whether messages written by the source side's own account are copied too (a migration of one's own history),
    /// except those that are copies made from the other side (mapped there, or naming it in `bridge.origin`). A live
    /// bridge leaves its account's messages alone: they are its own copies coming back.
    public var copiesOwnMessages = false

    /// Defaults.
    public init() {}
}

/// What a bridge has done so far (counted from its own work; the demo counts from the backends instead).
public struct BridgeStats: Sendable, Hashable {
    /// Messages published A → B.
    public var messagesAToB = 0
    /// Messages published B → A.
    public var messagesBToA = 0
    /// Edits, deletes, reactions and receipts applied on the other side.
    public var updates = 0
    /// Operations waiting for their target to be bridged.
    public var waiting = 0
    /// Changes set aside in the persisted quarantine (a retry could not bridge them); listed, retried and dropped
    /// with `switchboard bridge quarantine`.
    public var quarantined = 0
    /// Source messages whose carried key was not theirs to use (DESIGN §2): bridged apart under an ID of their own,
    /// or, standing where this pair's copy should be, left alone.
    public var keyCollisions = 0
    /// The last error, if the latest pass failed.
    public var lastError: String?
    /// When the last pass finished without error.
    public var lastSuccess: Date?
    /// The age in seconds of the oldest change read and not yet bridged; 0 once a catch-up found nothing left, nil
    /// before the first pass.
    public var lag: TimeInterval?

    /// Zero counts.
    public init() {}
}

/// Which sides something may have changed on since they were last read: set by a side's live events (and the
/// poll), cleared when a pass starts reading the side. A running bridge skips reading the quiet side while the
/// other has a backlog.
final class SideSignals: Sendable {
    private let state: Locked<Set<BackendID>>

    /// Every side in `all` starts signalled (nothing has been read yet).
    init(all: [BackendID]) {
        state = Locked(Set(all))
    }

    /// Something may have changed on `side`.
    func signal(_ side: BackendID) {
        _ = state.withLock { $0.insert(side) }
    }

    /// A pass starts reading `side`: what it reads covers every signal so far.
    func clear(_ side: BackendID) {
        _ = state.withLock { $0.remove(side) }
    }

    /// Whether `side` was signalled since it was last read.
    func isSignalled(_ side: BackendID) -> Bool {
        state.withLock { $0.contains(side) }
    }
}
