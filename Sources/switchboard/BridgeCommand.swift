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
enum BridgeCommand {
    /// Parses the options and config, then runs the worker (or one catch-up).
    static func run(_ arguments: [String]) async throws -> Int32 {
        if arguments.first == "quarantine" { return try await BridgeQuarantineCommand.run(Array(arguments.dropFirst())) }
        let options = try Arguments(arguments, booleanFlags: ["catch-up-only", "verbose"])
        try options.check(allowed: ["config", "catch-up-only", "verbose"])
        guard let path = options.value("config"), !path.isEmpty else { throw UsageError("bridge needs --config FILE") }
        guard let config = try loadConfig(path) else { return 2 }
        let verbose = options.has("verbose")
        let log: @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data("bridge: \(line)\n".utf8))
        }
        let store: any LeaseStore
        do {
            store = try config.openStore()
        } catch {
            FileHandle.standardError.write(Data("switchboard: \(config.storeField): cannot open the store: \(error)\n".utf8))
            return 1
        }

        let http = HTTPClient()
        let pairs = config.pairs.map { pair in
            BridgeWorkerPair(name: pair.name) {
                (a: BridgeSide(name: pair.a.adapter, adapter: try await pair.a.makeAdapter(http: http), conversation: pair.a.conversation),
                 b: BridgeSide(name: pair.b.adapter, adapter: try await pair.b.makeAdapter(http: http), conversation: pair.b.conversation))
            }
        }
        var workerConfiguration = BridgeWorkerConfiguration(worker: config.worker)
        workerConfiguration.leaseSeconds = config.leaseSeconds
        workerConfiguration.leaseRetry = .seconds(min(2, max(0.2, config.leaseSeconds / 3)))
        // Pass failures and lease changes are always logged; skipped changes only with --verbose.
        let quiet: @Sendable (String) -> Void = { line in if !line.hasPrefix("skipping") { log(line) } }
        workerConfiguration.bridge.log = verbose ? log : quiet
        let worker = BridgeWorker(store: store, pairs: pairs, configuration: workerConfiguration)

        let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
        let signalTask = Task {
            let signal = await signals.wait()
            log("signal \(signal): finishing the changes in flight, then releasing the leases")
            await worker.stop()
        }
        defer { signalTask.cancel() }

        writeLine("bridge worker \(config.worker): \(config.pairs.count) pair\(config.pairs.count == 1 ? "" : "s"), "
                  + "lease \(Self.seconds(config.leaseSeconds)), store \(config.storeDescription)"
                  + (options.has("catch-up-only") ? ", catch-up only" : ""))
        if options.has("catch-up-only") {
            let failures = await worker.catchUpOnce(leaseWait: .seconds(2 * config.leaseSeconds + 2))
            for status in await worker.status() { writeLine(status.line) }
            for (name, failure) in failures.sorted(by: { $0.key < $1.key }) {
                FileHandle.standardError.write(Data("switchboard: pair \(name) failed: \(failure)\n".utf8))
            }
            closeStore(store)
            return failures.isEmpty ? 0 : 1
        }

        let every = config.statusEverySeconds
        let reporter = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int64(every * 1000)))
                if Task.isCancelled { return }
                for status in await worker.status() { writeLine(status.line) }
            }
        }
        await worker.run()
        reporter.cancel()
        for status in await worker.status() { writeLine(status.line) }
        closeStore(store)
        return 0
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
    enum StoreLocation: Sendable {
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

    /// Opens the store.
    func openStore() throws -> any LeaseStore {
        switch store {
        case .sqlite(let path): return try SQLiteStore(path: path)
        case .postgres(let url, let schema): return try PostgresStore(url: url, schema: schema)
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
