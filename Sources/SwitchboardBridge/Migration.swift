import Foundation
import SwitchboardCore
import SwitchboardStore

/// Tunables of a migration.
public struct MigrationConfiguration: Sendable {
    /// Source changes read (and checkpointed) per page: a resumed run redoes at most one page (idempotently).
    /// 500 rather than 100 cuts the per-page work (ledger transactions, REST statements, checkpoints): `bench
    /// migrate` used ~6 % less machine CPU per message (median of 5 interleaved runs, 182 → 170 µs).
    public var batchSize = 500
    /// Whether `run` also counts the source's messages (for the progress total and ETA): the adapter's own count
    /// where it has one (`MessageCountingAdapter`), else its history paged; the count runs alongside the copy, so
    /// the total appears in the progress once it is known.
    public var estimateTotal = true
    /// Attempts of the copy before a run gives up on an error (each retry resumes from the checkpoint).
    public var maxAttempts = 3
    /// Delay before the first retry; doubles for each further one.
    public var retryDelay: Duration = .milliseconds(500)
    /// How many examples of each difference a verification lists.
    public var sampleLimit = 10
    /// History page size when counting by paging, or verifying.
    public var historyPageSize = 100
    /// Where the migration's records, and those of the bridge doing its copy, go (never secrets; nowhere unless a
    /// handler is given).
    public var logger = Logger(label: "migration")

    /// Defaults.
    public init() {}
}

/// How far a migration has come; handed to the progress callback after every source message.
public struct MigrationProgress: Sendable, Hashable {
    /// Distinct source messages handled so far, counting those handled by earlier runs.
    public var processed: Int
    /// The source's message count when estimated (never below `processed`).
    public var total: Int?
    /// Copied by this run.
    public var copied: Int
    /// Found already copied (by an earlier run).
    public var alreadyPresent: Int
    /// Deleted on the source before they were copied.
    public var skippedDeleted: Int
    /// Not copied for another reason: refused by the target, or a copy made from the target (see
    /// `MigrationReport.notCarried`).
    public var notCopied: Int = 0
    /// Seconds since this run started copying.
    public var elapsed: TimeInterval
    /// Messages handled by this run.
    public var processedThisRun: Int

    /// Progress from its counts.
    public init(processed: Int, total: Int?, copied: Int, alreadyPresent: Int, skippedDeleted: Int, elapsed: TimeInterval,
                processedThisRun: Int) {
        self.processed = processed
        self.total = total
        self.copied = copied
        self.alreadyPresent = alreadyPresent
        self.skippedDeleted = skippedDeleted
        self.elapsed = elapsed
        self.processedThisRun = processedThisRun
    }

    /// Messages per second handled by this run.
    public var rate: Double { elapsed > 0 ? Double(processedThisRun) / elapsed : 0 }

    /// Seconds left at the current rate, when the total is known and the rate is positive.
    public var eta: TimeInterval? {
        guard let total, rate > 0 else { return nil }
        return Double(max(0, total - processed)) / rate
    }

    /// The fraction done (0...1), when the total is known.
    public var fraction: Double? {
        guard let total else { return nil }
        return total == 0 ? 1 : min(1, Double(processed) / Double(total))
    }
}

/// The result of one migration run.
public struct MigrationReport: Sendable, Hashable {
    /// How a run ended.
    public enum Status: String, Sendable, Hashable {
        /// Everything after the checkpoint was copied.
        case completed
        /// Stopped on request (signal or cancellation); re-running resumes from the last checkpoint.
        case interrupted
        /// Stopped by an error after the retries; re-running resumes from the last checkpoint.
        case failed
    }

    /// How the run ended.
    public var status: Status
    /// Copied by this run.
    public var copied: Int
    /// Already on the target before this run (copied by an earlier run, or re-read and recognised).
    public var alreadyPresent: Int
    /// Deleted on the source before they were copied (nothing to show on the target).
    public var skippedDeleted: Int
    /// Source messages not migrated because the run failed (the estimate minus those handled); 0 otherwise.
    public var failed: Int
    /// Every source message this run handled without copying it as it is, with the reason (deleted at the source,
    /// a copy made from the target, refused by the target, copied only as its fallback text); messages already
    /// present are counted in `alreadyPresent`, not listed.
    public var notCarried: [NotCarried] = []
    /// Whether the run failed on an error no re-run fixes as things are (credentials, access to a conversation, a
    /// full or damaged store: any error that is not retryable): fix that first, then re-run.
    public var errorIsPermanent = false
    /// The source's message count as estimated before copying, if it was.
    public var total: Int?
    /// Wall-clock seconds of the run (estimate included).
    public var duration: TimeInterval
    /// Seconds spent copying (after the estimate).
    public var copyDuration: TimeInterval
    /// The last error, when the run failed.
    public var error: String?

    /// A report from its parts.
    public init(status: Status, copied: Int, alreadyPresent: Int, skippedDeleted: Int, failed: Int, total: Int?,
                duration: TimeInterval, copyDuration: TimeInterval, error: String?) {
        self.status = status
        self.copied = copied
        self.alreadyPresent = alreadyPresent
        self.skippedDeleted = skippedDeleted
        self.failed = failed
        self.total = total
        self.duration = duration
        self.copyDuration = copyDuration
        self.error = error
    }

    /// Messages copied per second of copying.
    public var rate: Double { copyDuration > 0 ? Double(copied) / copyDuration : 0 }
}

/// A source message a migration did not carry as it is, and why.
public struct NotCarried: Sendable, Hashable {
    /// Why a message was not carried.
    public enum Reason: Sendable, Hashable {
        /// Deleted at the source before it was copied: nothing to show on the target.
        case deletedAtSource
        /// A copy made from the target (by a bridge, or a migration the other way): not copied back.
        case copyFromTarget
        /// Copied as its fallback text: the target has no equivalent of the source's content type.
        case unsupportedContent(contentType: String)
        /// Refused by the target for good, with the target's error; held in the pair's quarantine.
        case refused(String)

        /// The reason in a few words, for reports.
        public var text: String {
            switch self {
            case .deletedAtSource: "deleted at source"
            case .copyFromTarget: "a copy made from the target"
            case .unsupportedContent(let type): "unsupported content \(type), copied as its fallback text"
            case .refused(let error): "refused by the target: \(error)"
            }
        }

        /// Whether the message was not copied at all (refused, or a copy from the target), as opposed to deleted
        /// at the source or copied as its fallback text.
        public var isNotCopied: Bool {
            switch self {
            case .refused, .copyFromTarget: true
            case .deletedAtSource, .unsupportedContent: false
            }
        }

        /// A stable name, for JSON.
        public var name: String {
            switch self {
            case .deletedAtSource: "deletedAtSource"
            case .copyFromTarget: "copyFromTarget"
            case .unsupportedContent: "unsupportedContent"
            case .refused: "refused"
            }
        }
    }

    /// The message's internal identity.
    public var id: MessageID
    /// Its ID on the source.
    public var sourceRemoteID: RemoteID
    /// Why it was not carried.
    public var reason: Reason

    /// An entry from its parts.
    public init(id: MessageID, sourceRemoteID: RemoteID, reason: Reason) {
        self.id = id
        self.sourceRemoteID = sourceRemoteID
        self.reason = reason
    }
}

/// A migration setup or reachability problem found before anything was written.
public struct MigrationError: Error, Sendable, CustomStringConvertible {
    /// Which side (`source` or `target`).
    public var side: String
    /// What went wrong.
    public var message: String
    /// An error about `side`.
    public init(side: String, _ message: String) {
        self.side = side
        self.message = message
    }
    /// `side: message`.
    public var description: String { "\(side): \(message)" }
}

/// Copies one conversation's history from a source backend to a target, oldest to newest, page by page.
///
/// The copy is the bridge's one-way catch-up (`Bridge.catchUp(.aToB)`): each message goes through
/// `prepare(noSend)` → mapping recorded → `publish` on the target under the source's `MessageID` as the
/// idempotency key, with the original sender and time as metadata; the source cursor is checkpointed in the
/// store only after a page is fully copied. Towards a `BulkPublishingAdapter` (the Supabase-like one) the plain
/// messages of a page go in batches: prepared under their keys, their mappings recorded in one transaction, then
/// one `publishAll` (a bulk upsert). A run that is stopped, cancelled or killed at any point resumes
/// from the last checkpoint, and the re-copied part of a page is recognised (`alreadyPresent`) or, when the
/// kill fell between publish and bookkeeping, republished harmlessly under the same key.
public actor Migration {
    /// Where messages come from.
    public let source: BridgeSide
    /// Where they go.
    public let target: BridgeSide
    /// Where the checkpoint, the ID map and the pair's ledger live.
    let store: any Store
    /// The tunables.
    let configuration: MigrationConfiguration
    private var bridge: Bridge?
    private var stopRequested = false

    /// A migration from `source` to `target` keeping its checkpoint and ID map in `store`.
    public init(source: BridgeSide, target: BridgeSide, store: any Store,
                configuration: MigrationConfiguration = MigrationConfiguration()) throws {
        try BridgeSide.checkDistinct(source, target)
        self.source = source
        self.target = target
        self.store = store
        self.configuration = configuration
    }

    /// Asks a running copy to stop after the message in flight; the page's checkpoint stays where it was.
    public func stop() async {
        stopRequested = true
        await bridge?.stop()
    }

    /// Counts the source's messages (deleted ones included): by the adapter's own count where it has one
    /// (`MessageCountingAdapter`), else by paging its whole history, newest page first.
    public func estimateTotal() async throws -> Int {
        if let counting = source.adapter as? any MessageCountingAdapter {
            return try await counting.messageCount(in: source.conversation)
        }
        var count = 0
        var cursor: Cursor?
        repeat {
            try Task.checkCancellation()
            let page = try await source.adapter.history(in: source.conversation, before: cursor,
                                                        limit: configuration.historyPageSize)
            count += page.messages.count
            cursor = page.olderCursor
        } while cursor != nil
        return count
    }

    /// Copies everything after the checkpoint, calling `progress` after each source message; returns the
    /// report. Throws `MigrationError` (before writing anything) when a side cannot be reached; errors during
    /// the copy are retried and then reported in the result, never thrown.
    public func run(progress: (@Sendable (MigrationProgress) -> Void)? = nil) async throws -> MigrationReport {
        let started = ContinuousClock.now
        try await checkSides()
        // The bridge first: opening it adopts the records of a run by an older version, which `earlierOutcomes` reads.
        let bridge = try await Bridge(a: source, b: target, store: store, configuration: bridgeConfiguration())
        let tally = MigrationTally(total: nil, earlier: try await earlierOutcomes(of: bridge.pair))
        // The count pages the history newest first while the copy reads it oldest first; the total reaches the
        // progress once known (a failed count only leaves the total unknown).
        let counting: Task<Int?, Never>? = configuration.estimateTotal ? Task { [weak self] in
            guard let self, let count = try? await self.estimateTotal() else { return nil }
            tally.setTotal(count)
            return count
        } : nil
        defer { counting?.cancel() }
        self.bridge = bridge
        defer { self.bridge = nil }
        if stopRequested { await bridge.stop() }
        let copyStarted = ContinuousClock.now
        tally.start()
        var status = MigrationReport.Status.completed
        var lastError: String?
        var delay = configuration.retryDelay
        var attempt = 1
        var permanent = false
        while true {
            do {
                try await bridge.catchUp(.aToB) { outcome in
                    tally.record(outcome)
                    if let progress { progress(tally.snapshot()) }
                }
                if stopRequested || Task.isCancelled { status = .interrupted }
                break
            } catch {
                if stopRequested || Task.isCancelled || error is CancellationError {
                    status = .interrupted
                    break
                }
                lastError = String(describing: error)
                if Bridge.stopsTheDirection(error) {
                    // Credentials, access to a conversation, a conversation that is gone, a full or damaged store, any
                    // other error that is not retryable: no retry fixes it.
                    status = .failed
                    permanent = true
                    // The bridge's status names the side that failed and its conversation.
                    lastError = await bridge.currentStats.lastError ?? lastError
                    break
                }
                guard attempt < configuration.maxAttempts else {
                    status = .failed
                    break
                }
                let wait = max(delay, SwitchboardError.wrapping(error).retryAfter ?? .zero)
                log(.warning, "migration page failed (attempt \(attempt) of \(configuration.maxAttempts), "
                                  + "retrying in \(wait)): \(error)")
                try? await Task.sleep(for: wait)
                delay = delay * 2
                attempt += 1
            }
        }
        if status == .interrupted { counting?.cancel() }  // a stop does not wait for the count
        let total = await counting?.value
        let counts = tally.snapshot()
        let done = counts.processed
        let failed = status == .failed ? max(1, (counts.total ?? done) - done) : 0
        var report = MigrationReport(status: status, copied: counts.copied, alreadyPresent: counts.alreadyPresent,
                                     skippedDeleted: counts.skippedDeleted, failed: failed, total: total,
                                     duration: Self.seconds(ContinuousClock.now - started),
                                     copyDuration: Self.seconds(ContinuousClock.now - copyStarted),
                                     error: status == .failed ? lastError : nil)
        report.notCarried = tally.notCarried()
        report.errorIsPermanent = permanent
        return report
    }

    /// Checks, before anything is written, that the source's history can be read and the target reached, and
    /// (where a backend can make a conversation one may not read look empty) that both conversations exist and
    /// the accounts may read them; throws `MigrationError` naming the side otherwise.
    func checkSides() async throws {
        do {
            try await (source.adapter as? any ConversationCheckingAdapter)?.checkAccess(to: source.conversation)
            _ = try await source.adapter.history(in: source.conversation, before: nil, limit: 1)
        } catch {
            throw MigrationError(side: "source", "cannot read the history of \(source.name) conversation "
                                 + "\(source.conversation): \(error)")
        }
        do {
            try await (target.adapter as? any ConversationCheckingAdapter)?.checkAccess(to: target.conversation)
            _ = try await target.adapter.latestCursor(in: target.conversation)
        } catch {
            throw MigrationError(side: "target", "cannot reach \(target.name) conversation \(target.conversation): \(error)")
        }
    }

    /// Logs `line` at `level` to `MigrationConfiguration.logger` (the line is built only when the level is logged).
    func log(_ level: LogLevel, _ line: @autoclosure () -> String) {
        configuration.logger.log(level: level, line())
    }

    /// The bridge's tunables for a one-way copy.
    private func bridgeConfiguration() -> BridgeConfiguration {
        var bridge = BridgeConfiguration()
        bridge.batchSize = configuration.batchSize
        bridge.logger = configuration.logger
        // A migration carries the migrating account's own messages too; only copies made from the target are not.
        bridge.copiesOwnMessages = true
        return bridge
    }

    /// The source messages earlier runs handled (the pair's ledger), split into those on the target and those
    /// skipped as deleted.
    func earlierOutcomes(of pair: String) async throws -> (present: Set<MessageID>, skipped: Set<MessageID>) {
        let targetBackend = target.backend
        return try await store.read { tx in
            var present = Set<MessageID>(), skipped = Set<MessageID>()
            var after: MessageID?
            while true {
                let entries = try tx.bridgeCopies(pair: pair, after: after, limit: 1000)
                for entry in entries {
                    if try tx.remoteID(of: entry.messageID, backend: targetBackend, part: 0) != nil {
                        present.insert(entry.messageID)
                    } else {
                        skipped.insert(entry.messageID)
                    }
                }
                guard entries.count == 1000, let last = entries.last else { break }
                after = last.messageID
            }
            return (present, skipped)
        }
    }

    /// A duration in seconds.
    static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The distinct outcomes of a run so far, shared between the bridge's observer and the caller.
final class MigrationTally: Sendable {
    /// What became of one source message; a later, stronger outcome replaces a weaker one.
    private enum Kind: Int {
        case skipped = 1, fromTarget, refused, present, copied
    }

    /// The counting state (counts kept incrementally: the observer runs once per message).
    private struct State {
        var total: Int?
        var kinds: [MessageID: Kind] = [:]
        /// The count of each kind, by raw value.
        var counts = [0, 0, 0, 0, 0, 0]
        /// Why each message of this run that is not (yet) copied as it is was not carried.
        var notCarried: [MessageID: NotCarried] = [:]
        var seenThisRun = Set<MessageID>()
        var started = ContinuousClock.now

        /// Records `kind` for `id` unless a stronger outcome is known; true when recorded.
        @discardableResult
        mutating func set(_ id: MessageID, _ kind: Kind) -> Bool {
            let old = kinds.updateValue(kind, forKey: id)
            if let old, old.rawValue > kind.rawValue {
                kinds[id] = old
                return false
            }
            if let old { counts[old.rawValue] -= 1 }
            counts[kind.rawValue] += 1
            return true
        }

        /// Records an outcome of this run, with why the message was not carried as it is (nil: it was).
        mutating func record(_ id: MessageID, _ kind: Kind, _ detail: NotCarried?) {
            seenThisRun.insert(id)
            guard set(id, kind) else { return }
            notCarried[id] = detail
        }

        /// How many outcomes are of `kind`.
        func count(_ kind: Kind) -> Int { counts[kind.rawValue] }
    }

    private let state: Locked<State>

    /// A tally over an estimated `total`, knowing what earlier runs handled.
    init(total: Int?, earlier: (present: Set<MessageID>, skipped: Set<MessageID>)) {
        var initial = State(total: total)
        for id in earlier.skipped { initial.set(id, .skipped) }
        for id in earlier.present { initial.set(id, .present) }
        state = Locked(initial)
    }

    /// Restarts the clock for the rate.
    func start() { state.withLock { $0.started = ContinuousClock.now } }

    /// Sets the estimated total once it is known.
    func setTotal(_ total: Int) { state.withLock { $0.total = total } }

    /// Counts one outcome (an ID reported again, e.g. for a later edit, counts once).
    func record(_ outcome: Bridge.Outcome) {
        state.withLock { state in
            switch outcome {
            case .copied(let id):
                state.record(id, .copied, nil)
            case .copiedAsFallback(let id, let remote, let type):
                state.record(id, .copied, NotCarried(id: id, sourceRemoteID: remote, reason: .unsupportedContent(contentType: type)))
            case .alreadyPresent(let id):
                state.record(id, .present, nil)
            case .skippedDeleted(let id, let remote):
                state.record(id, .skipped, NotCarried(id: id, sourceRemoteID: remote, reason: .deletedAtSource))
            case .refused(let id, let remote, let reason):
                state.record(id, .refused, NotCarried(id: id, sourceRemoteID: remote, reason: .refused(reason)))
            case .copyFromOtherSide(let id, let remote):
                state.record(id, .fromTarget, NotCarried(id: id, sourceRemoteID: remote, reason: .copyFromTarget))
            }
        }
    }

    /// The messages of this run not carried as they are, in source ID order.
    func notCarried() -> [NotCarried] {
        state.withLock { $0.notCarried.values.sorted { $0.sourceRemoteID.rawValue < $1.sourceRemoteID.rawValue } }
    }

    /// The progress now.
    func snapshot() -> MigrationProgress { state.withLock { Self.progress($0) } }

    /// The progress of a state.
    private static func progress(_ state: State) -> MigrationProgress {
        let processed = state.kinds.count
        var progress = MigrationProgress(processed: processed, total: state.total.map { max($0, processed) },
                                         copied: state.count(.copied), alreadyPresent: state.count(.present),
                                         skippedDeleted: state.count(.skipped),
                                         elapsed: Migration.seconds(ContinuousClock.now - state.started),
                                         processedThisRun: state.seenThisRun.count)
        progress.notCopied = state.count(.refused) + state.count(.fromTarget)
        return progress
    }
}
