import Foundation
import SwitchboardCore
import SwitchboardStore

/// Relays one conversation pair in both directions, exactly once in effect, through crashes and restarts.
///
/// For every change on one side the bridge did not itself cause: resolve it to a `MessageID` (the key it
/// carries, the ID map, or the deterministic derivation), then on the other side `prepare(noSend: true)` under
/// that key, record the mapping, `publish`. Because the key is the idempotency key everywhere, a re-run after a
/// kill republishes harmlessly. A change whose message is already mapped on the other side is an echo or an
/// update (edit, delete); reactions and receipts follow the map, and wait in the persisted queue when their
/// target is not bridged yet. So does a reply whose target has no copy yet (a source that orders its feed by
/// change version lists a target edited after its reply after the reply): it is copied, linked, right after its
/// target's copy, or unlinked (the target's ID in `bridge.replyTo`) once the source has nothing more to read and
/// its target still has no copy. Each side's change cursor advances only after its batch is fully bridged.
///
/// With `BridgeConfiguration.batchCopies` (the default) and towards a `BulkPublishingAdapter`, runs of
/// consecutive plain new messages (no reply, no attachment, not deleted, not the bridge's own) are copied in
/// batches with the same order of steps: prepare each under its key, persist all their mappings and prepared
/// copies (towards a target that `republishesByKey`, only pending ledger rows naming it) in one store
/// transaction, `publishAll`, then the bookkeeping in one more.
public actor Bridge {
    /// The two sides.
    public let a: BridgeSide
    /// The two sides.
    public let b: BridgeSide
    let store: any Store
    let configuration: BridgeConfiguration
    /// The pair's key in the store's bridge records (`Bridge.pairKey`): its ledger, cursors and queues.
    public nonisolated let pair: String
    /// Changes set aside because no retry could bridge them.
    let quarantine: BridgeQuarantine
    /// The send time of the oldest change read and not yet bridged (nil once a catch-up found nothing left): what
    /// the status line's lag is measured from, so a pair that is stuck shows a growing lag.
    var oldestUnbridged: Date?
    /// What the quarantine holds (loaded at the first catch-up, kept up to date by each hold and release; an
    /// operator's drop only leaves an entry here that releases nothing): a bridged change looks here, not in the
    /// store, for a held older version of itself to release.
    var held: [BridgeQuarantine.Subject] = []
    /// Whether `held` was loaded from the store.
    var heldLoaded = false
    var stats = BridgeStats()
    var wake: AsyncStream<Void>.Continuation?
    var liveTasks: [Task<Void, Never>] = []
    /// Under `run()`: which sides' live streams (or the poll) signalled since the side was last read.
    var signals: SideSignals?
    var stopping = false
    /// Per source backend, the next page being read while the current one is copied, with the cursor it reads
    /// after. Used only when the stored cursor still equals that one; the read has no effect on the bridge's state.
    var readAhead: [BackendID: (after: Cursor?, page: Task<ChangeBatch, any Error>)] = [:]
    /// The batch whose `publishAll` is on its way while the next page is read and staged (see `pass`).
    var inFlight: InFlightCopy?
    /// The pair's change cursors as this bridge last read or stored them: while it holds the pair, nobody else
    /// writes them, so each pass need not read its cursor back.
    var cursors: [BackendID: Cursor?] = [:]
    /// Source backends known to have no reply waiting for its target's copy (see `deferReply`).
    var noWaitingReplies: Set<BackendID> = []
    /// Source backends whose waiting replies the store was asked about (once per bridge, at its first pass).
    var repliesLookedUp: Set<BackendID> = []
    /// Whether operations left waiting for copies that exist were run (`flushWaitingForExistingCopies`).
    var checkedWaitingCopies = false
    /// Source remote IDs copied since waiting replies were last looked at, per source backend.
    var copiedSinceReplyCheck: [BackendID: [RemoteID]] = [:]

    /// A bridge between `a` and `b` keeping its map, cursors and queue in `store`.
    public init(a: BridgeSide, b: BridgeSide, store: any Store, configuration: BridgeConfiguration = BridgeConfiguration()) async throws {
        try BridgeSide.checkDistinct(a, b)
        self.a = a
        self.b = b
        self.store = store
        self.configuration = configuration
        pair = Self.pairKey(a: a.conversation, b: b.conversation)
        quarantine = BridgeQuarantine(store: store, pair: pair)
        try await BridgeLegacyRecords.adopt(pair: pair, a: a, b: b, store: store)
    }

    /// The key under which the store keeps the records of the pair bridging conversation `a` with conversation `b`.
    public static func pairKey(a: ConversationID, b: ConversationID) -> String {
        "bridge:\(a)|\(b)"
    }

    /// Logs `line` at `level` to `BridgeConfiguration.logger` (the line is built only when the level is logged).
    func log(_ level: LogLevel, _ line: @autoclosure () -> String) {
        configuration.logger.log(level: level, line())
    }

    /// Asks the bridge to stop: a pass in progress finishes the change (or batch of new messages) it is
    /// bridging and ends there (its cursor stays put, so the rest of the page is bridged by the next run), and
    /// `run()` returns. Idempotent.
    public func stop() {
        stopping = true
        dropReadAhead()
        wake?.yield()
    }

    /// Cancels and forgets every page being read ahead.
    func dropReadAhead() {
        for (_, ahead) in readAhead { ahead.page.cancel() }
        readAhead = [:]
    }

    /// Counts so far.
    public var currentStats: BridgeStats {
        get async {
            var copy = stats
            let pair = self.pair
            copy.waiting = (try? await store.read { tx in
                try WaitKey.Family.waiting.reduce(0) { $0 + (try tx.bridgeOperations(pair: pair, in: $1).count) }
            }) ?? copy.waiting
            copy.quarantined = (try? await quarantine.count()) ?? copy.quarantined
            copy.lag = oldestUnbridged.map { max(0, Date().timeIntervalSince($0)) } ?? copy.lag
            return copy
        }
    }

    /// Which way a catch-up copies.
    public enum Direction: Sendable {
        /// Both ways (the bridge).
        case both
        /// Only from `a` to `b` (a migration).
        case aToB
    }

    /// What became of one source message during a pass (for a migration's report).
    public enum Outcome: Sendable, Hashable {
        /// Published on the other side now.
        case copied(MessageID)
        /// Already bridged by an earlier run.
        case alreadyPresent(MessageID)
        /// Deleted before it was copied; nothing to show on the other side.
        case skippedDeleted(MessageID, RemoteID)
        /// Copied as its fallback text: the source's content type (named) has no equivalent on the other side.
        case copiedAsFallback(MessageID, RemoteID, contentType: String)
        /// Not copied: the other side refused it for good (its error); held in the pair's quarantine.
        case refused(MessageID, RemoteID, reason: String)
        /// Not copied: it is a copy made from the other side (by a bridge, or an earlier copy the other way).
        case copyFromOtherSide(MessageID, RemoteID)
    }

    var observer: (@Sendable (Outcome) -> Void)?

    /// Bridges everything after the stored cursors, until no side has more; `observer` hears each source
    /// message's outcome. Returns the counts.
    @discardableResult
    public func catchUp(_ direction: Direction = .both, observer: (@Sendable (Outcome) -> Void)? = nil) async throws -> BridgeStats {
        self.observer = observer
        defer { self.observer = nil }
        do {
            let stats = try await catchUpPasses(direction)
            try await completeInFlight()
            return stats
        } catch {
            dropReadAhead()
            await abandonInFlight()
            throw error
        }
    }

    /// `catchUp`'s loop of passes. While one direction reads full pages, the other (which then mostly reads the
    /// bridge's own copies coming back) is read at most every `otherDirectionInterval`, and under `run()` only
    /// when its live stream (or the poll) has signalled something since it was last read.
    ///
    /// The two directions are independent: a pass that fails stops only its own direction (for the rest of this
    /// catch-up, and under `run()` until its backoff is over, see `heldBack`); the other goes on, and the first
    /// failure is thrown once it is done.
    func catchUpPasses(_ direction: Direction) async throws -> BridgeStats {
        lastFailureWasDirectional = false
        // Outside `run()` each catch-up tries a stopped direction again (and throws if it still fails); under it,
        // a catch-up whose every direction is stopped has nothing to do until a restart or reload.
        if signals == nil { stopped = [:] }
        if stopped[a.backend] != nil, direction == .aToB || stopped[b.backend] != nil { return await currentStats }
        if let failure = await checkAccess(direction) {
            // A side that stops its directions has said so; any other failure backs off like a failed catch-up.
            lastFailureWasDirectional = Self.stopsTheDirection(failure)
            throw failure
        }
        try await bridgeRetryRequests(direction)
        try await flushWaitingForExistingCopies()
        let interval = configuration.otherDirectionInterval
        var forward = PassResult(moved: true, hasMore: false)
        var backward = PassResult(moved: direction == .both, hasMore: false)
        var readAt = (forward: ContinuousClock.now - interval, backward: ContinuousClock.now - interval)
        var failures: [DirectionFailure] = []
        /// Whether `side` may be skipped while the other side has a backlog.
        func quiet(_ side: BridgeSide, readAt: ContinuousClock.Instant) -> Bool {
            ContinuousClock.now - readAt < interval || signals?.isSignalled(side.backend) == false
        }
        /// Whether `side`'s direction may be read: it has not failed in this catch-up and is not backing off.
        func due(_ side: BridgeSide) -> Bool {
            stopped[side.backend] == nil && !failures.contains { $0.source == side.backend }
                && (heldBack[side.backend].map { ContinuousClock.now >= $0.until } ?? true)
        }
        while true {
            if !due(a) {
                forward = PassResult(moved: false, hasMore: false)  // failed, stopped or backing off: not read now
            } else if !(backward.hasMore && quiet(a, readAt: readAt.forward)) {
                readAt.forward = ContinuousClock.now
                signals?.clear(a.backend)
                forward = try await guardedPass(from: a, to: b, failures: &failures)
            }
            if direction == .both, !due(b) {
                backward = PassResult(moved: false, hasMore: false)
            } else if direction == .both, !(forward.hasMore && quiet(b, readAt: readAt.backward)) {
                readAt.backward = ContinuousClock.now
                signals?.clear(b.backend)
                backward = try await guardedPass(from: b, to: a, failures: &failures)
            }
            if stopping {
                try await completeInFlight()
                break
            }
            if !forward.moved && !backward.moved { break }
        }
        if let failure = failures.first {
            lastFailureWasDirectional = true
            throw failure.error
        }
        if stopping { return await currentStats }
        // A direction still backing off has its error on the status line; only a catch-up of both is a success.
        guard heldBack.isEmpty, stopped.isEmpty else { return await currentStats }
        stats.lastError = nil
        stats.lastSuccess = Date()
        oldestUnbridged = nil
        stats.lag = 0
        return await currentStats
    }

    /// A direction's pass that failed in a catch-up.
    struct DirectionFailure {
        /// The direction's source backend.
        var source: BackendID
        /// What the pass threw.
        var error: any Error
    }

    /// One direction whose last pass failed (under `run()`): when it is read again, and how long it waits after
    /// its next failure.
    struct Backoff {
        var until: ContinuousClock.Instant
        var nextDelay: Duration
    }

    /// Under `run()`, by source backend: the directions backing off after a failed pass. The other direction is
    /// read as usual meanwhile.
    var heldBack: [BackendID: Backoff] = [:]
    /// By source backend: the directions stopped by a failure no retry can fix (`stopsTheDirection`), with the side
    /// that failed and why. A new bridge (a restart or a reload) tries them again.
    var stopped: [BackendID: String] = [:]
    /// Whether the last catch-up threw a direction's failure (which backs off on its own), not one of the whole pair.
    var lastFailureWasDirectional = false
    /// Under `run()`: wakes the pass loop when the earliest backoff in `heldBack` is over.
    var backoffTimer: Task<Void, Never>?

    /// A pass from `source` to `target` whose failure ends only its own direction: the failure is logged, put on
    /// the status line, appended to `failures`, and (under `run()`) starts or doubles the direction's backoff.
    /// Cancellation, and any failure while stopping, is thrown.
    func guardedPass(from source: BridgeSide, to target: BridgeSide,
                             failures: inout [DirectionFailure]) async throws -> PassResult {
        do {
            let result = try await pass(from: source, to: target)
            heldBack[source.backend] = nil
            return result
        } catch {
            if error is CancellationError || Task.isCancelled || stopping { throw error }
            readAhead.removeValue(forKey: source.backend)?.page.cancel()
            // Whichever direction it came from, the batch in flight ends here (recorded if its publish went through).
            await abandonInFlight()
            failures.append(DirectionFailure(source: source.backend, error: error))
            if Self.stopsTheDirection(error) {
                // No retry fixes it (credentials, access to a conversation, a conversation that is gone, a full or
                // damaged store): the direction stops, saying which side failed, until the bridge is reconfigured or
                // restarted.
                let culprit = await failingSide(of: source, to: target, after: error)
                stopped[source.backend] = culprit
                stats.lastError = "stopped \(source.name) → \(target.name): \(culprit)"
                let fix = BridgeDecision.failure(error) == .stop(.store) ? "the store" : "the account or the config"
                log(.error, "bridging \(source.name) → \(target.name) stopped, no retry can fix it: \(culprit); "
                                  + "fix \(fix) and restart the bridge (or reload it)")
                return PassResult(moved: false, hasMore: false)
            }
            stats.lastError = "\(source.name) → \(target.name): \(error)"
            guard signals != nil else {
                log(.warning, "bridging \(source.name) → \(target.name) failed: \(error)")
                return PassResult(moved: false, hasMore: false)
            }
            let backoff = heldBack[source.backend]?.nextDelay ?? configuration.retryBase
            // A server that said how long to wait (`Retry-After` on a 429 or 503) is waited for at least that long.
            let delay = max(backoff, SwitchboardError.wrapping(error).retryAfter ?? .zero)
            heldBack[source.backend] = Backoff(until: ContinuousClock.now + delay,
                                               nextDelay: min(backoff * 2, configuration.retryCap))
            log(.warning, "bridging \(source.name) → \(target.name) failed (retrying in \(delay); the other direction "
                              + "goes on): \(error)")
            return PassResult(moved: false, hasMore: false)
        }
    }

    /// Whether both sides' conversations were found readable (`ConversationCheckingAdapter`): checked once per
    /// bridge, before its first pass.
    var accessChecked = false
    /// Whether the check found a side unreadable (its directions are `stopped`).
    var accessFailed = false

    /// Before the first pass: asks each side that can tell whether its conversation exists and the account may
    /// read it (a backend whose row-level security makes it look empty otherwise). A side that cannot stops every
    /// direction that reads or writes it (`stopped`), logged with the side and its error, which is returned.
    func checkAccess(_ direction: Direction) async -> (any Error)? {
        // Under `run()` a side found unreadable stays stopped until the bridge is restarted or reloaded.
        guard !accessChecked, !(signals != nil && accessFailed) else { return nil }
        var failure: (any Error)?
        for side in [a, b] {
            guard let checking = side.adapter as? any ConversationCheckingAdapter else { continue }
            do {
                try await checking.checkAccess(to: side.conversation)
            } catch where Self.stopsTheDirection(error) {
                let culprit = "\(side.name) conversation \(side.conversation): \(error)"
                for source in direction == .both ? [a, b] : [a] { stopped[source.backend] = culprit }
                stats.lastError = "stopped: \(culprit)"
                log(.error, "bridging stopped, no retry can fix it: \(culprit); fix the account or the config and "
                                  + "restart the bridge (or reload it)")
                failure = failure ?? error
            } catch {
                return error  // not known yet (a transport error, say): checked again at the next catch-up
            }
        }
        accessChecked = failure == nil
        accessFailed = failure != nil
        return failure
    }

    /// Whether a pass's failure is one no retry can fix (`BridgeDecision.failure` is not `retry`): the account's
    /// credentials or its access to a conversation, a store that is full, read-only or damaged, any other
    /// non-retryable error (a change-level refusal is quarantined before it reaches the pass, so any such error
    /// reaching it came from reading the source or the store).
    static func stopsTheDirection(_ error: any Error) -> Bool {
        if case .retry = BridgeDecision.failure(error) { return false }
        return true
    }

    /// Which side a failure that stops a direction comes from, with its conversation and the error: a store failure
    /// is the store's; otherwise each side is asked whether it can still reach its conversation (`checkAccess`,
    /// `latestCursor`); when both can, the failure came from a write, on `target`.
    func failingSide(of source: BridgeSide, to target: BridgeSide, after error: any Error) async -> String {
        if BridgeDecision.failure(error) == .stop(.store) { return "the store: \(error)" }
        for side in [source, target] {
            do {
                try await (side.adapter as? any ConversationCheckingAdapter)?.checkAccess(to: side.conversation)
                _ = try await side.adapter.latestCursor(in: side.conversation)
            } catch {
                return "\(side.name) conversation \(side.conversation): \(error)"
            }
        }
        return "\(target.name) conversation \(target.conversation): \(error)"
    }

    /// Under `run()`: wakes the pass loop once the earliest direction backing off may be read again.
    func scheduleBackoffWake() {
        backoffTimer?.cancel()
        guard let until = heldBack.values.map(\.until).min() else { return }
        backoffTimer = Task { [wake] in
            try? await Task.sleep(until: until, clock: .continuous)
            if !Task.isCancelled { wake?.yield() }
        }
    }

    /// Runs until the task is cancelled: live events (and a poll) trigger catch-up passes; errors back off and
    /// retry without dropping anything; typing is forwarded live.
    public func run() async {
        let (wakes, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        wake = continuation
        let signals = SideSignals(all: [a.backend, b.backend])
        self.signals = signals
        startLive(from: a, to: b)
        startLive(from: b, to: a)
        let poller = Task { [configuration, a, b] in
            while !Task.isCancelled {
                try? await Task.sleep(for: configuration.pollInterval)
                signals.signal(a.backend)
                signals.signal(b.backend)
                continuation.yield()
            }
        }
        defer {
            self.signals = nil
            heldBack = [:]
            stopped = [:]
            accessFailed = false
            backoffTimer?.cancel()
            backoffTimer = nil
            poller.cancel()
            for task in liveTasks { task.cancel() }
            liveTasks = []
            dropReadAhead()
        }
        var delay = configuration.retryBase
        continuation.yield()
        for await _ in wakes {
            if Task.isCancelled || stopping { break }
            do {
                try await catchUp()
                delay = configuration.retryBase
            } catch where lastFailureWasDirectional {
                // A direction failed: it backs off on its own (`guardedPass`) while the other goes on.
                delay = configuration.retryBase
            } catch where Self.stopsTheDirection(error) {
                // The whole pair's, and no retry fixes it (a full or damaged store, say): every direction stops,
                // as one that failed so would, until the bridge is restarted or reloaded.
                let culprit = BridgeDecision.failure(error) == .stop(.store) ? "the store: \(error)" : "\(error)"
                stopped[a.backend] = culprit
                stopped[b.backend] = culprit
                stats.lastError = "stopped: \(culprit)"
                log(.error, "bridging stopped, no retry can fix it: \(culprit); fix it and restart the bridge (or reload it)")
            } catch {
                stats.lastError = String(describing: error)
                let wait = max(delay, SwitchboardError.wrapping(error).retryAfter ?? .zero)
                log(.warning, "bridge pass failed (retrying in \(wait)): \(error)")
                await pause(wait)
                delay = min(delay * 2, configuration.retryCap)
                continuation.yield()
            }
            scheduleBackoffWake()
        }
    }

    /// Sleeps for `delay`, waking early when `stop()` is called.
    func pause(_ delay: Duration) async {
        let deadline = ContinuousClock.now + delay
        while !stopping, !Task.isCancelled, ContinuousClock.now < deadline {
            try? await Task.sleep(for: min(.milliseconds(100), deadline - ContinuousClock.now))
        }
    }

    /// Listens to `source`'s live events off the actor: they only wake the pass loop (and typing is forwarded), so
    /// a burst of events does not queue one actor hop per message behind the pass in progress.
    ///
    /// Where the backend can leave the bridge account's own messages out of its live events (they are the bridge's
    /// copies coming back), it does: they would only wake a read that skips them. Each event also marks its side
    /// as signalled (`SideSignals`).
    func startLive(from source: BridgeSide, to target: BridgeSide) {
        let filtering = configuration.copiesOwnMessages ? nil : source.adapter as? any OwnMessageFilteringAdapter
        let stream = filtering?.liveEventsSkippingOwnMessages(in: source.conversation)
            ?? source.adapter.liveEvents(in: source.conversation)
        let wake = self.wake, signals = self.signals
        liveTasks.append(Task.detached {
            for await event in stream {
                await Self.live(event, from: source, to: target, wake: wake, signals: signals)
            }
        })
    }

    static func live(_ event: AdapterEvent, from source: BridgeSide, to target: BridgeSide,
                             wake: AsyncStream<Void>.Continuation?, signals: SideSignals?) async {
        switch event {
        case .typing(_, let user, let isTyping):
            guard user != source.adapter.localUser, let typing = target.adapter as? any TypingAdapter else { return }
            try? await typing.sendTyping(isTyping, in: target.conversation)
        case .change, .connection(.connected):
            signals?.signal(source.backend)
            wake?.yield()
        case .connection(.disconnected):
            return
        }
    }
}
