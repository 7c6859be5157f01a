import Foundation

/// `switchboard xmtp …`: debugging helpers for adapter authors (codec, message IDs, attachment crypto).
enum XMTPCommand {
    /// Dispatches `codec`, `message-id` and `attachment`.
    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let sub = arguments.first else { throw UsageError("xmtp needs a subcommand: codec, message-id, attachment") }
        let rest = Array(arguments.dropFirst())
        switch sub {
        case "codec": return try XMTPCodecCommand.codec(rest)
        case "message-id": return try XMTPCodecCommand.messageID(rest)
        case "attachment": return try XMTPAttachmentCommand.run(rest)
        case "send": return try await XMTPSendCommand.run(rest)
        default: throw UsageError("unknown xmtp subcommand '\(sub)' (codec, message-id, attachment, send)")
        }
    }
}
