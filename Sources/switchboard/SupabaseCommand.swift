import Foundation
import SupabaseAdapter
import SupabaseProtocol
import SwitchboardCore

/// `switchboard supabase …`: mints tokens with the Supabase-like server's JWT secret and sets up conversations
/// through its service role, so that trying the server, the bridge or the migrator needs no hand-written JWT.
enum SupabaseCommand {
    /// The longest lifetime `--expires` takes: ten years, the lifetime of a Supabase project's API keys.
    static let maxLifetime = 315_360_000

    /// Dispatches `token` and `conversation create|add-member`.
    static func run(_ arguments: [String]) async throws -> Int32 {
        try await runSubcommand(of: "supabase", arguments, [
            ("token", { try token($0) }),
            ("conversation", { try await runSubcommand(of: "supabase conversation", $0, [
                ("create", createConversation), ("add-member", addMember),
            ]) }),
        ])
    }

    /// `supabase token`: prints a signed HS256 JWT for the role (and user) asked for.
    static func token(_ raw: [String]) throws -> Int32 {
        let options = try Arguments(raw, booleanFlags: [])
        try options.check(allowed: ["jwt-secret", "role", "user", "expires"])
        let signer = JWTSigner(secret: try jwtSecret(options))
        let roleName = try options.required("role", by: "supabase token", "anon|service_role|authenticated")
        let role = JWTRole(roleName)
        guard [.anon, .serviceRole, .authenticated].contains(role) else {
            throw UsageError("--role must be anon, service_role or authenticated (got '\(roleName)')")
        }
        let user = options.value("user")
        if user?.isEmpty == true { throw UsageError("--user must not be empty") }
        if role == .authenticated, user == nil {
            throw UsageError("--role authenticated needs --user ID (the user's ID in members and messages: the token's sub)")
        }
        if role == .anon, user != nil { throw UsageError("--user goes with --role authenticated or service_role, not anon") }
        var lifetime = 86_400
        if let text = options.value("expires") {
            guard let seconds = Int(text), (1...maxLifetime).contains(seconds) else {
                throw UsageError("--expires must be a number of seconds from 1 to \(maxLifetime) (got '\(text)')")
            }
            lifetime = seconds
        }
        writeLine(signer.token(role: role, subject: user, lifetime: TimeInterval(lifetime)))
        return 0
    }

    /// `supabase conversation create`: creates a conversation with its members (and the attachments bucket the
    /// adapter uploads to, if missing) and prints its ID.
    static func createConversation(_ raw: [String]) async throws -> Int32 {
        let command = "supabase conversation create"
        let (options, url) = try Arguments.forServer(raw, allowed: ["url", "jwt-secret", "title", "member"], by: command)
        let secret = try jwtSecret(options)
        let members = try options.members(by: command, required: true)
        let client = SupabaseServiceClient(baseURL: url, jwtSecret: secret, lifetime: 300)
        try await setupRequest("creating the conversation", at: url, hints: hints) {
            try await client.ensureBucket("attachments")
            let conversation = try await client.createConversation(title: options.value("title"), members: members)
            writeLine(conversation.rawValue)
        }
        return 0
    }

    /// `supabase conversation add-member`: adds members to a conversation (those already in it stay as they are).
    static func addMember(_ raw: [String]) async throws -> Int32 {
        let command = "supabase conversation add-member"
        let (options, url) = try Arguments.forServer(raw, allowed: ["url", "jwt-secret", "conversation", "member"], by: command)
        let secret = try jwtSecret(options)
        let text = try options.required("conversation", by: command, "UUID")
        guard let uuid = UUID(uuidString: text) else {
            throw UsageError("--conversation must be a conversation's UUID, as `supabase conversation create` prints it (got '\(text)')")
        }
        let conversation = ConversationID(uuid.uuidString.lowercased())
        let members = try options.members(by: command, required: true)
        let client = SupabaseServiceClient(baseURL: url, jwtSecret: secret, lifetime: 300)
        do {
            try await client.addMembers(members, to: conversation)
        } catch let error as SwitchboardError where error.code == .unknownConversation {
            throw SetupFailure("adding members", at: url, SwitchboardError(.unknownConversation, "no conversation \(conversation)"))
        } catch {
            throw SetupFailure("adding members", at: url, error, hints: hints)
        }
        writeAdded(members, to: conversation.rawValue)
        return 0
    }

    /// Likely causes of a refusal, by error code.
    private static let hints: [SwitchboardError.Code: String] = [
        .unauthorized: "is --jwt-secret the secret the server was started with?",
    ]

    /// `--jwt-secret`, else `SWITCHBOARD_JWT_SECRET` (as `serve supabase` takes it): at least 32 characters.
    private static func jwtSecret(_ options: Arguments) throws -> String {
        let secret = options.value("jwt-secret") ?? ProcessInfo.processInfo.environment["SWITCHBOARD_JWT_SECRET"]
        guard let secret, !secret.isEmpty else {
            throw UsageError("--jwt-secret S (or SWITCHBOARD_JWT_SECRET) is required: the secret `serve supabase` runs with")
        }
        guard secret.utf8.count >= 32 else {
            throw UsageError("--jwt-secret must be at least 32 characters, as `serve supabase` requires")
        }
        return secret
    }
}
