import Foundation
import MemoryAdapter
import SwitchboardConformance
import SwitchboardCore

/// Runs the conformance kit against a fresh in-process memory backend per scenario.
public struct MemoryHarness: ConformanceHarness {
    /// The backend's ID scheme.
    public let scheme: IDScheme
    /// Whether publish hides the server ID so it is learnt only from the echo (server scheme).
    public let echoOnly: Bool
    /// The backend's reaction policy.
    public let reactionPolicy: ReactionPolicy

    /// A harness for one scheme.
    public init(scheme: IDScheme, echoOnly: Bool = false, reactionPolicy: ReactionPolicy = .onePerUserPerSymbol) {
        self.scheme = scheme
        self.echoOnly = echoOnly
        self.reactionPolicy = reactionPolicy
    }

    /// `memory(<scheme>)`.
    public var adapterName: String { "memory(\(scheme.rawValue)\(echoOnly ? ", echo-only" : ""))" }

    /// A new backend with a conversation of alice and bob.
    public func makeFixture() async throws -> ConformanceFixture {
        let clock = ManualClock()
        let backend = try MemoryBackend(scheme: scheme, reactionPolicy: reactionPolicy, clock: { clock.now() })
        backend.faults.echoOnly = echoOnly
        let conversation = ConversationID("room-\(UUID().uuidString.prefix(8).lowercased())")
        let alice = UserID("alice"), bob = UserID("bob")
        try backend.createConversation(conversation, members: [alice, bob])
        return ConformanceFixture(conversation: conversation, alice: alice, bob: bob,
                                  makeAdapter: { user in backend.makeAdapter(for: user) },
                                  faults: MemoryFaultInjector(backend: backend, echoOnly: echoOnly), clock: clock)
    }
}

/// The kit's fault controls mapped onto a memory backend's fault plan.
struct MemoryFaultInjector: FaultInjector {
    let backend: MemoryBackend
    let echoOnly: Bool

    func failNextPublishes(_ count: Int) async { backend.faults.failNextPublishes(count) }
    func loseNextPublishResponses(_ count: Int) async { backend.faults.loseNextPublishResponses(count) }
    func setPublishDelay(_ delay: Duration) async { backend.faults.publishDelay = delay }
    func dropLiveStreams() async { backend.faults.dropLiveStreams() }
    func setDuplicateDeliveries(_ isOn: Bool) async { backend.faults.duplicateDeliveries = isOn }
    func setOutOfOrderDelivery(_ isOn: Bool) async { backend.faults.outOfOrderDelivery = isOn }
    func setRefuseEdits(_ isOn: Bool) async { backend.faults.refuseEdits = isOn }
    func setRefuseDeletes(_ isOn: Bool) async { backend.faults.refuseDeletes = isOn }
    func setFailingUpload(named filename: String?) async {
        if let filename { backend.faults.failUploads(named: filename) } else { backend.faults.reset(); backend.faults.echoOnly = echoOnly }
    }
    func setOffline(_ user: UserID, _ isOffline: Bool) async { backend.faults.setOffline(user, isOffline) }
    func reset() async {
        backend.faults.reset()
        backend.faults.echoOnly = echoOnly
    }
}
