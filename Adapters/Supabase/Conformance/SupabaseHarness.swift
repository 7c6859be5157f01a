import Foundation
import SupabaseAdapter
import SupabaseProtocol
import SwitchboardConformance
import SwitchboardCore
import SwitchboardFaults
import SwitchboardNet

/// Runs the conformance kit against a running Supabase-like server: per scenario it creates a conversation
/// with two fresh members through the service role, and signs each member's token with the server's secret.
/// Its adapters are wrapped in fault-injecting decorators sharing one `InjectedFaults`.
public struct SupabaseHarness: ConformanceHarness {
    /// The server's base URL.
    public let baseURL: URL
    private let signer: JWTSigner
    private let http: HTTPClient

    /// A harness for the server at `baseURL` whose JWT secret is `jwtSecret`.
    public init(baseURL: URL, jwtSecret: String, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.signer = JWTSigner(secret: jwtSecret)
        self.http = http
    }

    /// `supabase`.
    public var adapterName: String { "supabase" }

    /// A token for `role` (and `sub`), valid for a day.
    public func token(role: String, sub: String? = nil) -> String {
        signer.token(role: JWTRole(role), subject: sub, lifetime: 86_400)
    }

    /// A new conversation of two new members on the server.
    public func makeFixture() async throws -> ConformanceFixture {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
        // REST first: a wrong JWT secret is a plain 401 there (storage answers 403 `AccessDenied`).
        let conversation = try await createConversation(members: [alice, bob])
        try await ensureBucket("attachments")
        let faults = InjectedFaults()
        let anonKey = token(role: "anon")
        let baseURL = self.baseURL, http = self.http
        let makeToken: @Sendable (UserID) -> String = { user in self.token(role: "authenticated", sub: user.rawValue) }
        return ConformanceFixture(
            conversation: conversation, alice: alice, bob: bob,
            makeAdapter: { user in
                let configuration = SupabaseAdapter.Configuration(baseURL: baseURL, apiKey: anonKey,
                                                                  accessToken: makeToken(user), localUser: user)
                return FaultInjectingAdapter(wrapping: SupabaseAdapter(configuration: configuration, http: http), faults: faults)
            },
            faults: faults, clock: ManualClock())
    }

    /// Creates a conversation and its members with the service role; returns its ID.
    public func createConversation(title: String = "conformance", members: [UserID]) async throws -> ConversationID {
        try await serviceClient.createConversation(title: title, members: members)
    }

    /// Creates the private storage bucket `name` with the service role unless it exists.
    public func ensureBucket(_ name: String) async throws {
        try await serviceClient.ensureBucket(name)
    }

    /// A service-role client for the server.
    private var serviceClient: SupabaseServiceClient {
        SupabaseServiceClient(baseURL: baseURL, serviceToken: token(role: "service_role"), http: http)
    }
}
