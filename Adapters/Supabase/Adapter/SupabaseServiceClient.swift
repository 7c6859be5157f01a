import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// Sets up conversations, members and storage buckets on a Supabase-like server with a `service_role` token
/// (which bypasses row-level security): what an operator does before users or a bridge can chat there.
public struct SupabaseServiceClient: Sendable {
    /// The server's base URL.
    public let baseURL: URL
    private let rest: SupabaseREST

    /// A client for the server at `baseURL` authenticating with `serviceToken` (a `service_role` JWT, also sent as
    /// the API key).
    public init(baseURL: URL, serviceToken: String, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.rest = SupabaseREST(baseURL: baseURL, apiKey: serviceToken,
                                 tokens: SupabaseTokenSource(token: serviceToken, provider: nil), http: http)
    }

    /// A client whose token is signed with the server's JWT secret, valid for `lifetime` seconds.
    public init(baseURL: URL, jwtSecret: String, lifetime: TimeInterval = 3600, http: HTTPClient = HTTPClient()) {
        self.init(baseURL: baseURL, serviceToken: JWTSigner(secret: jwtSecret).token(role: .serviceRole, lifetime: lifetime),
                  http: http)
    }

    /// Creates a conversation titled `title` with `members` (a group when more than two); returns its ID (a UUID).
    public func createConversation(title: String?, members: [UserID]) async throws -> ConversationID {
        let isGroup = JSONValue.bool(members.count > 2)
        let body: JSONValue = title.map { ["title": .string($0), "is_group": isGroup] } ?? ["is_group": isGroup]
        let rows = try await Self.doing("creating a conversation") {
            try await rest.write(.post, "conversations", query: [], body: body, prefer: "return=representation")
        }
        guard let id = rows.first?["id"]?.stringValue else {
            throw SwitchboardError(.transport, "the server created a conversation but did not return its id")
        }
        let conversation = ConversationID(id)
        if !members.isEmpty { try await addMembers(members, to: conversation) }
        return conversation
    }

    /// Adds `members` to `conversation`; members already there stay as they are. A conversation that does not exist
    /// is `unknownConversation`.
    public func addMembers(_ members: [UserID], to conversation: ConversationID) async throws {
        let rows = JSONValue.array(members.map { ["conversation_id": .string(conversation.rawValue), "user_id": .string($0.rawValue)] })
        _ = try await Self.doing("adding members") {
            try await rest.write(.post, "members", query: [("on_conflict", "conversation_id,user_id")], body: rows,
                                 prefer: "resolution=ignore-duplicates,return=minimal")
        }
    }

    /// Runs `body`, naming `what` failed in a refusal it throws (the code and the server's answer kept).
    private static func doing<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as SwitchboardError {
            throw SwitchboardError(error.code, "\(what) failed: \(error.message)", retryable: error.isRetryable,
                                   retryAfter: error.retryAfter)
        }
    }

    /// Creates the private storage bucket `name` unless it exists (the adapter uploads attachments to `attachments`).
    public func ensureBucket(_ name: String) async throws {
        var headers = rest.headers(json: true)
        headers.add("Authorization", "Bearer \(rest.apiKey)")
        let body: JSONValue = ["id": .string(name), "name": .string(name), "public": false]
        let response: HTTPResponse
        do {
            response = try await rest.http.send(HTTPRequest(method: .post, url: rest.url("/storage/v1/bucket"), headers: headers,
                                                            body: Data(body.serialized.utf8), timeout: .seconds(30),
                                                            maximumResponseBytes: rest.maximumResponseBytes))
        } catch {
            throw SupabaseREST.failure("request to the Supabase server failed", error)
        }
        if response.isSuccess { return }
        // Storage answers in its own shape, mostly HTTP 400 with the real status in the body:
        // `{"statusCode":"409","error":"Duplicate",..}` for an existing bucket, "403" for a token it refuses.
        let json = JSONValue.parseOrNil(response.body)
        let status = json?["statusCode"]?.stringValue.flatMap { Int($0) } ?? response.status
        let message = json?["message"]?.stringValue.map { ServerErrorText.oneLine($0) } ?? ServerErrorText.oneLine(response.body)
        let text = "storage HTTP \(status): \(message)"
        switch status {
        case 409: return
        case 401, 403: throw SwitchboardError(.unauthorized, text)
        case 408, 429: throw SwitchboardError(.transport, text, retryable: true, retryAfter: response.retryAfter())
        case 500...: throw SwitchboardError(.transport, text, retryable: true, retryAfter: response.retryAfter())
        default: throw SwitchboardError(.refused, text)
        }
    }
}
