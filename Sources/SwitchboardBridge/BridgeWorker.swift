import Foundation
import SwitchboardCore
import SwitchboardStore

/// One conversation pair a worker bridges while it holds the pair's lease.
public struct BridgeWorkerPair: Sendable {
    /// The pair's name; its lease is `bridge:pair:<name>`.
    public var name: String
    /// What the pair is configured as (for example a digest of its sides' settings): `reconfigure(pairs:)` restarts
    /// a pair whose definition changed. Never logged.
    public var definition: String
    /// Makes the two sides (adapters signed in as the bridge's accounts); called each time the worker takes the
    /// lease, so a worker that only stands by opens nothing.
    public var makeSides: @Sendable () async throws -> (a: BridgeSide, b: BridgeSide)

    /// A pair from its name, definition and side factory.
    public init(name: String, definition: String = "",
                makeSides: @escaping @Sendable () async throws -> (a: BridgeSide, b: BridgeSide)) {
        self.name = name
        self.definition = definition
        self.makeSides = makeSides
    }
}

/// Tunables of a bridge worker.
public struct BridgeWorkerConfiguration: Sendable {
    /// This worker's name in the leases; unique among the live workers sharing a store.
    public var worker: String
    /// How long a lease lasts without renewal; renewed every third of it.
    public var leaseSeconds: TimeInterval = 15
    /// How often a pair whose lease another worker holds is tried again.
    public var leaseRetry: Duration = .seconds(2)
    /// How long `stop()` waits for a bridge to finish its current change before cancelling it.
    public var stopGrace: Duration = .seconds(30)
    /// How many times `catchUpOnce` tries a failing pair.
    public var catchUpAttempts = 3
    /// The bridges' tunables; the worker gives each pair's bridge its `logger`, labelled `pair <name>`.
    public var bridge = BridgeConfiguration()
    /// Where the worker's records and its bridges' go, each under the label `pair <name>` (the pair it concerns).
    public var logger = Logger(label: "bridge")

    /// A configuration for the worker named `worker`.
    public init(worker: String) {
        self.worker = worker
    }

    /// `host-pid`, the default worker name; the host name is looked up once per process, not at every config parse.
    public static let defaultWorkerName = "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
}

/// What a worker knows about one of its pairs.
public struct BridgePairStatus: Sendable, Hashable {
    /// Where the pair stands in this worker.
    public enum State: Sendable, Hashable {
        /// Not tried yet.
        case starting
        /// Another worker holds the lease (named when known); retried every few seconds.
        case standby(holder: String?)
        /// This worker holds the lease and runs the pair's bridge.
        case bridging
        /// The worker stopped (lease released).
        case stopped
    }

    /// The pair's name.
    public var name: String
    /// Where it stands.
    public var state: State
    /// Totals over every bridge this worker ran for the pair (`waiting` and `lag` from the latest).
    public var stats: BridgeStats

    /// `pair general: a→b 12, b→a 7, updates 3, waiting 0, quarantined 0, collisions 0, lag 0.4s, last error -`
    /// (`lag`: the age of the oldest change read and not yet bridged; 0 when caught up).
    public var line: String {
        let error = stats.lastError.map { Self.oneLine($0) } ?? "-"
        let lag = stats.lag.map { String(format: "%.1fs", $0) } ?? "-"
        let counts = "a→b \(stats.messagesAToB), b→a \(stats.messagesBToA), updates \(stats.updates), "
            + "waiting \(stats.waiting), quarantined \(stats.quarantined), collisions \(stats.keyCollisions), lag \(lag), "
            + "last error \(error)"
        if case .standby(let holder) = state {
            return "pair \(name): standby (lease held by \(holder ?? "another worker")), \(counts)"
        }
        return "pair \(name): \(counts)"
    }

    /// The first line of `text`, at most 200 characters.
    private static func oneLine(_ text: String) -> String {
        let first = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? text
        return first.count > 200 ? String(first.prefix(199)) + "…" : first
    }
}

/// Runs the bridges of several conversation pairs over one shared `LeaseStore`, each pair only while this
/// worker holds its lease `bridge:pair:<name>`.
///
/// `run()` tries every pair's lease; a pair another worker holds is tried again every `leaseRetry`, so a surviving
/// worker takes over a dead one's pairs once their leases expire. A held lease is renewed every third of its TTL;
/// losing it (another worker took it over) stops that pair's bridge after the change it is bridging. `stop()`
/// stops taking work, lets each bridge finish its current change, and releases the leases. `reconfigure(pairs:)`
/// replaces the pairs while `run()` goes on: added pairs start, removed ones stop the same way as under `stop()`,
/// changed ones are stopped and started again, the others are left alone.
public actor BridgeWorker {
    /// One lease loop of a pair (`runPair`); a pair whose definition changes gets a new loop with a new generation.
    private struct PairLoop: Sendable {
        /// The pair as the loop runs it.
        var pair: BridgeWorkerPair
        /// Tells this loop apart from earlier and later loops of the same pair name.
        var generation: Int
    }

    /// The shared store (map, cursors, queue and leases).
    private let store: any LeaseStore
    /// The pairs this worker may bridge, as configured now (`reconfigure(pairs:)` replaces them).
    private var pairs: [BridgeWorkerPair]
    /// The tunables.
    private let configuration: BridgeWorkerConfiguration
    /// Set by `stop()`.
    private var stopping = false
    /// Under `run()`: hands each loop to start to `run()`'s task group.
    private var launcher: AsyncStream<PairLoop>.Continuation?
    /// The generation of each pair's loop that has not ended yet, by pair name.
    private var loops: [String: Int] = [:]
    /// Loops told to end because their pair was removed or changed: each finishes its change in flight and releases
    /// its lease.
    private var retired: Set<Int> = []
    /// Pairs to start as soon as the loop of the same name has ended (a changed pair, or one removed and added back).
    private var replacements: [String: BridgeWorkerPair] = [:]
    /// The last generation handed out.
    private var generations = 0
    /// The running bridge of each pair this worker holds.
    private var bridges: [String: Bridge] = [:]
    /// Each pair's state and totals of bridges that already ended.
    private var statuses: [String: BridgePairStatus]

    /// A worker for `pairs` over `store`.
    public init(store: any LeaseStore, pairs: [BridgeWorkerPair], configuration: BridgeWorkerConfiguration) {
        self.store = store
        self.pairs = pairs
        self.configuration = configuration
        statuses = Dictionary(uniqueKeysWithValues: pairs.map {
            ($0.name, BridgePairStatus(name: $0.name, state: .starting, stats: BridgeStats()))
        })
    }

    /// The lease name of a pair.
    public static func leaseName(_ pair: String) -> String { "bridge:pair:\(pair)" }

    /// This worker's name.
    public nonisolated var workerName: String { configuration.worker }

    /// Every pair's status, in configuration order, with the running bridges' live counts.
    public func status() async -> [BridgePairStatus] {
        var result: [BridgePairStatus] = []
        for pair in pairs {
            guard var status = statuses[pair.name] else { continue }
            if let bridge = bridges[pair.name] {
                status.stats = Self.combine(status.stats, await bridge.currentStats)
            }
            result.append(status)
        }
        return result
    }

    /// Stops taking work and asks every running bridge to stop after its current change; `run()` and
    /// `catchUpOnce()` then release their leases and return.
    public func stop() {
        stopping = true
        launcher?.finish()
        for bridge in bridges.values {
            Task { await bridge.stop() }
        }
    }

    /// Bridges every pair whose lease this worker can hold until `stop()` (including pairs `reconfigure(pairs:)`
    /// adds meanwhile); returns once the bridges have stopped and the leases are released.
    public func run() async {
        let (stream, continuation) = AsyncStream<PairLoop>.makeStream()
        launcher = continuation
        for pair in pairs { start(pair) }
        if stopping { continuation.finish() }
        await withDiscardingTaskGroup { group in
            for await loop in stream {
                group.addTask { await self.runPair(loop.pair, generation: loop.generation) }
            }
        }
        launcher = nil
    }

    /// Replaces the pairs with `newPairs` and returns what that changes (see `BridgeReconfiguration`).
    ///
    /// Under `run()`: added pairs start; removed pairs finish the change in flight, release their leases and leave
    /// the status; changed pairs are stopped that way and then started with their new definition; unchanged pairs
    /// are not touched, so their work in flight goes on. Before `run()` it only replaces the pairs `run()` starts;
    /// once the worker stops it changes nothing. Throws `invalidArgument` when two pairs share a name (nothing
    /// changes then).
    @discardableResult
    public func reconfigure(pairs newPairs: [BridgeWorkerPair]) throws -> BridgeReconfiguration {
        var names = Set<String>()
        for pair in newPairs where !names.insert(pair.name).inserted {
            throw SwitchboardError(.invalidArgument, "two pairs are named \(pair.name)")
        }
        let plan = BridgeReconfiguration(from: pairs, to: newPairs)
        guard !stopping else { return plan }
        pairs = newPairs
        guard launcher != nil else {
            statuses = Dictionary(uniqueKeysWithValues: newPairs.map {
                ($0.name, statuses[$0.name] ?? BridgePairStatus(name: $0.name, state: .starting, stats: BridgeStats()))
            })
            return plan
        }
        let byName = Dictionary(uniqueKeysWithValues: newPairs.map { ($0.name, $0) })
        for name in plan.removed + plan.changed {
            replacements[name] = nil
            guard let generation = loops[name] else { continue }
            retired.insert(generation)
            let why = plan.removed.contains(name) ? "removed from the config" : "its definition changed"
            log(.info, pair: name, "\(why): finishing the change in flight, then releasing the lease")
        }
        for name in plan.added + plan.changed {
            guard let pair = byName[name] else { continue }
            if loops[name] != nil {
                replacements[name] = pair
            } else {
                start(pair)
            }
        }
        for name in plan.removed where loops[name] == nil { statuses[name] = nil }
        return plan
    }

    /// Takes each pair's lease (waiting up to `leaseWait` for one another worker holds), catches the pair up once,
    /// releases the lease. Returns the pairs that failed, with why (empty: all synced).
    public func catchUpOnce(leaseWait: Duration) async -> [String: String] {
        await withTaskGroup(of: (String, String?).self) { group in
            for pair in pairs {
                group.addTask { (pair.name, await self.catchUpPair(pair, leaseWait: leaseWait)) }
            }
            var failures: [String: String] = [:]
            for await (name, failure) in group {
                if let failure { failures[name] = failure }
            }
            return failures
        }
    }

    // MARK: - One pair

    /// Hands a new loop of `pair` to `run()` with a fresh status.
    private func start(_ pair: BridgeWorkerPair) {
        generations += 1
        loops[pair.name] = generations
        statuses[pair.name] = BridgePairStatus(name: pair.name, state: .starting, stats: BridgeStats())
        launcher?.yield(PairLoop(pair: pair, generation: generations))
    }

    /// Whether the loop `generation` is to end: the worker stops, or its pair was removed or changed.
    private func isEnding(_ generation: Int?) -> Bool {
        stopping || generation.map(retired.contains) == true
    }

    /// The lease loop of one pair: take it when possible, bridge while holding it; ends when the worker stops or
    /// the loop is retired, releasing the lease.
    private func runPair(_ pair: BridgeWorkerPair, generation: Int) async {
        let lease = Self.leaseName(pair.name)
        while !isEnding(generation) {
            do {
                if try await store.acquireLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date()) {
                    log(.info, pair: pair.name, "took the lease as \(configuration.worker)")
                    await bridgeWhileHolding(pair, generation: generation)
                    continue
                }
                let holder = try? await store.leaseOwner(lease, now: Date())
                if statuses[pair.name]?.state != .standby(holder: holder) {
                    log(.info, pair: pair.name, "lease held by \(holder ?? "another worker"); standing by")
                }
                statuses[pair.name]?.state = .standby(holder: holder)
            } catch {
                note(error, pair: pair.name, doing: "taking the lease")
            }
            await pause(configuration.leaseRetry, generation: generation)
        }
        try? await store.releaseLease(lease, owner: configuration.worker)
        loopEnded(pair.name, generation: generation)
    }

    /// Bookkeeping after a pair's loop ended: starts its replacement, or drops the status of a removed pair.
    private func loopEnded(_ name: String, generation: Int) {
        let wasRetired = retired.remove(generation) != nil
        if loops[name] == generation { loops[name] = nil }
        if let next = replacements.removeValue(forKey: name), !stopping {
            start(next)
        } else if wasRetired, !pairs.contains(where: { $0.name == name }) {
            statuses[name] = nil
        } else {
            statuses[name]?.state = .stopped
        }
    }

    /// Opens the pair's two sides and its bridge; a failure is noted, then rethrown.
    private func openBridge(_ pair: BridgeWorkerPair) async throws -> Bridge {
        do {
            let sides = try await pair.makeSides()
            return try await Bridge(a: sides.a, b: sides.b, store: store, configuration: bridgeConfiguration(pair.name))
        } catch {
            note(error, pair: pair.name, doing: "opening the sides")
            throw error
        }
    }

    /// Runs the pair's bridge while renewing its lease; returns when the lease is lost or the loop ends.
    private func bridgeWhileHolding(_ pair: BridgeWorkerPair, generation: Int) async {
        let lease = Self.leaseName(pair.name)
        let bridge: Bridge
        do {
            bridge = try await openBridge(pair)
        } catch {
            // Let another worker try: this one cannot open the pair.
            try? await store.releaseLease(lease, owner: configuration.worker)
            await pause(configuration.leaseRetry, generation: generation)
            return
        }
        statuses[pair.name]?.state = .bridging
        bridges[pair.name] = bridge
        if isEnding(generation) { await bridge.stop() }
        let task = Task { await bridge.run() }
        var lastRenewal = Date()
        while !isEnding(generation) {
            await pause(.milliseconds(Int64(configuration.leaseSeconds * 1000 / 3)), generation: generation)
            if isEnding(generation) { break }
            do {
                if try await store.renewLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date()) {
                    lastRenewal = Date()
                } else {
                    log(.warning, pair: pair.name, "lost the lease; stopping its bridge")
                    break
                }
            } catch {
                note(error, pair: pair.name, doing: "renewing the lease")
                if Date().timeIntervalSince(lastRenewal) >= configuration.leaseSeconds * 0.9 {
                    log(.warning, pair: pair.name, "could not renew the lease in time; stopping its bridge")
                    break
                }
            }
        }
        await finish(bridge, task)
        bridges[pair.name] = nil
        if let stats = statuses[pair.name]?.stats {
            statuses[pair.name]?.stats = Self.combine(stats, await bridge.currentStats)
        }
        if isEnding(generation) {
            try? await store.releaseLease(lease, owner: configuration.worker)
            log(.info, pair: pair.name, "stopped; lease released")
        }
    }

    /// One catch-up of a pair under its lease; nil on success, else why it failed.
    private func catchUpPair(_ pair: BridgeWorkerPair, leaseWait: Duration) async -> String? {
        let lease = Self.leaseName(pair.name)
        let deadline = ContinuousClock.now + leaseWait
        while true {
            if stopping { return "interrupted before the lease was taken" }
            do {
                if try await store.acquireLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date()) { break }
                let holder = try? await store.leaseOwner(lease, now: Date())
                statuses[pair.name]?.state = .standby(holder: holder)
                if ContinuousClock.now >= deadline {
                    return "lease held by \(holder ?? "another worker") for longer than \(leaseWait)"
                }
            } catch {
                note(error, pair: pair.name, doing: "taking the lease")
                // A store that is full, read-only or damaged stays so while we wait: only a retryable error waits.
                if ContinuousClock.now >= deadline || !SwitchboardError.wrapping(error).isRetryable {
                    return "cannot take the lease: \(error)"
                }
            }
            await pause(configuration.leaseRetry)
        }
        let failure = await catchUpHolding(pair, lease: lease)
        try? await store.releaseLease(lease, owner: configuration.worker)
        statuses[pair.name]?.state = .stopped
        return failure
    }

    /// The catch-up of a pair whose lease this worker holds, renewing it meanwhile; nil on success.
    private func catchUpHolding(_ pair: BridgeWorkerPair, lease: String) async -> String? {
        let bridge: Bridge
        do {
            bridge = try await openBridge(pair)
        } catch {
            return "cannot open the sides: \(error)"
        }
        statuses[pair.name]?.state = .bridging
        bridges[pair.name] = bridge
        let renewer = Task { [store, configuration] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int64(configuration.leaseSeconds * 1000 / 3)))
                if Task.isCancelled { return }
                _ = try? await store.renewLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date())
            }
        }
        var failure: String?
        var delay = configuration.bridge.retryBase
        for attempt in 1...max(1, configuration.catchUpAttempts) {
            do {
                try await bridge.catchUp()
                failure = stopping ? "interrupted" : nil
                break
            } catch {
                failure = await bridge.currentStats.lastError ?? String(describing: error)
                log(.warning, pair: pair.name, "catch-up attempt \(attempt) failed: \(error)")
                // Credentials, access or a missing conversation: another attempt cannot succeed.
                if stopping || Bridge.stopsTheDirection(error) { break }
                await pause(delay)
                delay = min(delay * 2, configuration.bridge.retryCap)
            }
        }
        renewer.cancel()
        bridges[pair.name] = nil
        if var stats = statuses[pair.name]?.stats {
            stats = Self.combine(stats, await bridge.currentStats)
            if let failure { stats.lastError = failure }
            statuses[pair.name]?.stats = stats
        }
        return failure
    }

    // MARK: - Helpers

    /// Stops `bridge`, waiting up to `stopGrace` for its current change before cancelling it.
    private func finish(_ bridge: Bridge, _ task: Task<Void, Never>) async {
        await bridge.stop()
        let grace = configuration.stopGrace
        let watchdog = Task {
            try? await Task.sleep(for: grace)
            if !Task.isCancelled { task.cancel() }
        }
        await task.value
        watchdog.cancel()
    }

    /// Sleeps for `delay`, waking early when the worker stops (or the loop `generation` is retired).
    private func pause(_ delay: Duration, generation: Int? = nil) async {
        let deadline = ContinuousClock.now + delay
        while !isEnding(generation), ContinuousClock.now < deadline {
            try? await Task.sleep(for: min(.milliseconds(100), deadline - ContinuousClock.now))
        }
    }

    /// Records and logs an error of the worker itself (not of a bridge pass).
    private func note(_ error: any Error, pair: String, doing: String) {
        statuses[pair]?.stats.lastError = "\(doing): \(error)"
        // The pair's loop tries again whatever the error (it is what keeps the pair running), but one no retry can
        // fix is an error, not a warning: it needs someone to fix it.
        log(SwitchboardError.wrapping(error).isRetryable ? .warning : .error, pair: pair, "\(doing) failed: \(error)")
    }

    /// Writes a line about `pair` to the logger, labelled `pair <name>`.
    private func log(_ level: LogLevel, pair: String, _ line: @autoclosure () -> String) {
        configuration.logger.labeled("pair \(pair)").log(level: level, line())
    }

    /// The bridge tunables for `pair`: the worker's, with the worker's logger labelled `pair <name>`.
    private func bridgeConfiguration(_ pair: String) -> BridgeConfiguration {
        var bridge = configuration.bridge
        bridge.logger = configuration.logger.labeled("pair \(pair)")
        return bridge
    }

    /// Earlier totals plus a bridge's counts (its queue size, lag and error are the current ones).
    private static func combine(_ earlier: BridgeStats, _ current: BridgeStats) -> BridgeStats {
        var total = current
        total.messagesAToB += earlier.messagesAToB
        total.messagesBToA += earlier.messagesBToA
        total.updates += earlier.updates
        total.keyCollisions += earlier.keyCollisions
        total.lag = current.lag ?? earlier.lag
        total.lastError = current.lastError ?? (current.lastSuccess == nil ? earlier.lastError : nil)
        total.lastSuccess = current.lastSuccess ?? earlier.lastSuccess
        return total
    }
}
