import Foundation
import SwitchboardCore
import SwitchboardFaults

/// One kind of fault a scenario injects; a harness that cannot inject it has the scenario reported as not run.
public enum FaultKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// Publishes fail before reaching the backend.
    case failPublish = "fail-publish"
    /// Publishes reach the backend and their responses are lost.
    case loseResponse = "lose-response"
    /// Publishes are delayed.
    case publishDelay = "publish-delay"
    /// Edits are refused.
    case refuseEdit = "refuse-edit"
    /// Deletes are refused.
    case refuseDelete = "refuse-delete"
    /// Uploads of a named file fail.
    case failUpload = "fail-upload"
    /// A user is cut off.
    case offline
    /// Live streams drop and reconnect.
    case dropLive = "drop-live"
    /// Live events arrive twice.
    case duplicateDelivery = "duplicate-delivery"
    /// Live events arrive in swapped pairs.
    case reorderDelivery = "reorder-delivery"
    /// Publishes are refused with a rate limit (HTTP 429) and a `Retry-After`.
    case rateLimit = "rate-limit"
}

/// One fault to set (or to switch off, for those that stay on).
public enum Fault: Sendable, Hashable {
    /// The next `count` publishes fail without storing anything.
    case failPublishes(count: Int)
    /// The next `count` publishes are stored but their responses are lost.
    case loseResponses(count: Int)
    /// Every publish waits this long first.
    case delayPublishes(Duration)
    /// The backend refuses edits, or no longer.
    case refuseEdits(Bool)
    /// The backend refuses deletes, or no longer.
    case refuseDeletes(Bool)
    /// Uploads of files with this name fail (nil: stop failing).
    case failUploads(named: String?)
    /// Cuts a user off the backend (publishes fail, live streams drop and stay down) or brings them back.
    case offline(UserID, Bool)
    /// Every live stream drops (changes meanwhile are lost live) and reconnects.
    case dropLiveStreams
    /// Every live event is delivered twice, or no longer.
    case duplicateDeliveries(Bool)
    /// Live events are delivered in swapped pairs, or no longer.
    case reorderDeliveries(Bool)
    /// The next `count` publishes are refused as rate limited (a retryable `transport` error, HTTP 429) asking to
    /// wait `retryAfter`; nothing is stored.
    case rateLimitPublishes(count: Int, retryAfter: Duration)

    /// Its kind.
    public var kind: FaultKind {
        switch self {
        case .failPublishes: .failPublish
        case .loseResponses: .loseResponse
        case .delayPublishes: .publishDelay
        case .refuseEdits: .refuseEdit
        case .refuseDeletes: .refuseDelete
        case .failUploads: .failUpload
        case .offline: .offline
        case .dropLiveStreams: .dropLive
        case .duplicateDeliveries: .duplicateDelivery
        case .reorderDeliveries: .reorderDelivery
        case .rateLimitPublishes: .rateLimit
        }
    }
}

/// Faults a harness can inject into its backend. A kind it cannot inject is listed in `unsupportedFaults` with the
/// reason, and every scenario needing it is reported as not run (never as passed).
public protocol FaultInjector: Sendable {
    /// The fault kinds this injector cannot inject, each with the reason (none unless it says so).
    var unsupportedFaults: [FaultKind: String] { get }
    /// Sets `fault`.
    func inject(_ fault: Fault) async
    /// Removes every fault.
    func reset() async
}

extension FaultInjector {
    /// None: every kind can be injected.
    public var unsupportedFaults: [FaultKind: String] { [:] }
}

/// The fault-injecting decorators' shared state injects every kind, whatever adapter they wrap.
extension InjectedFaults: FaultInjector {
    /// Sets `fault` for every decorator sharing this state.
    public func inject(_ fault: Fault) async {
        switch fault {
        case .failPublishes(let count): failNextPublishes(count)
        case .loseResponses(let count): loseNextPublishResponses(count)
        case .delayPublishes(let delay): setPublishDelay(delay)
        case .refuseEdits(let isOn): setRefuseEdits(isOn)
        case .refuseDeletes(let isOn): setRefuseDeletes(isOn)
        case .failUploads(let filename): setFailingUpload(named: filename)
        case .offline(let user, let isOffline): setOffline(user, isOffline)
        case .dropLiveStreams: dropLiveStreams()
        case .duplicateDeliveries(let isOn): setDuplicateDeliveries(isOn)
        case .reorderDeliveries(let isOn): setOutOfOrderDelivery(isOn)
        case .rateLimitPublishes(let count, let retryAfter): rateLimitNextPublishes(count, retryAfter: retryAfter)
        }
    }
}

/// A clock tests can move forward; shared by the engine and, where it can, the backend.
public final class ManualClock: Sendable {
    private let offset = Locked<TimeInterval>(0)

    /// A clock at real time.
    public init() {}

    /// Real time plus the accumulated advance.
    public func now() -> Date { Date().addingTimeInterval(offset.withLock { $0 }) }

    /// Moves the clock forward.
    public func advance(by interval: TimeInterval) { offset.withLock { $0 += interval } }
}

/// One fresh backend environment: a conversation with two members and a way to make their adapters.
public struct ConformanceFixture: Sendable {
    /// The shared conversation.
    public var conversation: ConversationID
    /// The first member (the one whose client most scenarios drive).
    public var alice: UserID
    /// The second member.
    public var bob: UserID
    /// Makes a new adapter signed in as the user (a new connection each call).
    public var makeAdapter: @Sendable (UserID) async throws -> any ChatAdapter
    /// The fault controls (the `InjectedFaults` of the adapters' decorators, for the standard harnesses); nil when
    /// the harness has none, and then every scenario injecting a fault is reported as not run.
    public var faults: (any FaultInjector)?
    /// The clock the backend uses, when a test can move it.
    public var clock: ManualClock
    /// Releases the environment.
    public var tearDown: @Sendable () async -> Void

    /// Builds a fixture.
    public init(conversation: ConversationID, alice: UserID, bob: UserID,
                makeAdapter: @escaping @Sendable (UserID) async throws -> any ChatAdapter,
                faults: (any FaultInjector)?, clock: ManualClock, tearDown: @escaping @Sendable () async -> Void = {}) {
        self.conversation = conversation
        self.alice = alice
        self.bob = bob
        self.makeAdapter = makeAdapter
        self.faults = faults
        self.clock = clock
        self.tearDown = tearDown
    }
}

/// Makes fresh environments for the kit; one per scenario.
public protocol ConformanceHarness: Sendable {
    /// The adapter's name in reports.
    var adapterName: String { get }
    /// A fresh environment.
    func makeFixture() async throws -> ConformanceFixture
}
