import Foundation

/// `switchboard xmtp …`: inboxes and groups on the XMTP-like node, and debugging helpers for adapter authors
/// (codec, message IDs, attachment crypto, one send).
enum XMTPCommand {
    /// Dispatches `register`, `group`, `codec`, `message-id`, `attachment` and `send`.
    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let sub = arguments.first else {
            throw UsageError("xmtp needs a subcommand: register, group, codec, message-id, attachment, send")
        }
        let rest = Array(arguments.dropFirst())
        switch sub {
        case "codec": return try XMTPCodecCommand.codec(rest)
        case "message-id": return try XMTPCodecCommand.messageID(rest)
        case "attachment": return try XMTPAttachmentCommand.run(rest)
        case "send": return try await XMTPSendCommand.run(rest)
        case "register": return try await XMTPAccountCommand.register(rest)
        case "group": return try await XMTPAccountCommand.group(rest)
        default: throw UsageError("unknown xmtp subcommand '\(sub)' (register, group, codec, message-id, attachment, send)")
        }
    }
}
