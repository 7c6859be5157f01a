import Foundation
import SwitchboardCore
import SwitchboardStore

/// One conversation pair a worker bridges while it holds the pair's lease.
public struct BridgeWorkerPair: Sendable {
    /// The pair's name; its lease is `bridge:pair:<name>`.
    public var name: String
    /// Makes the two sides (adapters signed in as the bridge's accounts); called each time the worker takes the
    /// lease, so a worker that only stands by opens nothing.
    public var makeSides: @Sendable () async throws -> (a: BridgeSide, b: BridgeSide)

    /// A pair from its name and side factory.
    public init(name: String, makeSides: @escaping @Sendable () async throws -> (a: BridgeSide, b: BridgeSide)) {
        self.name = name
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
    /// The bridges' tunables (its `log` is used for the worker's lines too).
    public var bridge = BridgeConfiguration()

    /// A configuration for the worker named `worker`.
    public init(worker: String) {
        self.worker = worker
    }

    /// `host-pid`, the default worker name.
    public static var defaultWorkerName: String {
        "\(ProcessInfo.processInfo.hostName)-\(ProcessInfo.processInfo.processIdentifier)"
    }
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
/// stops taking work, lets each bridge finish its current change, and releases the leases.
public actor BridgeWorker {
    /// The shared store (map, cursors, queue and leases).
    private let store: any LeaseStore
    /// The pairs this worker may bridge.
    private let pairs: [BridgeWorkerPair]
    /// The tunables.
    private let configuration: BridgeWorkerConfiguration
    /// Set by `stop()`.
    private var stopping = false
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
        for bridge in bridges.values {
            Task { await bridge.stop() }
        }
    }

    /// Bridges every pair whose lease this worker can hold until `stop()`; returns once the bridges have stopped
    /// and the leases are released.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            for pair in pairs {
                group.addTask { await self.runPair(pair) }
            }
        }
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

    /// The lease loop of one pair: take it when possible, bridge while holding it.
    private func runPair(_ pair: BridgeWorkerPair) async {
        let lease = Self.leaseName(pair.name)
        while !stopping {
            do {
                if try store.acquireLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date()) {
                    log("pair \(pair.name): took the lease as \(configuration.worker)")
                    await bridgeWhileHolding(pair)
                    continue
                }
                let holder = try? store.leaseOwner(lease, now: Date())
                if statuses[pair.name]?.state != .standby(holder: holder) {
                    log("pair \(pair.name): lease held by \(holder ?? "another worker"); standing by")
                }
                statuses[pair.name]?.state = .standby(holder: holder)
            } catch {
                note(error, pair: pair.name, doing: "taking the lease")
            }
            await pause(configuration.leaseRetry)
        }
        try? store.releaseLease(lease, owner: configuration.worker)
        statuses[pair.name]?.state = .stopped
    }

    /// Runs the pair's bridge while renewing its lease; returns when the lease is lost or the worker stops.
    private func bridgeWhileHolding(_ pair: BridgeWorkerPair) async {
        let lease = Self.leaseName(pair.name)
        let bridge: Bridge
        do {
            let sides = try await pair.makeSides()
            bridge = try Bridge(a: sides.a, b: sides.b, store: store, configuration: configuration.bridge)
        } catch {
            // Let another worker try: this one cannot open the pair.
            note(error, pair: pair.name, doing: "opening the sides")
            try? store.releaseLease(lease, owner: configuration.worker)
            await pause(configuration.leaseRetry)
            return
        }
        statuses[pair.name]?.state = .bridging
        bridges[pair.name] = bridge
        if stopping { await bridge.stop() }
        let task = Task { await bridge.run() }
        var lastRenewal = Date()
        while !stopping {
            await pause(.milliseconds(Int64(configuration.leaseSeconds * 1000 / 3)))
            if stopping { break }
            do {
                if try store.renewLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date()) {
                    lastRenewal = Date()
                } else {
                    log("pair \(pair.name): lost the lease; stopping its bridge")
                    break
                }
            } catch {
                note(error, pair: pair.name, doing: "renewing the lease")
                if Date().timeIntervalSince(lastRenewal) >= configuration.leaseSeconds * 0.9 {
                    log("pair \(pair.name): could not renew the lease in time; stopping its bridge")
                    break
                }
            }
        }
        await finish(bridge, task)
        bridges[pair.name] = nil
        if let stats = statuses[pair.name]?.stats {
            statuses[pair.name]?.stats = Self.combine(stats, await bridge.currentStats)
        }
        if stopping {
            try? store.releaseLease(lease, owner: configuration.worker)
            log("pair \(pair.name): stopped; lease released")
        }
    }

    /// One catch-up of a pair under its lease; nil on success, else why it failed.
    private func catchUpPair(_ pair: BridgeWorkerPair, leaseWait: Duration) async -> String? {
        let lease = Self.leaseName(pair.name)
        let deadline = ContinuousClock.now + leaseWait
        while true {
            if stopping { return "interrupted before the lease was taken" }
            do {
                if try store.acquireLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date()) { break }
                let holder = try? store.leaseOwner(lease, now: Date())
                statuses[pair.name]?.state = .standby(holder: holder)
                if ContinuousClock.now >= deadline {
                    return "lease held by \(holder ?? "another worker") for longer than \(leaseWait)"
                }
            } catch {
                note(error, pair: pair.name, doing: "taking the lease")
                if ContinuousClock.now >= deadline { return "cannot take the lease: \(error)" }
            }
            await pause(configuration.leaseRetry)
        }
        defer {
            try? store.releaseLease(lease, owner: configuration.worker)
            statuses[pair.name]?.state = .stopped
        }
        let bridge: Bridge
        do {
            let sides = try await pair.makeSides()
            bridge = try Bridge(a: sides.a, b: sides.b, store: store, configuration: configuration.bridge)
        } catch {
            note(error, pair: pair.name, doing: "opening the sides")
            return "cannot open the sides: \(error)"
        }
        statuses[pair.name]?.state = .bridging
        bridges[pair.name] = bridge
        let renewer = Task { [store, configuration] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int64(configuration.leaseSeconds * 1000 / 3)))
                if Task.isCancelled { return }
                _ = try? store.renewLease(lease, owner: configuration.worker, ttl: configuration.leaseSeconds, now: Date())
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
                failure = String(describing: error)
                log("pair \(pair.name): catch-up attempt \(attempt) failed: \(error)")
                if stopping { break }
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

    /// Sleeps for `delay`, waking early when the worker stops.
    private func pause(_ delay: Duration) async {
        let deadline = ContinuousClock.now + delay
        while !stopping, ContinuousClock.now < deadline {
            try? await Task.sleep(for: min(.milliseconds(100), deadline - ContinuousClock.now))
        }
    }

    /// Records and logs an error of the worker itself (not of a bridge pass).
    private func note(_ error: any Error, pair: String, doing: String) {
        statuses[pair]?.stats.lastError = "\(doing): \(error)"
        log("pair \(pair): \(doing) failed: \(error)")
    }

    /// Writes a log line.
    private func log(_ line: String) { configuration.bridge.log(line) }

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
