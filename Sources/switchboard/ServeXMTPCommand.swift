import Foundation
import SwitchboardCore
import XMTPNode

/// `switchboard serve xmtp`: runs the XMTP-like node on loopback until SIGINT or SIGTERM.
enum ServeXMTPCommand {
    /// Parses the options, starts the node, prints the one `listening on` line and waits for a signal.
    static func run(_ options: Arguments) async throws -> Int32 {
        try options.check(allowed: ["port", "host", "data-dir", "database-url", "verbose"])
        let directory = try ServeCommand.dataDirectory(options, holding: "the SQLite database and uploads")
        var configuration = XMTPNodeConfiguration(dataDirectory: directory)
        configuration.port = try ServeCommand.port(options.value("port"))
        if let host = options.value("host") { configuration.host = host }
        if let url = options.value("database-url") {
            guard !url.isEmpty else { throw UsageError("--database-url needs a PostgreSQL URL") }
            configuration.databaseURL = url
        }
        configuration.logger = ServeCommand.logger("xmtp", options)

        let server = XMTPNodeServer(configuration: configuration)
        return try await ServeCommand.serveUntilSignal(host: configuration.host, start: { try await server.start() },
                                                       stop: { await server.stop() })
    }
}
