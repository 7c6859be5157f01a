import Dispatch
import Foundation
import SwitchboardCore
import SupabaseServer

#if canImport(Glibc)
import Glibc
#endif

/// `switchboard serve <backend>`: runs a reference server on loopback until SIGINT or SIGTERM.
enum ServeCommand {
    /// Parses the options, starts the server, prints the one `listening on` line and waits for a signal.
    static func run(_ arguments: [String]) async throws -> Int32 {
        guard let backend = arguments.first, !backend.hasPrefix("--") else {
            throw UsageError("serve needs a backend: supabase, xmtp or socketio")
        }
        let flags: Set<String> = backend == "supabase" ? ["verbose", "durable"] : ["verbose"]
        let options = try Arguments(Array(arguments.dropFirst()), booleanFlags: flags)
        switch backend {
        case "supabase":
            return try await serveSupabase(options)
        case "xmtp":
            return try await ServeXMTPCommand.run(options)
        case "socketio":
            return try await ServeSocketIOCommand.run(options)
        default:
            throw UsageError("unknown backend '\(backend)' for serve (supabase, xmtp, socketio)")
        }
    }

    private static func serveSupabase(_ options: Arguments) async throws -> Int32 {
        try options.check(allowed: ["port", "host", "data-dir", "jwt-secret", "database-url", "sql", "verbose",
                                    "max-object-size", "jwt-expiry", "auth-rate-limit", "durable"], positionals: true)
        // `--sql FILE ...`: further .sql files may follow the first one without repeating the flag.
        let extraSQL = options.all("sql").isEmpty ? [] : options.positional.filter { $0.hasSuffix(".sql") }
        if let stray = options.positional.first(where: { !extraSQL.contains($0) }) {
            throw UsageError("unexpected argument '\(stray)'")
        }
        let directory = try dataDirectory(options, holding: "the private PostgreSQL cluster and storage")
        let secret = options.value("jwt-secret") ?? ProcessInfo.processInfo.environment["SWITCHBOARD_JWT_SECRET"]
        guard let secret, !secret.isEmpty else {
            throw UsageError("--jwt-secret SECRET (or SWITCHBOARD_JWT_SECRET) is required")
        }
        guard secret.utf8.count >= 32 else {
            throw UsageError("--jwt-secret must be at least 32 characters (HS256 keys shorter than that are guessable)")
        }
        var configuration = SupabaseServerConfiguration(dataDirectory: directory, jwtSecret: secret)
        configuration.port = try port(options.value("port"))
        if let host = options.value("host") { configuration.host = host }
        configuration.databaseURL = options.value("database-url")
        if options.has("durable") {
            guard configuration.databaseURL == nil else {
                throw UsageError("--durable applies to the private PostgreSQL cluster, not to --database-url")
            }
            configuration.durablePostgres = true
        }
        configuration.extraSQLFiles = try (options.all("sql") + extraSQL).map { path in
            let url = URL(fileURLWithPath: path)
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw UsageError("--sql \(path): no such readable file")
            }
            return url
        }
        if let size = options.value("max-object-size") {
            guard let bytes = Int(size), bytes > 0 else { throw UsageError("--max-object-size must be a positive byte count") }
            configuration.maxObjectSize = bytes
        }
        if let expiry = options.value("jwt-expiry") {
            guard let seconds = Int(expiry), (30...604_800).contains(seconds) else {
                throw UsageError("--jwt-expiry must be 30…604800 seconds (got '\(expiry)')")
            }
            configuration.authTokenLifetime = .seconds(seconds)
        }
        if let limit = options.value("auth-rate-limit") {
            guard let count = Int(limit), count >= 0 else {
                throw UsageError("--auth-rate-limit must be a count of requests, 0 for none (got '\(limit)')")
            }
            configuration.authRateLimit = count
        }
        configuration.logger = ServeCommand.logger("supabase", options)

        let server = SupabaseServer(configuration: configuration)
        return try await serveUntilSignal(host: configuration.host, start: { try await server.start() },
                                          stop: { await server.stop() })
    }

    /// Starts a server, prints the single `listening on` line, waits for SIGINT/SIGTERM and stops it;
    /// a failed start stops what was started and rethrows.
    static func serveUntilSignal(host: String, start: () async throws -> Int, stop: () async -> Void) async throws -> Int32 {
        let stopSignal = SignalWaiter(signals: [SIGINT, SIGTERM])
        let port: Int
        do {
            port = try await start()
        } catch {
            await stop()
            throw error
        }
        writeLine("listening on http://\(host):\(port)")
        if let signal = await stopSignal.wait() {
            FileHandle.standardError.write(Data("switchboard: signal \(signal), stopping\n".utf8))
        }
        await stop()
        return 0
    }

    /// The server's logger labelled `label`: errors only, or everything from debug up with `--verbose`.
    static func logger(_ label: String, _ options: Arguments) -> Logger {
        CommandLog.logger(label, level: options.has("verbose") ? .debug : .error)
    }

    /// The required `--data-dir` as a standardized folder URL; a usage error saying it holds `contents` otherwise.
    static func dataDirectory(_ options: Arguments, holding contents: String) throws -> URL {
        guard let path = options.value("data-dir"), !path.isEmpty else {
            throw UsageError("--data-dir DIR is required (\(contents) live there)")
        }
        return URL(fileURLWithPath: path, isDirectory: true).standardizedFileURL
    }

    /// A port number 0…65535 (0: pick a free one).
    static func port(_ text: String?) throws -> Int {
        guard let text else { return 0 }
        guard let port = Int(text), (0...65_535).contains(port) else {
            throw UsageError("--port must be 0…65535 (got '\(text)')")
        }
        return port
    }
}

/// Turns a set of signals into awaitable values; their default action (ending the process) is disabled from `init` on.
final class SignalWaiter {
    private let stream: AsyncStream<Int32>
    private let sources: [any DispatchSourceSignal]

    /// Every signal caught, in order (for one consumer; `wait()` is another).
    var received: AsyncStream<Int32> { stream }

    /// Starts catching `signals`.
    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        sources = signals.map { number in
            Glibc.signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { continuation.yield(number) }
            source.resume()
            return source
        }
    }

    /// The first signal received, or nil when the waiting task is cancelled first (no signal came).
    func wait() async -> Int32? {
        for await number in stream { return number }
        return nil
    }
}
