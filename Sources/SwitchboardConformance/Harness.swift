import Foundation
import Synchronization
import SwitchboardCore

/// Faults a harness can inject into its backend; a scenario that needs one the harness lacks is skipped.
public protocol FaultInjector: Sendable {
    /// The next `count` publishes fail without storing anything.
    func failNextPublishes(_ count: Int) async
    /// The next `count` publishes are stored but their responses are lost.
    func loseNextPublishResponses(_ count: Int) async
    /// Every publish waits this long first.
    func setPublishDelay(_ delay: Duration) async
    /// Every live stream drops (changes meanwhile are lost live) and reconnects.
    func dropLiveStreams() async
    /// Every live event is delivered twice.
    func setDuplicateDeliveries(_ isOn: Bool) async
    /// Live events are delivered in swapped pairs.
    func setOutOfOrderDelivery(_ isOn: Bool) async
    /// The backend refuses edits.
    func setRefuseEdits(_ isOn: Bool) async
    /// The backend refuses deletes.
    func setRefuseDeletes(_ isOn: Bool) async
    /// Uploads of files with this name fail (nil: stop failing).
    func setFailingUpload(named filename: String?) async
    /// Cuts a user off the backend (publishes fail, live streams drop) or brings them back.
    func setOffline(_ user: UserID, _ isOffline: Bool) async
    /// Removes every fault.
    func reset() async
}

/// A network adapter's transport faults are the kit's fault controls as they are (the same operations).
extension AdapterFaults: FaultInjector {}

/// A clock tests can move forward; shared by the engine and, where it can, the backend.
public final class ManualClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

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
    /// The backend's fault controls, when it has them.
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
