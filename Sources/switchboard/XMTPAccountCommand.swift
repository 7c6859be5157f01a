import Foundation
import SwitchboardCore
import XMTPAdapter
import XMTPCrypto

/// `switchboard xmtp register` and `xmtp group create|add-member`: an inbox's token and a group with its secret
/// on the XMTP-like node, ready for an endpoint of `bridge` or `migrate`, or for `xmtp send`.
enum XMTPAccountCommand {
    /// `xmtp register`: registers an inbox and prints its bearer token.
    static func register(_ raw: [String]) async throws -> Int32 {
        try await runRegister(raw, by: "xmtp register", account: "inbox") { url, inbox in
            try await XMTPNodeAccounts(baseURL: url).register(inbox)
        }
    }

    /// Dispatches `group create` and `group add-member`.
    static func group(_ arguments: [String]) async throws -> Int32 {
        try await runSubcommand(of: "xmtp group", arguments, [("create", createGroup), ("add-member", addMember)])
    }

    /// `xmtp group create`: creates a group with a random ID as the token's inbox and prints the ID and a fresh
    /// random secret (which the node never sees).
    static func createGroup(_ raw: [String]) async throws -> Int32 {
        let command = "xmtp group create"
        let (options, url) = try Arguments.forServer(raw, allowed: ["url", "token", "member"], by: command)
        let token = try options.required("token", by: command, "T")
        let members = try options.members(by: command, required: false)
        let groupID = try SecureRandom.bytes(16)
        let secret = try SecureRandom.bytes(32)
        try await setupRequest("creating the group", at: url, hints: hints) {
            try await XMTPNodeAccounts(baseURL: url).createGroup(groupID, members: members, token: token)
        }
        writeLine("\(Digest.hex(groupID)) \(Digest.hex(secret))")
        return 0
    }

    /// `xmtp group add-member`: adds inboxes to a group as the token's inbox (a member).
    static func addMember(_ raw: [String]) async throws -> Int32 {
        let command = "xmtp group add-member"
        let (options, url) = try Arguments.forServer(raw, allowed: ["url", "token", "group", "member"], by: command)
        let token = try options.required("token", by: command, "T")
        let groupHex = try options.required("group", by: command, "HEX").lowercased()
        guard let groupID = Hex.decode(groupHex), groupID.count == 16 else {
            throw UsageError("--group must be a group ID of 32 hex digits, as `xmtp group create` prints it (got '\(groupHex)')")
        }
        let members = try options.members(by: command, required: true)
        try await setupRequest("adding members", at: url, hints: hints) {
            try await XMTPNodeAccounts(baseURL: url).addMembers(members, to: groupID, token: token)
        }
        writeAdded(members, to: groupHex)
        return 0
    }

    /// Likely causes of a refusal, by error code.
    private static let hints: [SwitchboardError.Code: String] = [
        .unauthorized: "--token must be a token `xmtp register` printed for this node",
        .refused: "the token's inbox must be a member of the group",
    ]
}
