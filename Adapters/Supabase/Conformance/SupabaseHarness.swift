import Foundation
import SupabaseAdapter
import SupabaseProtocol
import SwitchboardConformance
import SwitchboardCore
import SwitchboardNet

/// Runs the conformance kit against a running Supabase-like server: per scenario it creates a conversation
/// with two fresh members through the service role, and signs each member's token with the server's secret.
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
        var claims: [String: JSONValue] = ["role": .string(role), "exp": .int(Int64(Date().timeIntervalSince1970) + 86_400)]
        if let sub { claims["sub"] = .string(sub) }
        return signer.sign(claims: claims)
    }

    /// A new conversation of two new members on the server.
    public func makeFixture() async throws -> ConformanceFixture {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let alice = UserID("alice-\(suffix)"), bob = UserID("bob-\(suffix)")
        try await ensureBucket("attachments")
        let conversation = try await createConversation(members: [alice, bob])
        let faults = AdapterFaults()
        let anonKey = token(role: "anon")
        let baseURL = self.baseURL, http = self.http
        let makeToken: @Sendable (UserID) -> String = { user in self.token(role: "authenticated", sub: user.rawValue) }
        return ConformanceFixture(
            conversation: conversation, alice: alice, bob: bob,
            makeAdapter: { user in
                var configuration = SupabaseAdapter.Configuration(baseURL: baseURL, apiKey: anonKey,
                                                                  accessToken: makeToken(user), localUser: user)
                configuration.faults = faults
                return SupabaseAdapter(configuration: configuration, http: http)
            },
            faults: faults, clock: ManualClock())
    }

    /// Creates a conversation and its members with the service role; returns its ID.
    public func createConversation(title: String = "conformance", members: [UserID]) async throws -> ConversationID {
        let service = token(role: "service_role")
        var headers = HTTPHeaders()
        headers.add("apikey", service)
        headers.add("Authorization", "Bearer \(service)")
        headers.add("Content-Type", "application/json")
        headers.add("Prefer", "return=representation")
        let conversationBody: JSONValue = ["title": .string(title), "is_group": .bool(members.count > 2)]
        let created = try await http.send(HTTPRequest(method: .post, url: url("/rest/v1/conversations"), headers: headers,
                                                      body: Data(conversationBody.serialized.utf8)))
        guard created.isSuccess, let id = JSONValue.parseOrNil(created.body)?.arrayValue?.first?["id"]?.stringValue else {
            throw SwitchboardError(.transport, "creating a conversation failed: HTTP \(created.status) "
                                   + String(decoding: created.body.prefix(300), as: UTF8.self))
        }
        let rows = JSONValue.array(members.map { ["conversation_id": .string(id), "user_id": .string($0.rawValue)] })
        let added = try await http.send(HTTPRequest(method: .post, url: url("/rest/v1/members"), headers: headers,
                                                    body: Data(rows.serialized.utf8)))
        guard added.isSuccess else {
            throw SwitchboardError(.transport, "adding members failed: HTTP \(added.status) "
                                   + String(decoding: added.body.prefix(300), as: UTF8.self))
        }
        return ConversationID(id)
    }

    /// Creates the private storage bucket `name` with the service role unless it exists.
    public func ensureBucket(_ name: String) async throws {
        let service = token(role: "service_role")
        var headers = HTTPHeaders()
        headers.add("apikey", service)
        headers.add("Authorization", "Bearer \(service)")
        headers.add("Content-Type", "application/json")
        let body: JSONValue = ["id": .string(name), "name": .string(name), "public": false]
        let response = try await http.send(HTTPRequest(method: .post, url: url("/storage/v1/bucket"), headers: headers,
                                                       body: Data(body.serialized.utf8)))
        if response.isSuccess { return }
        if JSONValue.parseOrNil(response.body)?["statusCode"]?.stringValue == "409" { return }
        throw SwitchboardError(.transport, "creating bucket \(name) failed: HTTP \(response.status) "
                               + String(decoding: response.body.prefix(300), as: UTF8.self))
    }

    private func url(_ path: String) -> URL {
        var text = baseURL.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return URL(string: text + path) ?? baseURL
    }
}

extension SupabaseHarness {
    /// The adapters' transport faults behind a fixture's injector (for tests that count socket cuts).
    public static func faults(of injector: any FaultInjector) -> AdapterFaults? {
        injector as? AdapterFaults
    }
}
