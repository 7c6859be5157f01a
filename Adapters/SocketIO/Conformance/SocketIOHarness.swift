import Foundation
import SocketIOAdapter
import SwitchboardConformance
import SwitchboardCore
import SwitchboardFaults
import SwitchboardNet

/// Runs the conformance kit against a running Socket-style server: per scenario it registers two fresh users
/// (`POST /auth/register`), creates a conversation of the two, and builds adapters signed in with their tokens,
/// wrapped in fault-injecting decorators sharing one `InjectedFaults`.
public struct SocketIOHarness: ConformanceHarness {
    /// The server's base URL.
    public let baseURL: URL
    /// The first reconnect delay of the adapters it builds (nil: the adapter's 1 s).
    public var reconnectInitialDelay: Duration?
    private let http: HTTPClient

    /// A harness for the server at `baseURL`.
    public init(baseURL: URL, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.http = http
    }

    /// `socketio`.
    public var adapterName: String { "socketio" }

    /// Registers `user` and returns its bearer token.
    public func register(_ user: UserID) async throws -> String {
        try await SocketIOAccounts(baseURL: baseURL, http: http).register(user)
    }

    /// Creates conversation `id` as the user of `token` with `members` (the creator is always one).
    public func createConversation(_ id: ConversationID, members: [UserID], token: String) async throws {
        try await SocketIOAccounts(baseURL: baseURL, http: http).createConversation(id, members: members, token: token)
    }

    /// A new conversation of two new users on the server, and adapters for them sharing one `InjectedFaults`.
    public func makeFixture() async throws -> ConformanceFixture {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
        let tokens = [alice: try await register(alice), bob: try await register(bob)]
        let conversation = ConversationID("conformance-\(suffix)")
        try await createConversation(conversation, members: [alice, bob], token: tokens[alice] ?? "")
        let faults = InjectedFaults()
        let baseURL = self.baseURL, http = self.http, initialDelay = reconnectInitialDelay
        return ConformanceFixture(
            conversation: conversation, alice: alice, bob: bob,
            makeAdapter: { user in
                guard let token = tokens[user] else {
                    throw SwitchboardError(.unauthorized, "the fixture has no token for \(user)")
                }
                var configuration = SocketIOAdapter.Configuration(baseURL: baseURL, token: token, localUser: user)
                if let initialDelay { configuration.reconnectInitialDelay = initialDelay }
                return FaultInjectingAdapter(wrapping: SocketIOAdapter(configuration: configuration, http: http), faults: faults)
            },
            faults: faults, clock: ManualClock())
    }
}
