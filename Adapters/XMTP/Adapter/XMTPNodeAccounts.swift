import Foundation
import SwitchboardCore
import SwitchboardNet

/// Registers inboxes and creates groups on an XMTP-like node: what a client does before it can send. The group's
/// secret never goes to the node; its creator hands it to the members out of band.
public struct XMTPNodeAccounts: Sendable {
    /// The node's base URL.
    public let baseURL: URL
    private let http: HTTPClient

    /// Accounts on the node at `baseURL`.
    public init(baseURL: URL, http: HTTPClient = HTTPClient()) {
        self.baseURL = baseURL
        self.http = http
    }

    /// Registers `inbox` and returns its bearer token; an inbox that exists is a `conflict`.
    public func register(_ inbox: UserID) async throws -> String {
        let json = try await client(token: "").post("/identity/v1/register", ["inbox_id": .string(inbox.rawValue)])
        guard let token = json["token"]?.stringValue else {
            throw SwitchboardError(.transport, "the XMTP node answered register without a token")
        }
        return token
    }

    /// Creates group `groupID` (16 bytes) whose creator is the inbox of `token`, with `members` added.
    public func createGroup(_ groupID: [UInt8], members: [UserID], token: String) async throws {
        _ = try await client(token: token).post("/mls/v1/create-group", [
            "group_id": .string(Data(groupID).base64EncodedString()),
            "members": .array(members.map { .string($0.rawValue) }),
        ])
    }

    /// Adds `members` to group `groupID` as the inbox of `token`, which must be a member.
    public func addMembers(_ members: [UserID], to groupID: [UInt8], token: String) async throws {
        _ = try await client(token: token).post("/mls/v1/add-members", [
            "group_id": .string(Data(groupID).base64EncodedString()),
            "inbox_ids": .array(members.map { .string($0.rawValue) }),
        ])
    }

    private func client(token: String) -> XMTPNodeClient {
        XMTPNodeClient(baseURL: baseURL, token: token, http: http)
    }
}
