/// PLACEHOLDER: `xmtp attachment encrypt|decrypt`.
enum XMTPAttachmentCommand {
    static func run(_ arguments: [String]) throws -> Int32 { throw UsageError("xmtp attachment: not built yet") }
}
