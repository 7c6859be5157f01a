import Foundation
import SwitchboardCore
import SocketIOServer

/// `switchboard serve socketio`: runs the Socket-style reference server (REST + Socket.IO) on loopback until
/// SIGINT or SIGTERM.
enum ServeSocketIOCommand {
    /// Parses the options, starts the server, prints the one `listening on` line and waits for a signal.
    static func run(_ options: Arguments) async throws -> Int32 {
        try options.check(allowed: ["port", "host", "data-dir", "page-size", "edit-window", "delete-window", "verbose"])
        let directory = try ServeCommand.dataDirectory(options, holding: "the SQLite database and uploads")
        var configuration = SocketIOServerConfiguration(dataDirectory: directory)
        configuration.port = try ServeCommand.port(options.value("port"))
        if let host = options.value("host") { configuration.host = host }
        if let text = options.value("page-size") {
            guard let size = Int(text), (1...1000).contains(size) else {
                throw UsageError("--page-size must be 1…1000 (got '\(text)')")
            }
            configuration.pageSize = size
        }
        if let text = options.value("edit-window") { configuration.editWindow = try seconds(text, option: "edit-window") }
        if let text = options.value("delete-window") { configuration.deleteWindow = try seconds(text, option: "delete-window") }
        configuration.logger = ServeCommand.logger("socketio", options)

        let server = SocketIOServer(configuration: configuration)
        return try await ServeCommand.serveUntilSignal(host: configuration.host, start: { try await server.start() },
                                                       stop: { await server.stop() })
    }

    /// A window in seconds (fractions allowed, e.g. `0.5`), 0 … one year.
    static func seconds(_ text: String, option: String) throws -> Duration {
        guard let value = Double(text), value.isFinite, value >= 0, value <= 366 * 86_400 else {
            throw UsageError("--\(option) must be a number of seconds, 0 or more (got '\(text)')")
        }
        return .milliseconds(Int64((value * 1000).rounded()))
    }
}
