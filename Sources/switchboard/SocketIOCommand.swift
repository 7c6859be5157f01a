import Foundation
import SocketIOAdapter
import SwitchboardCore

/// `switchboard socketio …`: registers users and sets up conversations on the Socket-style server, so a bridge or
/// migration endpoint (`user`, `token`, `conversation`) can be filled in without raw REST calls.
enum SocketIOCommand {
    /// Dispatches `register` and `conversation create|add-member`.
    static func run(_ arguments: [String]) async throws -> Int32 {
        try await runSubcommand(of: "socketio", arguments, [
            ("register", register),
            ("conversation", { try await runSubcommand(of: "socketio conversation", $0, [
                ("create", createConversation), ("add-member", addMember),
            ]) }),
        ])
    }

    /// `socketio register`: registers a user and prints its bearer token.
    static func register(_ raw: [String]) async throws -> Int32 {
        try await runRegister(raw, by: "socketio register", account: "user") { url, user in
            try await SocketIOAccounts(baseURL: url).register(user)
        }
    }

    /// `socketio conversation create`: creates a conversation as the token's user (always a member) with the other
    /// members and prints its ID (`--conversation`, else a fresh `room-…`).
    static func createConversation(_ raw: [String]) async throws -> Int32 {
        let command = "socketio conversation create"
        let (options, url) = try Arguments.forServer(raw, allowed: ["url", "token", "conversation", "member"], by: command)
        let token = try options.required("token", by: command, "T")
        let conversation = ConversationID(options.value("conversation") ?? "room-\(UUID().uuidString.prefix(8).lowercased())")
        guard !conversation.rawValue.isEmpty else { throw UsageError("--conversation must not be empty") }
        let members = try options.members(by: command, required: false)
        try await setupRequest("creating conversation \(conversation)", at: url, hints: hints) {
            try await SocketIOAccounts(baseURL: url).createConversation(conversation, members: members, token: token)
        }
        writeLine(conversation.rawValue)
        return 0
    }

    /// `socketio conversation add-member`: adds users to a conversation as the token's user (a member).
    static func addMember(_ raw: [String]) async throws -> Int32 {
        let command = "socketio conversation add-member"
        let (options, url) = try Arguments.forServer(raw, allowed: ["url", "token", "conversation", "member"], by: command)
        let token = try options.required("token", by: command, "T")
        let conversation = ConversationID(try options.required("conversation", by: command, "ID"))
        let members = try options.members(by: command, required: true)
        do {
            try await SocketIOAccounts(baseURL: url).addMembers(members, to: conversation, token: token)
        } catch {
            throw SetupFailure("adding members to \(conversation)", at: url, error, hints: hints.merging(
                [.notFound: "the conversation must exist and the token's user be one of its members"]) { $1 })
        }
        writeAdded(members, to: conversation.rawValue)
        return 0
    }

    /// Likely causes of a refusal, by error code.
    private static let hints: [SwitchboardError.Code: String] = [
        .unauthorized: "--token must be a token `socketio register` printed for this server",
    ]
}
