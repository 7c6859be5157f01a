import Foundation
import MemoryAdapter
import SwitchboardConformance
import SwitchboardCore
import SwitchboardFaults

/// Runs the conformance kit against a fresh in-process memory backend per scenario, its adapters wrapped in
/// fault-injecting decorators that share one `InjectedFaults` (the fixture's fault controls).
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
        let faults = InjectedFaults()
        return ConformanceFixture(conversation: conversation, alice: alice, bob: bob,
                                  makeAdapter: { user in FaultInjectingAdapter(wrapping: backend.makeAdapter(for: user), faults: faults) },
                                  faults: faults, clock: clock)
    }
}
