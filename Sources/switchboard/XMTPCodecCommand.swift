/// PLACEHOLDER: `xmtp codec` and `xmtp message-id`.
enum XMTPCodecCommand {
    static func codec(_ arguments: [String]) throws -> Int32 { throw UsageError("xmtp codec: not built yet") }
    static func messageID(_ arguments: [String]) throws -> Int32 { throw UsageError("xmtp message-id: not built yet") }
}
