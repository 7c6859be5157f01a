import Foundation
import SwitchboardBridge
import SwitchboardConfig
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
                      + "lease \(BridgeConfigFile.secondsText(config.leaseSeconds)), store \(config.storeDescription)"
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
}

extension BridgeConfigFile {
    /// Opens the store; a PostgreSQL store's notices go to `logger` (at debug level).
    func openStore(logger: Logger = Logger(label: "postgres")) throws -> any LeaseStore {
        switch store {
        case .sqlite(let path): return try SQLiteStore(path: path)
        case .postgres(let url, let schema): return try PostgresStore(url: url, schema: schema, logger: logger)
        }
    }
}

extension BridgeConfigFile.Pair {
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
