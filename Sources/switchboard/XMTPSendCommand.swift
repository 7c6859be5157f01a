import Foundation
import SwitchboardCore
import SwitchboardNet
import XMTPAdapter

/// `switchboard xmtp send`: prepares and publishes one text message with the XMTP adapter — the child process
/// of the crash test, and a quick way to post into a group while debugging.
///
/// `--hold` stops after prepare (row + intent in the local database), prints `prepared <base64 JSON>` and
/// waits to be killed; `--prepared B` publishes such a prepared message (libxmtp's `publishMessage(id)`) and
/// prints `published <id>`.
enum XMTPSendCommand {
    /// Runs the subcommand.
    static func run(_ raw: [String]) async throws -> Int32 {
        let options = try Arguments(raw, booleanFlags: ["hold"])
        try options.check(allowed: ["url", "inbox", "token", "group", "secret", "database", "text", "hold", "prepared"])
        func required(_ name: String) throws -> String {
            guard let value = options.value(name), !value.isEmpty else { throw UsageError("xmtp send needs --\(name)") }
            return value
        }
        guard let url = URL(string: try required("url")), url.host != nil else { throw UsageError("--url must be an http URL") }
        let groupHex = try required("group").lowercased()
        guard Hex.decode(groupHex)?.count == 16 else { throw UsageError("--group must be 32 hex digits") }
        guard let secret = Hex.decode(try required("secret")), secret.count == 32 else {
            throw UsageError("--secret must be 64 hex digits")
        }
        let conversation = ConversationID(groupHex)
        let adapter = try XMTPAdapter(configuration: XMTPAdapter.Configuration(
            baseURL: url, inboxID: UserID(try required("inbox")), token: try required("token"),
            databasePath: try required("database"), groupSecret: { _ in secret }), http: HTTPClient())
        if let encoded = options.value("prepared") {
            guard let data = Data(base64Encoded: encoded),
                  let prepared = try? JSONDecoder().decode(PreparedMessage.self, from: data) else {
                throw UsageError("--prepared must be what --hold printed")
            }
            let receipt = try await adapter.publish(prepared)
            writeLine("published \(receipt.remoteID?.rawValue ?? prepared.remoteID?.rawValue ?? "?")")
            return 0
        }
        let message = OutgoingMessage(id: .make(), conversation: conversation, sender: adapter.localUser,
                                      text: try required("text"), createdAt: Date())
        let prepared = try await adapter.prepare(message, noSend: false)
        if options.has("hold") {
            writeLine("prepared \(try JSONEncoder().encode(prepared).base64EncodedString())")
            while true { try await Task.sleep(for: .seconds(3600)) }
        }
        let receipt = try await adapter.publish(prepared)
        writeLine("published \(receipt.remoteID?.rawValue ?? "?")")
        return 0
    }
}
