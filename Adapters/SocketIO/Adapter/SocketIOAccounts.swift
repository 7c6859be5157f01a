import Foundation
import SwitchboardCore
import SwitchboardNet

/// Registers users and sets up conversations on a Socket-style server (WIRE.md's `/auth/register` and
/// `/conversations`): what a client or an operator does before anyone can send.
public struct SocketIOAccounts: Sendable {
    /// The server's base URL.
    public let baseURL: URL
    private let http: HTTPClient

    /// Accounts on the server at `baseURL`.
    public init(baseURL: URL, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.http = http
    }

    /// Registers `user` and returns its bearer token; a user that exists is a `conflict`.
    public func register(_ user: UserID) async throws -> String {
        let answer = try await client(token: "").json(.post, "/auth/register", body: ["userId": .string(user.rawValue)])
        guard let token = answer.value["token"]?.stringValue else {
            throw SwitchboardError(.transport, "registering \(user): the answer has no token")
        }
        return token
    }

    /// Creates conversation `id` as the user of `token` with `members` (the creator is always one).
    public func createConversation(_ id: ConversationID, members: [UserID], token: String) async throws {
        let body: JSONValue = ["id": .string(id.rawValue), "members": .array(members.map { .string($0.rawValue) })]
        _ = try await client(token: token).json(.post, "/conversations", body: body)
    }

    /// Adds `members` to conversation `id` as the user of `token`, who must be a member (else `notFound`).
    public func addMembers(_ members: [UserID], to id: ConversationID, token: String) async throws {
        let path = "/conversations/\(SocketIOREST.encode(id.rawValue))/members"
        _ = try await client(token: token).json(.post, path, body: ["userIds": .array(members.map { .string($0.rawValue) })])
    }

    private func client(token: String) -> SocketIOREST {
        SocketIOREST(baseURL: baseURL, token: token, http: http)
    }
}
