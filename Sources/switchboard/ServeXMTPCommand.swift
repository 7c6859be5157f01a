/// PLACEHOLDER: `serve xmtp`.
enum ServeXMTPCommand {
    static func run(_ options: Arguments) async throws -> Int32 { throw UsageError("serve xmtp: not built yet") }
}
