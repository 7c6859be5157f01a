import Foundation
import SwitchboardBridge
import SwitchboardCore
import SwitchboardNet
import SwitchboardPostgresStore
import SwitchboardStore

#if canImport(Glibc)
import Glibc
#endif

/// `switchboard bridge --config FILE [--catch-up-only] [--verbose]`: bridges the configured conversation pairs.
///
/// The config file is JSON:
/// ```json
/// {
///   "store": {"sqlite": "bridge.sqlite"},
///   "worker": "bridge-1",
///   "leaseSeconds": 15,
///   "statusEverySeconds": 5,
///   "pairs": [
///     {"name": "general",
///      "a": {"adapter": "supabase", "url": "http://127.0.0.1:54321", "conversation": "<uuid>",
///            "apiKey": "env:SB_ANON_KEY", "accessToken": "env:SB_BRIDGE_TOKEN", "user": "bridge"},
///      "b": {"adapter": "xmtp", "url": "http://127.0.0.1:5556", "conversation": "<group id: 32 hex>",
///            "inbox": "bridge", "token": "env:XMTP_TOKEN", "groupSecret": "env:XMTP_GROUP_SECRET",
///            "database": "bridge-xmtp.sqlite"}}
///   ]
/// }
/// ```
/// - `store`: exactly one of `{"sqlite": "PATH"}` (relative to the config file's folder) or
///   `{"postgres": "URL"}` (optionally with `"schema"`, default `switchboard`); several workers share one
///   PostgreSQL store (or one SQLite file on one host).
/// - `worker`: this process's name in the leases (default `host-pid`); unique among live workers. A fixed name
///   lets a restarted worker take its pairs back at once instead of after the lease expires.
/// - `leaseSeconds` (default 15): each pair's lease `bridge:pair:<name>` lasts this long unrenewed; it is renewed
///   every third of it, and a surviving worker takes a dead worker's pairs over once it expires.
/// - `statusEverySeconds` (default 5): how often a status line per pair is printed.
/// - `pairs`: at least one; unique `name`s; `a` and `b` are adapter endpoints (see `AdapterEndpoint`), whose
///   string values may be `env:NAME`. Both sides need distinct backend IDs (set `"backend"` on one side when
///   both use the same adapter).
///
/// Errors name the field (`pairs[0].b.url: must be an http(s) URL`) and exit with status 2.
///
/// Every log line (standard error) and status line (standard output) starts with the time in RFC 3339 UTC with
/// milliseconds and its level, then names what it concerns: `2026-11-30T10:00:05.123Z info pair general: a→b 12, …`.
/// The sides are named as in the config (`side a`, `side b`). SIGHUP reads the config again and applies it to the
/// running worker (`reload`); SIGINT and SIGTERM finish the changes in flight, release the leases and exit 0.
enum BridgeCommand {
    /// Parses the options and config, then runs the worker (or one catch-up).
    static func run(_ arguments: [String]) async throws -> Int32 {
        if arguments.first == "quarantine" { return try await BridgeQuarantineCommand.run(Array(arguments.dropFirst())) }
        let options = try Arguments(arguments, booleanFlags: ["catch-up-only", "verbose"])
        try options.check(allowed: ["config", "catch-up-only", "verbose"])
        guard let path = options.value("config"), !path.isEmpty else { throw UsageError("bridge needs --config FILE") }
        // Caught from here on, so that no signal ends the process without the leases being released.
        let signals = SignalWaiter(signals: [SIGINT, SIGTERM, SIGHUP])
        guard let config = try loadConfig(path) else { return 2 }
        let logger = CommandLog.logger("worker \(config.worker)", level: options.has("verbose") ? .debug : .info)
        let store: any LeaseStore
        do {
            store = try config.openStore(logger: logger.labeled("postgres"))
        } catch {
            FileHandle.standardError.write(Data("switchboard: \(config.storeField): cannot open the store: \(error)\n".utf8))
            return 1
        }

        let http = HTTPClient()
        var workerConfiguration = BridgeWorkerConfiguration(worker: config.worker)
        workerConfiguration.leaseSeconds = config.leaseSeconds
        workerConfiguration.leaseRetry = .seconds(min(2, max(0.2, config.leaseSeconds / 3)))
        workerConfiguration.logger = logger
        let worker = BridgeWorker(store: store, pairs: config.pairs.map { $0.workerPair(http: http) },
                                  configuration: workerConfiguration)
        let running = RunningConfig(config)
        let catchUpOnly = options.has("catch-up-only")

        let signalTask = Task {
            for await signal in signals.received {
                if signal == SIGHUP {
                    if catchUpOnly {
                        logger.info("SIGHUP: a catch-up reads the config once; not reloading")
                    } else {
                        await reload(path: path, running: running, worker: worker, http: http, logger: logger)
                    }
                    continue
                }
                logger.info("\(signalName(signal)): finishing the changes in flight, then releasing the leases")
                await worker.stop()
                return
            }
        }
        defer { signalTask.cancel() }

        CommandLog.status("bridge worker \(config.worker): \(config.pairs.count) pair\(config.pairs.count == 1 ? "" : "s"), "
                      + "lease \(Self.seconds(config.leaseSeconds)), store \(config.storeDescription)"
                      + (catchUpOnly ? ", catch-up only" : ""))
        for pair in config.pairs { logger.labeled("pair \(pair.name)").info(pair.sidesDescription) }
        if catchUpOnly {
            let failures = await worker.catchUpOnce(leaseWait: .seconds(2 * config.leaseSeconds + 2))
            for status in await worker.status() { CommandLog.status(status.line) }
            for (name, failure) in failures.sorted(by: { $0.key < $1.key }) {
                logger.labeled("pair \(name)").error("failed: \(failure)")
            }
            closeStore(store)
            return failures.isEmpty ? 0 : 1
        }

        let reporter = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int64(running.config.statusEverySeconds * 1000)))
                if Task.isCancelled { return }
                for status in await worker.status() { CommandLog.status(status.line) }
            }
        }
        await worker.run()
        reporter.cancel()
        for status in await worker.status() { CommandLog.status(status.line) }
        closeStore(store)
        return 0
    }

    /// SIGHUP: reads the config at `path` again (off the cooperative pool) and applies it to the running worker —
    /// pairs added are started, pairs removed stopped, pairs whose definition changed restarted, the rest left
    /// running. A config that cannot be used (a mistake in it, or a change of the store, the worker's name or the
    /// lease length, which need a restart) is refused with its path and field, and the running config stays.
    static func reload(path: String, running: RunningConfig, worker: BridgeWorker, http: HTTPClient,
                       logger: Logger) async {
        let log = logger.labeled("config")
        log.info("SIGHUP: reloading \(path)")
        let new: BridgeConfigFile
        do {
            new = try await BlockingRunner(label: "switchboard.bridge.config").run { try BridgeConfigFile.load(path: path) }
            try running.config.checkReload(to: new)
        } catch {
            log.error("reload refused: \(path): \(error); the running config stays")
            return
        }
        do {
            let plan = try await worker.reconfigure(pairs: new.pairs.map { $0.workerPair(http: http) })
            running.config = new
            log.info("reloaded \(path): \(plan.summary)")
            for pair in new.pairs where plan.added.contains(pair.name) || plan.changed.contains(pair.name) {
                logger.labeled("pair \(pair.name)").info(pair.sidesDescription)
            }
        } catch {
            log.error("reload refused: \(path): \(error); the running config stays")
        }
    }

    /// `SIGTERM`, `SIGINT`, `SIGHUP`, else `signal N`.
    static func signalName(_ signal: Int32) -> String {
        switch signal {
        case SIGTERM: "SIGTERM"
        case SIGINT: "SIGINT"
        case SIGHUP: "SIGHUP"
        default: "signal \(signal)"
        }
    }

    /// The config at `path`, or nil after printing what is wrong with it (the caller exits 2).
    static func loadConfig(_ path: String, needsSecrets: Bool = true) throws -> BridgeConfigFile? {
        do {
            return try BridgeConfigFile.load(path: path, needsSecrets: needsSecrets)
        } catch let error as ConfigError {
            FileHandle.standardError.write(Data("switchboard: \(path): \(error)\n".utf8))
            return nil
        }
    }

    /// Closes a store that can be closed.
    static func closeStore(_ store: any LeaseStore) {
        if let sqlite = store as? SQLiteStore { sqlite.close() }
        if let postgres = store as? PostgresStore { postgres.close() }
    }

    /// `15s`, `2.5s`.
    static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() ? "\(Int(value))s" : String(format: "%.1fs", value)
    }
}

/// A parsed and checked `switchboard bridge` config file.
struct BridgeConfigFile: Sendable {
    /// Where the store lives.
    enum StoreLocation: Sendable, Equatable {
        /// A SQLite file (absolute path).
        case sqlite(String)
        /// A PostgreSQL URL and schema.
        case postgres(url: String, schema: String)
    }

    /// One configured pair.
    struct Pair: Sendable {
        /// Its name (lease `bridge:pair:<name>`).
        var name: String
        /// Side a.
        var a: AdapterEndpoint
        /// Side b.
        var b: AdapterEndpoint
    }

    /// The store.
    var store: StoreLocation
    /// The worker's name.
    var worker: String
    /// Lease TTL in seconds.
    var leaseSeconds: TimeInterval
    /// Seconds between status lines.
    var statusEverySeconds: TimeInterval
    /// The pairs.
    var pairs: [Pair]

    /// The config field naming the store (for errors).
    var storeField: String {
        switch store {
        case .sqlite: "store.sqlite"
        case .postgres: "store.postgres"
        }
    }

    /// The store for status lines, without credentials.
    var storeDescription: String {
        switch store {
        case .sqlite(let path): "sqlite \(path)"
        case .postgres(_, let schema): "postgres (schema \(schema))"
        }
    }

    /// Opens the store; a PostgreSQL store's notices go to `logger` (at debug level).
    func openStore(logger: Logger = Logger(label: "postgres")) throws -> any LeaseStore {
        switch store {
        case .sqlite(let path): return try SQLiteStore(path: path)
        case .postgres(let url, let schema): return try PostgresStore(url: url, schema: schema, logger: logger)
        }
    }

    /// Refuses (with a `ConfigError` naming the field) a reloaded config `new` that changes what a running worker
    /// keeps until it restarts: its store, its name and its lease length.
    func checkReload(to new: BridgeConfigFile) throws {
        let restart = "cannot change while the bridge runs; restart it for that"
        if new.store != store { throw ConfigError(new.storeField, "\(restart) (the running store is \(storeDescription))") }
        if new.worker != worker { throw ConfigError("worker", "\(restart) (running as \(worker))") }
        if new.leaseSeconds != leaseSeconds {
            throw ConfigError("leaseSeconds", "\(restart) (running with \(BridgeCommand.seconds(leaseSeconds)))")
        }
    }

    /// Reads and checks the file at `path`; every mistake is a `ConfigError` naming the field.
    /// With `needsSecrets` false (a command that never signs in) secrets in unset environment variables are not
    /// required.
    static func load(path: String, needsSecrets: Bool = true) throws -> BridgeConfigFile {
        guard let data = FileManager.default.contents(atPath: path) else { throw ConfigError("config", "cannot read \(path)") }
        let json = try AdapterEndpoint.parseJSON(String(decoding: data, as: UTF8.self), path: "config")
        let base = URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent()
        return try parse(json, baseDirectory: base, needsSecrets: needsSecrets)
    }

    /// Checks a parsed config; relative paths are taken from `baseDirectory`.
    static func parse(_ json: JSONValue, baseDirectory: URL, needsSecrets: Bool = true) throws -> BridgeConfigFile {
        guard let object = json.objectValue else { throw ConfigError("config", "must be a JSON object") }
        let known: Set<String> = ["store", "worker", "leaseSeconds", "statusEverySeconds", "pairs"]
        for key in object.keys.sorted() where !known.contains(key) {
            throw ConfigError(key, "unknown field (expected \(known.sorted().joined(separator: ", ")))")
        }
        let store = try parseStore(object["store"], baseDirectory: baseDirectory)
        var worker = BridgeWorkerConfiguration.defaultWorkerName
        if let value = object["worker"] {
            guard let text = value.stringValue, !text.isEmpty else { throw ConfigError("worker", "must be a non-empty string") }
            worker = try AdapterEndpoint.resolve(text, path: "worker")
        }
        let leaseSeconds = try seconds(object["leaseSeconds"], field: "leaseSeconds", default: 15, minimum: 1)
        let statusEvery = try seconds(object["statusEverySeconds"], field: "statusEverySeconds", default: 5, minimum: 0.1)
        guard let pairsValue = object["pairs"] else { throw ConfigError("pairs", "is required") }
        guard let pairsArray = pairsValue.arrayValue, !pairsArray.isEmpty else {
            throw ConfigError("pairs", "must be a non-empty array")
        }
        var pairs: [Pair] = []
        var names = Set<String>()
        for (index, element) in pairsArray.enumerated() {
            let path = "pairs[\(index)]"
            guard let pair = element.objectValue else { throw ConfigError(path, "must be an object") }
            for key in pair.keys.sorted() where !["name", "a", "b"].contains(key) {
                throw ConfigError("\(path).\(key)", "unknown field (expected name, a, b)")
            }
            guard let name = pair["name"]?.stringValue, !name.isEmpty else {
                throw ConfigError("\(path).name", "is required (a non-empty string)")
            }
            guard names.insert(name).inserted else { throw ConfigError("\(path).name", "'\(name)' names another pair too") }
            guard let aValue = pair["a"] else { throw ConfigError("\(path).a", "is required") }
            guard let bValue = pair["b"] else { throw ConfigError("\(path).b", "is required") }
            let a = try AdapterEndpoint.parse(aValue, path: "\(path).a", baseDirectory: baseDirectory, needsSecrets: needsSecrets)
            let b = try AdapterEndpoint.parse(bValue, path: "\(path).b", baseDirectory: baseDirectory, needsSecrets: needsSecrets)
            let backendA = a.fields["backend"] ?? a.adapter, backendB = b.fields["backend"] ?? b.adapter
            guard backendA != backendB else {
                throw ConfigError("\(path).b.backend", "both sides use backend ID \(backendA); set \"backend\" on one side")
            }
            if a.adapter == "xmtp", b.adapter == "xmtp", a.fields["database"] == b.fields["database"] {
                throw ConfigError("\(path).b.database", "both sides use the same local database")
            }
            pairs.append(Pair(name: name, a: a, b: b))
        }
        return BridgeConfigFile(store: store, worker: worker, leaseSeconds: leaseSeconds, statusEverySeconds: statusEvery,
                                pairs: pairs)
    }

    /// Parses `store`.
    private static func parseStore(_ value: JSONValue?, baseDirectory: URL) throws -> StoreLocation {
        guard let value else { throw ConfigError("store", "is required ({\"sqlite\": PATH} or {\"postgres\": URL})") }
        guard let object = value.objectValue else { throw ConfigError("store", "must be an object: {\"sqlite\": PATH} or {\"postgres\": URL}") }
        for key in object.keys.sorted() where !["sqlite", "postgres", "schema"].contains(key) {
            throw ConfigError("store.\(key)", "unknown field (expected sqlite, or postgres with an optional schema)")
        }
        switch (object["sqlite"], object["postgres"]) {
        case (.some(let sqlite), nil):
            guard object["schema"] == nil else { throw ConfigError("store.schema", "only applies to a postgres store") }
            guard let text = sqlite.stringValue, !text.isEmpty else { throw ConfigError("store.sqlite", "must be a file path") }
            let path = try AdapterEndpoint.resolve(text, path: "store.sqlite")
            return .sqlite(path.hasPrefix("/") ? path : baseDirectory.appendingPathComponent(path).path)
        case (nil, .some(let postgres)):
            guard let text = postgres.stringValue, !text.isEmpty else {
                throw ConfigError("store.postgres", "must be a connection URL (or env:NAME)")
            }
            let url = try AdapterEndpoint.resolve(text, path: "store.postgres")
            guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") || url.contains("=") else {
                throw ConfigError("store.postgres", "must be a postgres:// URL or a libpq connection string")
            }
            var schema = "switchboard"
            if let value = object["schema"] {
                guard let text = value.stringValue,
                      text.range(of: "^[A-Za-z_][A-Za-z0-9_]{0,62}$", options: .regularExpression) != nil else {
                    throw ConfigError("store.schema", "must be a plain identifier (letters, digits, _)")
                }
                schema = text
            }
            return .postgres(url: url, schema: schema)
        case (.some, .some):
            throw ConfigError("store", "give either sqlite or postgres, not both")
        case (nil, nil):
            throw ConfigError("store", "needs sqlite (a file path) or postgres (a URL)")
        }
    }

    /// A positive number of seconds (`default` when absent).
    private static func seconds(_ value: JSONValue?, field: String, default fallback: TimeInterval,
                                minimum: TimeInterval) throws -> TimeInterval {
        guard let value else { return fallback }
        guard let number = value.doubleValue, number.isFinite else { throw ConfigError(field, "must be a number of seconds") }
        guard number >= minimum else { throw ConfigError(field, "must be at least \(minimum) (got \(number))") }
        return number
    }
}

extension BridgeConfigFile.Pair {
    /// A digest of everything that defines the pair (both endpoints, secrets included), so that a reload restarts
    /// the pair when any of it changes; never shown.
    var definition: String {
        var text = ""
        for (side, endpoint) in [("a", a), ("b", b)] {
            text += "\(side)\u{0}\(endpoint.adapter)\u{0}\(endpoint.url.absoluteString)\u{0}\(endpoint.conversation.rawValue)\u{0}"
                + "\(endpoint.user.rawValue)\u{0}"
            for key in endpoint.fields.keys.sorted() { text += "\(key)\u{0}\(endpoint.fields[key] ?? "")\u{0}" }
        }
        return Digest.sha256Hex(Array(text.utf8))
    }

    /// `side a: socketio at http://127.0.0.1:8080, conversation room.1; side b: …` (no secrets).
    var sidesDescription: String {
        "side a: \(a.publicDescription); side b: \(b.publicDescription)"
    }

    /// The pair as the worker runs it: sides named `side a` and `side b` as in the config, signed in each time the
    /// worker takes the lease.
    func workerPair(http: HTTPClient) -> BridgeWorkerPair {
        let a = self.a, b = self.b
        return BridgeWorkerPair(name: name, definition: definition) {
            (a: try await Self.open(a, side: "a", http: http), b: try await Self.open(b, side: "b", http: http))
        }
    }

    /// The side `side` of a pair, signed in; a failure keeps its code and names the side and its endpoint.
    private static func open(_ endpoint: AdapterEndpoint, side: String, http: HTTPClient) async throws -> BridgeSide {
        do {
            return BridgeSide(name: "side \(side)", adapter: try await endpoint.makeAdapter(http: http),
                              conversation: endpoint.conversation)
        } catch {
            let wrapped = SwitchboardError.wrapping(error)
            throw SwitchboardError(wrapped.code, "side \(side) (\(endpoint.adapter) at \(endpoint.publicURL)): \(wrapped.message)",
                                   retryable: wrapped.isRetryable)
        }
    }
}

extension AdapterEndpoint {
    /// The server's URL without user information, query or fragment.
    var publicURL: String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url.host ?? "?" }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? url.host ?? "?"
    }

    /// `socketio at http://127.0.0.1:8080, conversation room.1` (no secrets).
    var publicDescription: String {
        "\(adapter) at \(publicURL), conversation \(conversation.rawValue)"
    }
}

/// The config a running bridge works with, replaced by each accepted reload.
final class RunningConfig: Sendable {
    /// The config.
    private let current: Locked<BridgeConfigFile>

    /// Starts with `config`.
    init(_ config: BridgeConfigFile) {
        current = Locked(config)
    }

    /// The config now.
    var config: BridgeConfigFile {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
