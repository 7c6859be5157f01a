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
    private let store: any Store
    private let configuration: BridgeConfiguration
    /// The pair's key in the store's bridge records (`Bridge.pairKey`): its ledger, cursors and queues.
    public nonisolated let pair: String
    /// Changes set aside because no retry could bridge them.
    private let quarantine: BridgeQuarantine
    /// The send time of the oldest change read and not yet bridged (nil once a catch-up found nothing left): what
    /// the status line's lag is measured from, so a pair that is stuck shows a growing lag.
    private var oldestUnbridged: Date?
    /// What the quarantine holds (loaded at each catch-up's start, kept up to date by each hold and release): a
    /// bridged change looks here, not in the store, for a held older version of itself to release.
    private var held: [BridgeQuarantine.Subject] = []
    private var stats = BridgeStats()
    private var wake: AsyncStream<Void>.Continuation?
    private var liveTasks: [Task<Void, Never>] = []
    /// Under `run()`: which sides' live streams (or the poll) signalled since the side was last read.
    private var signals: SideSignals?
    private var stopping = false
    /// Per source backend, the next page being read while the current one is copied, with the cursor it reads
    /// after. Used only when the stored cursor still equals that one; the read has no effect on the bridge's state.
    private var readAhead: [BackendID: (after: Cursor?, page: Task<ChangeBatch, any Error>)] = [:]
    /// The batch whose `publishAll` is on its way while the next page is read and staged (see `pass`).
    private var inFlight: InFlightCopy?
    /// Source backends known to have no reply waiting for its target's copy (see `deferReply`).
    private var noWaitingReplies: Set<BackendID> = []
    /// Source backends whose waiting replies the store was asked about (once per bridge, at its first pass).
    private var repliesLookedUp: Set<BackendID> = []
    /// Source remote IDs copied since waiting replies were last looked at, per source backend.
    private var copiedSinceReplyCheck: [BackendID: [RemoteID]] = [:]

    /// A bridge between `a` and `b` keeping its map, cursors and queue in `store`.
    public init(a: BridgeSide, b: BridgeSide, store: any Store, configuration: BridgeConfiguration = BridgeConfiguration()) throws {
        guard a.backend != b.backend else {
            throw SwitchboardError(.invalidArgument, "both sides use backend ID \(a.backend); give each side its own")
        }
        self.a = a
        self.b = b
        self.store = store
        self.configuration = configuration
        pair = Self.pairKey(a: a.conversation, b: b.conversation)
        quarantine = BridgeQuarantine(store: store, pair: pair)
        try BridgeLegacyRecords.adopt(pair: pair, a: a, b: b, store: store)
    }

    /// The key under which the store keeps the records of the pair bridging conversation `a` with conversation `b`.
    public static func pairKey(a: ConversationID, b: ConversationID) -> String {
        "bridge:\(a)|\(b)"
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
    private func dropReadAhead() {
        for (_, ahead) in readAhead { ahead.page.cancel() }
        readAhead = [:]
    }

    /// Counts so far.
    public var currentStats: BridgeStats {
        var copy = stats
        let pair = self.pair
        copy.waiting = (try? store.read { tx in
            try BridgeWaitKey.waitingPrefixes.reduce(0) { $0 + (try tx.bridgeOperations(pair: pair, waitKeyPrefix: $1).count) }
        }) ?? copy.waiting
        copy.quarantined = (try? quarantine.count()) ?? copy.quarantined
        copy.lag = oldestUnbridged.map { max(0, Date().timeIntervalSince($0)) } ?? copy.lag
        return copy
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

    private var observer: (@Sendable (Outcome) -> Void)?

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
    private func catchUpPasses(_ direction: Direction) async throws -> BridgeStats {
        lastFailureWasDirectional = false
        // Outside `run()` each catch-up tries a stopped direction again (and throws if it still fails).
        if signals == nil { stopped = [:] }
        if let failure = await checkAccess(direction) {
            // A side that stops its directions has said so; any other failure backs off like a failed catch-up.
            lastFailureWasDirectional = Self.stopsTheDirection(failure)
            throw failure
        }
        try await bridgeRetryRequests(direction)
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
        if stopping { return currentStats }
        // A direction still backing off has its error on the status line; only a catch-up of both is a success.
        guard heldBack.isEmpty, stopped.isEmpty else { return currentStats }
        stats.lastError = nil
        stats.lastSuccess = Date()
        oldestUnbridged = nil
        stats.lag = 0
        return currentStats
    }

    /// A direction's pass that failed in a catch-up.
    private struct DirectionFailure {
        /// The direction's source backend.
        var source: BackendID
        /// What the pass threw.
        var error: any Error
    }

    /// One direction whose last pass failed (under `run()`): when it is read again, and how long it waits after
    /// its next failure.
    private struct Backoff {
        var until: ContinuousClock.Instant
        var nextDelay: Duration
    }

    /// Under `run()`, by source backend: the directions backing off after a failed pass. The other direction is
    /// read as usual meanwhile.
    private var heldBack: [BackendID: Backoff] = [:]
    /// By source backend: the directions stopped by a failure no retry can fix (`stopsTheDirection`), with the side
    /// that failed and why. A new bridge (a restart or a reload) tries them again.
    private var stopped: [BackendID: String] = [:]
    /// Whether the last catch-up threw a direction's failure (which backs off on its own), not one of the whole pair.
    private var lastFailureWasDirectional = false
    /// Under `run()`: wakes the pass loop when the earliest backoff in `heldBack` is over.
    private var backoffTimer: Task<Void, Never>?

    /// A pass from `source` to `target` whose failure ends only its own direction: the failure is logged, put on
    /// the status line, appended to `failures`, and (under `run()`) starts or doubles the direction's backoff.
    /// Cancellation, and any failure while stopping, is thrown.
    private func guardedPass(from source: BridgeSide, to target: BridgeSide,
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
                // No retry fixes it (credentials, access to a conversation, a conversation that is gone): the
                // direction stops, saying which side failed, until the bridge is reconfigured or restarted.
                let culprit = await failingSide(of: source, to: target, after: error)
                stopped[source.backend] = culprit
                stats.lastError = "stopped \(source.name) → \(target.name): \(culprit)"
                configuration.log("bridging \(source.name) → \(target.name) stopped, no retry can fix it: \(culprit); "
                                  + "fix the account or the config and restart the bridge (or reload it)")
                return PassResult(moved: false, hasMore: false)
            }
            stats.lastError = "\(source.name) → \(target.name): \(error)"
            guard signals != nil else {
                configuration.log("bridging \(source.name) → \(target.name) failed: \(error)")
                return PassResult(moved: false, hasMore: false)
            }
            let backoff = heldBack[source.backend]?.nextDelay ?? configuration.retryBase
            // A server that said how long to wait (`Retry-After` on a 429 or 503) is waited for at least that long.
            let delay = max(backoff, (error as? SwitchboardError)?.retryAfter ?? .zero)
            heldBack[source.backend] = Backoff(until: ContinuousClock.now + delay,
                                               nextDelay: min(backoff * 2, configuration.retryCap))
            configuration.log("bridging \(source.name) → \(target.name) failed (retrying in \(delay); the other direction "
                              + "goes on): \(error)")
            return PassResult(moved: false, hasMore: false)
        }
    }

    /// Whether both sides' conversations were found readable (`ConversationCheckingAdapter`): checked once per
    /// bridge, before its first pass.
    private var accessChecked = false
    /// Whether the check found a side unreadable (its directions are `stopped`).
    private var accessFailed = false

    /// Before the first pass: asks each side that can tell whether its conversation exists and the account may
    /// read it (a backend whose row-level security makes it look empty otherwise). A side that cannot stops every
    /// direction that reads or writes it (`stopped`), logged with the side and its error, which is returned.
    private func checkAccess(_ direction: Direction) async -> (any Error)? {
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
                configuration.log("bridging stopped, no retry can fix it: \(culprit); fix the account or the config and "
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

    /// Whether a pass's failure is one no retry can fix: the account's credentials or its access to a conversation
    /// (a change-level refusal is quarantined before it reaches the pass, so any other permanent error reaching it
    /// came from reading the source or the store).
    static func stopsTheDirection(_ error: any Error) -> Bool {
        guard let error = error as? SwitchboardError else { return false }
        switch error.code {
        case .unauthorized, .forbidden, .unknownConversation: return true
        default: return isPermanent(error)
        }
    }

    /// Which side a failure that stops a direction comes from, with its conversation and the error: each side is
    /// asked whether it can still reach its conversation (`checkAccess`, `latestCursor`); when both can, the
    /// failure came from a write, on `target`.
    private func failingSide(of source: BridgeSide, to target: BridgeSide, after error: any Error) async -> String {
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
    private func scheduleBackoffWake() {
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
            } catch {
                stats.lastError = String(describing: error)
                let wait = max(delay, (error as? SwitchboardError)?.retryAfter ?? .zero)
                configuration.log("bridge pass failed (retrying in \(wait)): \(error)")
                await pause(wait)
                delay = min(delay * 2, configuration.retryCap)
                continuation.yield()
            }
            scheduleBackoffWake()
        }
    }

    /// Sleeps for `delay`, waking early when `stop()` is called.
    private func pause(_ delay: Duration) async {
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
    private func startLive(from source: BridgeSide, to target: BridgeSide) {
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

    private static func live(_ event: AdapterEvent, from source: BridgeSide, to target: BridgeSide,
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

    // MARK: - One pass

    /// What one pass found.
    private struct PassResult {
        /// Whether anything was read (or more was announced).
        var moved: Bool
        /// Whether the source said more changes follow the page.
        var hasMore: Bool
    }

    /// Bridges one page of `source`'s changes; returns what it found. When the page says more
    /// follow, the next one is read ahead while this one is copied (the cursor still advances only after a page is
    /// fully bridged, so a kill or an error loses nothing; a page read ahead is used only if it starts at the
    /// stored cursor).
    ///
    /// A page that ends with a batch of new messages leaves that batch's `publishAll` in flight: the next pass in
    /// the same direction reads and stages (prepares and persists) the next page meanwhile, then completes the
    /// batch in flight and stores its cursor before publishing its own. Anything else that publishes first
    /// completes the batch in flight, so publishes keep their order; a pass of the other direction that only
    /// reads the bridge's own copies coming back (settled echoes) leaves it in flight.
    private func pass(from source: BridgeSide, to target: BridgeSide) async throws -> PassResult {
        try Task.checkCancellation()
        // A batch in flight from the other side stays in flight while this page only holds its own copies coming
        // back (settled echoes, which change nothing); it is completed before anything here is bridged.
        let ownInFlight = inFlight.map { $0.source.backend == source.backend } ?? false
        let cursor: Cursor?
        if let inFlight, ownInFlight {
            cursor = inFlight.cursor
        } else {
            let pair = self.pair
            cursor = try store.read { try $0.bridgeCursor(pair: pair, backend: source.backend) }
        }
        let bulk = configuration.batchCopies ? target.adapter as? any BulkPublishingAdapter : nil
        let span = max(1, bulk?.bulkPublishLimit ?? 1)
        try lookUpWaitingReplies(from: source, to: target)
        let batch = try await page(of: source, after: cursor, span: span)
        if oldestUnbridged == nil, let first = batch.changes.first { oldestUnbridged = first.changedAt }
        if batch.hasMore, !stopping, batch.cursor != cursor {
            let adapter = source.adapter, conversation = source.conversation, next = batch.cursor
            let limit = configuration.batchSize, skippingOwn = !configuration.copiesOwnMessages
            readAhead[source.backend] = (next, Task.detached {
                try await Self.pages(of: adapter, in: conversation, after: next, limit: limit, span: span,
                                     skippingOwn: skippingOwn)
            })
        }
        var run: [PlannedCopy] = []
        var planned = Set<MessageID>()
        let settled = try settledEchoes(in: batch.changes, from: source, to: target)
        // The page's copy states, read at once; dropped as soon as anything is written before they are used.
        var states = bulk == nil ? [:] : try copyStates(of: batch.changes, skipping: settled, from: source, to: target)
        for (index, change) in batch.changes.enumerated() {
            if stopping { return PassResult(moved: false, hasMore: false) }
            if settled.contains(index) { continue }
            if let bulk {
                if case .message(let message) = change,
                   let next = try plan(message, from: source, to: target, excluding: planned, known: states[message.remoteID]) {
                    run.append(next)
                    planned.insert(next.id)
                    // A full batch is copied now unless it ends the page: then it goes below, left in flight.
                    if run.count >= max(1, bulk.bulkPublishLimit), index < batch.changes.count - 1 {
                        try await completeInFlight()
                        try await copyOrSplit(run, from: source, to: target, via: bulk)
                        run = []
                        planned = []
                        states = [:]
                    }
                    continue
                }
                if !run.isEmpty {
                    try await completeInFlight()
                    try await copyOrSplit(run, from: source, to: target, via: bulk)
                    run = []
                    planned = []
                    if stopping { return PassResult(moved: false, hasMore: false) }
                }
            }
            states = [:]
            try await completeInFlight()
            try await copyRepliesToCopiedTargets(from: source, to: target)
            try await bridgeOrHold(change, from: source, to: target)
        }
        if let bulk, !run.isEmpty, let staged = try await stageOrSplit(run, from: source, to: target, via: bulk) {
            let prepared = staged.prepared
            try await completeInFlight(startingNext: {
                InFlightCopy(staged: staged, publish: Task { try await bulk.publishAll(prepared) },
                             cursor: batch.cursor, storedCursor: cursor)
            })
            if stopping { try await completeInFlight() }
            if !batch.hasMore, !stopping { try await copyWaitingReplies(from: source, to: target) }
            return PassResult(moved: true, hasMore: batch.hasMore)
        }
        // The previous page's batch from this side is recorded before this page's cursor; one from the other side
        // has a cursor of its own and may stay in flight.
        if ownInFlight { try await completeInFlight() }
        if batch.cursor != cursor {
            try storeCursor(batch.cursor, of: source)
        }
        if !batch.hasMore, !stopping {
            try await copyWaitingReplies(from: source, to: target)
        } else {
            try await copyRepliesToCopiedTargets(from: source, to: target)
        }
        return PassResult(moved: !batch.changes.isEmpty || batch.hasMore, hasMore: batch.hasMore)
    }

    /// A staged batch whose `publishAll` runs, and the page cursor to store once it is complete.
    private struct InFlightCopy {
        /// The staged batch.
        var staged: StagedCopy
        /// The publish.
        var publish: Task<[PublishReceipt], any Error>
        /// The cursor after the batch's page.
        var cursor: Cursor?
        /// The cursor the page was read after.
        var storedCursor: Cursor?
        /// The side the batch comes from.
        var source: BridgeSide { staged.source }
    }

    /// Waits for the batch in flight (if any), records it and stores its page's cursor.
    ///
    /// With `next`, the next batch's publish starts as soon as this one's has returned, before this one is recorded:
    /// the target still receives the batches in order, and the bookkeeping leaves the publishes' critical path. A
    /// kill or an error before the record leaves its copies pending in the ledger, to be published again under the
    /// same keys (harmless), and its page's cursor unstored.
    private func completeInFlight(startingNext next: (() -> InFlightCopy)? = nil) async throws {
        guard let current = inFlight else {
            inFlight = next?()
            return
        }
        inFlight = nil
        let source = current.source
        do {
            // The publish runs in a task of its own: cancelling the caller cancels it too, as a direct call would.
            let receipts = try await withTaskCancellationHandler {
                try await current.publish.value
            } onCancel: {
                current.publish.cancel()
            }
            inFlight = next?()
            try await finish(current.staged, receipts: receipts)
        } catch where Self.isPermanent(error) {
            // One message of the batch cannot go: each is bridged alone, and what cannot go is held.
            for planned in current.staged.run {
                try await bridgeOrHold(.message(planned.message), from: source, to: current.staged.target)
            }
            inFlight = next?()
        }
        if current.cursor != current.storedCursor {
            try storeCursor(current.cursor, of: source)
        }
    }

    /// Stores `source`'s change cursor in the pair's records.
    private func storeCursor(_ cursor: Cursor?, of source: BridgeSide) throws {
        let pair = self.pair
        try store.write { try $0.setBridgeCursor(cursor, pair: pair, backend: source.backend) }
    }

    /// After an error: lets the batch in flight end and records it if its publish went through (otherwise its
    /// persisted copies are published again by the next pass); its cursor stays put.
    private func abandonInFlight() async {
        guard let current = inFlight else { return }
        inFlight = nil
        if Task.isCancelled { current.publish.cancel() }
        if let receipts = try? await current.publish.value { try? await finish(current.staged, receipts: receipts) }
    }

    /// The positions of `changes` that are the bridge's own copies coming back, already mapped on both sides:
    /// `bridgeMessage` would change nothing for them, so they are recognised in one read transaction per page.
    private func settledEchoes(in changes: [RemoteChange], from source: BridgeSide, to target: BridgeSide) throws -> Set<Int> {
        let own = source.adapter.localUser
        let candidates = changes.indices.filter { index in
            if case .message(let message) = changes[index], message.sender == own { return true }
            return false
        }
        guard !candidates.isEmpty else { return [] }
        let pair = self.pair, copiesOwn = configuration.copiesOwnMessages
        return try store.read { tx in
            var settled = Set<Int>()
            for index in candidates {
                guard case .message(let message) = changes[index],
                      let id = try tx.messageID(backend: source.backend, remoteID: message.remoteID)
                          ?? MessageIdentity.normalizedKey(message.idempotencyKey, scope: KeyScope(message, on: source.backend)),
                      try tx.remoteID(of: id, backend: source.backend, part: 0) == message.remoteID,
                      try tx.remoteID(of: id, backend: target.backend, part: 0) != nil else { continue }
                if let copy = try tx.bridgeCopy(id), copy.pair == pair {
                    // A copy towards `target` waits to be republished: the slow path does that.
                    if copy.pendingTowards == target.backend { continue }
                    // An original of the account's own this pair copied (`copiesOwnMessages`): its updates follow.
                    if copiesOwn, copy.origin == source.backend { continue }
                }
                settled.insert(index)
            }
            return settled
        }
    }

    /// The changes of `source` after `cursor` (see `pages`): the ones read ahead when they start there, else read now.
    private func page(of source: BridgeSide, after cursor: Cursor?, span: Int) async throws -> ChangeBatch {
        if let ahead = readAhead.removeValue(forKey: source.backend) {
            if ahead.after == cursor, let batch = try? await ahead.page.value { return batch }
            ahead.page.cancel()
        }
        return try await Self.pages(of: source.adapter, in: source.conversation, after: cursor, limit: configuration.batchSize,
                                    span: span, skippingOwn: !configuration.copiesOwnMessages)
    }

    /// One page of changes after `cursor`, extended by the following full pages while every change so far is a
    /// message and the whole stays within `span` changes (a target's bulk publish size): a backlog of new messages
    /// then crosses in batches of `span`, whatever page size the source serves.
    private static func pages(of adapter: any ChatAdapter, in conversation: ConversationID, after cursor: Cursor?,
                              limit: Int, span: Int, skippingOwn: Bool) async throws -> ChangeBatch {
        var batch = try await changes(of: adapter, in: conversation, after: cursor, limit: limit, skippingOwn: skippingOwn)
        while batch.hasMore, batch.changes.count + limit <= span, batch.cursor != cursor,
              batch.changes.allSatisfy({ if case .message = $0 { true } else { false } }) {
            // The rest of the span in whole pages, asked for at once: an adapter that can read that much in one go
            // (the XMTP-like one stores it in one transaction) does; the others serve a page and the loop goes on.
            let rest = (span - batch.changes.count) / limit * limit
            let next = try await changes(of: adapter, in: conversation, after: batch.cursor, limit: rest,
                                         skippingOwn: skippingOwn)
            guard !next.changes.isEmpty || next.cursor != batch.cursor else { break }
            batch = ChangeBatch(changes: batch.changes + next.changes, cursor: next.cursor, hasMore: next.hasMore)
        }
        return batch
    }

    /// One page of `adapter`'s changes; with `skippingOwn`, without the bridge account's own plain messages where
    /// the backend can leave them out (a live bridge does nothing with them: they are its own copies coming back).
    private static func changes(of adapter: any ChatAdapter, in conversation: ConversationID, after cursor: Cursor?,
                                limit: Int, skippingOwn: Bool) async throws -> ChangeBatch {
        if skippingOwn, let filtering = adapter as? any OwnMessageFilteringAdapter {
            return try await filtering.changesSkippingOwnPlainMessages(in: conversation, after: cursor, limit: limit)
        }
        return try await adapter.changes(in: conversation, after: cursor, limit: limit)
    }

    private func bridge(_ change: RemoteChange, from source: BridgeSide, to target: BridgeSide) async throws {
        switch change {
        case .message(let message):
            try await bridgeMessage(message, from: source, to: target)
        case .reaction(let reaction):
            guard reaction.user != source.adapter.localUser else { return }
            try await bridgeReaction(reaction, from: source, to: target)
        case .receipt(let receipt):
            guard receipt.user != source.adapter.localUser else { return }
            try await bridgeReceipt(receipt, from: source, to: target)
        }
    }

    /// The `MessageID` of a source message's reaction or receipt target: the map, else the derivation.
    private func resolveTarget(_ remote: RemoteID, on side: BridgeSide) throws -> MessageID {
        let backend = side.backend
        return try store.read { tx in
            try tx.messageID(backend: backend, remoteID: remote) ?? MessageID.derived(backend: backend, remote: remote)
        }
    }

    /// The `MessageID` of a source message (`identify` in a read transaction), logging and counting a carried key
    /// that was refused.
    private func identify(_ message: RemoteMessage, on side: BridgeSide) throws -> MessageID {
        let pair = self.pair
        return noted(try store.read { tx in try Self.identify(message, on: side, pair: pair, in: tx) }, of: message, on: side)
    }

    /// Logs and counts a resolution whose carried key was refused; returns its ID.
    private func noted(_ resolution: MessageIdentity.Resolution, of message: RemoteMessage, on side: BridgeSide) -> MessageID {
        if let key = resolution.refusedKey, let reason = resolution.collision {
            stats.keyCollisions += 1
            configuration.log("\(side.name) message \(message.remoteID) from \(message.sender) carries key \(key), which is "
                              + "not theirs to use (\(reason)); bridged apart as \(resolution.id)")
        }
        return resolution.id
    }

    /// Resolves a source message (DESIGN §2): the ID map by its backend ID first (the bridge's own copies and
    /// everything seen before), else its carried key when the claim holds, else a derived ID. A key binds only
    /// when that `MessageID` is unknown to the store, or is this pair's own copy coming back from the bridge's
    /// account; a key naming any other message (of this pair, another pair, another backend) is a collision.
    private static func identify(_ message: RemoteMessage, on side: BridgeSide, pair: String,
                                 in tx: any StoreTransaction) throws -> MessageIdentity.Resolution {
        if let mapped = try tx.messageID(backend: side.backend, remoteID: message.remoteID) {
            return MessageIdentity.Resolution(id: mapped)
        }
        let own = side.adapter.localUser
        return try MessageIdentity.resolve(message, on: side.backend) { candidate in
            var evidence = KeyEvidence()
            let mappings = try tx.mappings(of: candidate)
            if let other = mappings.first(where: { $0.backend == side.backend && $0.part == 0 })?.remoteID,
               other != message.remoteID {
                evidence.otherRemoteOnBackend = other
            }
            let copy = try tx.bridgeCopy(candidate)
            evidence.isOwnCopy = message.sender == own && copy?.pair == pair
            evidence.isHeldElsewhere = copy != nil || !mappings.isEmpty
            return evidence
        }
    }

    /// Records a mapping unless the same one exists.
    private func record(_ id: MessageID, _ remote: RemoteID, on side: BridgeSide) throws {
        let backend = side.backend
        if try store.read({ try $0.remoteID(of: id, backend: backend, part: 0) }) == remote { return }
        try store.write { tx in try Self.record(id, remote, on: side, in: tx) }
    }

    /// Records a mapping inside `tx` unless the same one exists (one statement when it is new; a conflicting
    /// mapping throws).
    private static func record(_ id: MessageID, _ remote: RemoteID, on side: BridgeSide, in tx: any StoreTransaction) throws {
        let mapping = IDMapping(messageID: id, backend: side.backend, conversation: side.conversation, remoteID: remote)
        if try tx.insertMappingIfAbsent(mapping) { return }
        if try tx.remoteID(of: id, backend: side.backend, part: 0) == remote { return }
        try tx.insertMapping(mapping)
    }

    private func bridgeMessage(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide,
                               repliesMayWait: Bool = true) async throws {
        let id = try identify(message, on: source)
        try record(id, message.remoteID, on: source)
        var facts = BridgeDecision.MessageFacts(state: try copyState(id, on: target),
                                                isOwnCopy: isOwnCopy(message, from: source, to: target),
                                                isDeleted: message.deletedAt != nil, replyTo: message.replyTo,
                                                replyTargetCopy: nil, repliesMayWait: repliesMayWait)
        if case .new = facts.state, let reply = message.replyTo {
            let (sourceBackend, targetBackend) = (source.backend, target.backend)
            facts.replyTargetCopy = try store.read { tx in
                try tx.messageID(backend: sourceBackend, remoteID: reply).flatMap {
                    try tx.remoteID(of: $0, backend: targetBackend, part: 0)
                }
            }
        }
        let replyTo: RemoteID?, unlinkedReply: RemoteID?
        switch BridgeDecision.message(facts) {
        case .refuseOtherPair:
            throw SwitchboardError(.conflict, "\(source.name) message \(message.remoteID) resolves to \(id), which "
                                   + "belongs to another bridged pair")
        case .applyUpdates(let remote):
            if !facts.isOwnCopy { observer?(.alreadyPresent(id)) }
            try await applyUpdates(message, id: id, remote: remote, from: source, to: target)
            return
        case .republish(let stored):
            // A copy was prepared and persisted, then the process stopped before its publish was recorded: publish
            // exactly that copy again (harmless if it went out), then apply what changed at the source since.
            try await republish(stored, of: message, id: id, from: source, to: target)
            return
        case .republishStaged(let text):
            // The same copy again: prepared from the text that was staged (the target keeps the first copy it
            // got under this key), then whatever changed at the source since is applied as an update.
            var original = message
            original.text = text
            let outgoing = outgoingCopy(of: original, id: id, from: source, to: target, replyTo: nil, attachments: [])
            let prepared = try await target.adapter.prepare(outgoing, noSend: true)
            try await republish(prepared, of: message, id: id, from: source, to: target)
            return
        case .skipOwnCopy:
            // A copy made from the other side whose mapping is gone cannot be copied back without looping; log it.
            configuration.log("skipping \(source.name) message \(message.remoteID) sent by the bridge's own account "
                              + "(a copy made from \(target.name))")
            observer?(.copyFromOtherSide(id, message.remoteID))
            return
        case .skipDeleted:
            try remember(message, id: id, from: source, deleted: true)
            observer?(.skippedDeleted(id, message.remoteID))
            return
        case .waitForReplyTarget(let reply):
            try deferReply(message, to: reply, from: source, to: target)
            return
        case .copy(let linked, let unlinked):
            (replyTo, unlinkedReply) = (linked, unlinked)
        }
        let attachments = try await rehost(message.attachments, from: source, to: target)
        let outgoing = outgoingCopy(of: message, id: id, from: source, to: target, replyTo: replyTo,
                                    unlinkedReply: unlinkedReply, attachments: attachments)
        let prepared = try await target.adapter.prepare(outgoing, noSend: true)
        let pending = ledgerEntry(message, id: id, from: source, deleted: false)
        let pair = self.pair
        try store.write { tx in try Self.persist(prepared, pending, on: target, pair: pair, in: tx) }
        let receipt = try await publishCopy(prepared, of: message, id: id, from: source, to: target)
        _ = try finishCopy(id, prepared: prepared, receipt: receipt, on: target)
        counted(message, id: id, from: source)
        try await flushWaiting(for: id, on: target)
        try await copyReplies(waitingFor: [message.remoteID], from: source, to: target)
    }

    /// Publishes a staged copy; when the target refuses it for good, takes the staging back (`unstage`) before
    /// rethrowing, so nothing pending is left for a restart to publish again.
    private func publishCopy(_ prepared: PreparedMessage, of message: RemoteMessage, id: MessageID, from source: BridgeSide,
                             to target: BridgeSide) async throws -> PublishReceipt {
        do {
            return try await target.adapter.publish(prepared)
        } catch where Self.isPermanent(error) {
            try unstage(id, message, from: source)
            throw error
        }
    }

    /// Publishes a copy left pending by an interrupted run, records it, then applies what changed at the source
    /// since and what waited for it.
    private func republish(_ prepared: PreparedMessage, of message: RemoteMessage, id: MessageID, from source: BridgeSide,
                           to target: BridgeSide) async throws {
        let receipt = try await publishCopy(prepared, of: message, id: id, from: source, to: target)
        let remote = try finishCopy(id, prepared: prepared, receipt: receipt, on: target)
        counted(message, id: id, from: source)
        if let remote { try await applyUpdates(message, id: id, remote: remote, from: source, to: target) }
        try await flushWaiting(for: id, on: target)
        try await copyReplies(waitingFor: [message.remoteID], from: source, to: target)
    }

    /// The copy state of `id` towards `target`: the ledger entry says pending or done, the ID map gives the target ID.
    private func copyState(_ id: MessageID, on target: BridgeSide) throws -> BridgeCopyState {
        let backend = target.backend, pair = self.pair
        return try store.read { tx in try Self.copyState(id, towards: backend, pair: pair, in: tx) }
    }

    /// `copyState` inside a transaction.
    private static func copyState(_ id: MessageID, towards backend: BackendID, pair: String,
                                  in tx: any StoreTransaction) throws -> BridgeCopyState {
        guard let copy = try tx.bridgeCopy(id) else { return .new }
        guard copy.pair == pair else { return .otherPair }
        // Pending towards this target: republish the stored copy (or prepare it again from the entry). Pending
        // towards the other side means this change is that copy's echo, which the map below recognises like any other.
        if copy.pendingTowards == backend { return copy.prepared.map(BridgeCopyState.pending) ?? .pendingUnstored(copy) }
        guard let remote = try tx.remoteID(of: id, backend: backend, part: 0) else { return .new }
        return .bridged(remote)
    }

    /// Whether `message` may go in a batch: not a copy made from the other side, not deleted, no reply, no
    /// attachment.
    private func isPlain(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide) -> Bool {
        !isOwnCopy(message, from: source, to: target) && message.deletedAt == nil && message.replyTo == nil
            && message.attachments.isEmpty
    }

    /// Whether `message` is one the bridge leaves alone as written by its own account on `source`: every such
    /// message for a live bridge (its copies coming back), and under `copiesOwnMessages` only a copy made from
    /// `target` (its `bridge.origin` names the target's backend; one mapped there is recognised by the map first).
    private func isOwnCopy(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide) -> Bool {
        guard message.sender == source.adapter.localUser else { return false }
        guard configuration.copiesOwnMessages else { return true }
        return message.metadata["bridge.origin"]?.hasPrefix("\(target.backend):") == true
    }

    /// `resolve` and `copyState` of every message of a page that may go in a batch, in one read transaction
    /// (one per message otherwise), by source remote ID.
    private func copyStates(of changes: [RemoteChange], skipping settled: Set<Int>, from source: BridgeSide,
                            to target: BridgeSide) throws -> [RemoteID: (id: MessageID, state: BridgeCopyState)] {
        let candidates: [RemoteMessage] = changes.indices.compactMap { index in
            guard !settled.contains(index), case .message(let message) = changes[index], isPlain(message, from: source, to: target)
            else { return nil }
            return message
        }
        guard !candidates.isEmpty else { return [:] }
        let (targetBackend, pair) = (target.backend, pair)
        let resolved = try store.read { tx in
            var states: [(message: RemoteMessage, resolution: MessageIdentity.Resolution, state: BridgeCopyState)] = []
            for message in candidates {
                let resolution = try Self.identify(message, on: source, pair: pair, in: tx)
                states.append((message, resolution, try Self.copyState(resolution.id, towards: targetBackend, pair: pair, in: tx)))
            }
            return states
        }
        var states: [RemoteID: (id: MessageID, state: BridgeCopyState)] = [:]
        for entry in resolved {
            states[entry.message.remoteID] = (noted(entry.resolution, of: entry.message, on: source), entry.state)
        }
        return states
    }

    /// Records, before the publish, everything a restart needs to finish it: the target ID when the scheme knows
    /// it, the ledger entry pending towards the target, and the prepared copy itself (so a restart republishes
    /// these bytes, not a fresh preparation of content that may have been edited since).
    ///
    /// With `keepingCopy` false (a batch towards a target that `republishesByKey`) the prepared copy is not stored:
    /// a restart prepares it again from the entry's text.
    private static func persist(_ prepared: PreparedMessage, _ entry: BridgeCopy, on target: BridgeSide, pair: String,
                                keepingCopy: Bool = true, in tx: any StoreTransaction) throws {
        if let remote = prepared.remoteID { try record(prepared.id, remote, on: target, in: tx) }
        var pending = entry
        pending.pendingTowards = target.backend
        pending.prepared = keepingCopy ? prepared : nil
        try tx.upsertBridgeCopy(pending)
    }

    /// Takes back a copy whose publish was refused for good: its ledger entry (with the stored copy) and target
    /// mapping go (a target row under its key, if any, is not the bridge's), the source mapping stays, so the key
    /// keeps naming the source message and nobody else's.
    private func unstage(_ id: MessageID, _ message: RemoteMessage, from source: BridgeSide) throws {
        let pair = self.pair
        try store.write { tx in
            let kept = try tx.mappings(of: id).filter { $0.backend == source.backend }
            try tx.removeMessage(id)  // the mappings of `id` (a bridge store holds no message rows)
            for mapping in kept { try tx.insertMapping(mapping) }
            try tx.removeBridgeCopy(id, pair: pair)
        }
    }

    /// After a publish: records the target ID (when the answer or the scheme tells it; an echo-only backend's
    /// copy stays unmapped, so the next pass republishes it under its key, harmlessly), marks the ledger row done
    /// and drops the stored copy; returns the ID.
    @discardableResult
    private func finishCopy(_ id: MessageID, prepared: PreparedMessage, receipt: PublishReceipt,
                            on target: BridgeSide) throws -> RemoteID? {
        let remote = receipt.remoteID ?? prepared.remoteID
        let pair = self.pair
        try store.write { tx in
            if let remote { try Self.record(id, remote, on: target, in: tx) }
            try tx.markBridgeCopiesPublished([id], pair: pair)
        }
        return remote
    }

    /// Counts a copied message and tells the observer.
    private func counted(_ message: RemoteMessage, id: MessageID, from source: BridgeSide) {
        if source.backend == a.backend { stats.messagesAToB += 1 } else { stats.messagesBToA += 1 }
        if let unsupported = message.metadata[RemoteMessage.unsupportedContentKey] {
            observer?(.copiedAsFallback(id, message.remoteID, contentType: unsupported))
        } else {
            observer?(.copied(id))
        }
    }

    /// The copy of `message` to publish on `target` under `id`: the source's relayable metadata (`relayable`), then
    /// the bridge's own naming the original sender, time and origin, and the source ID of a reply's target that has
    /// no copy (`unlinkedReply`); content the source could not translate is logged and crosses as its fallback text.
    private func outgoingCopy(of message: RemoteMessage, id: MessageID, from source: BridgeSide, to target: BridgeSide,
                              replyTo: RemoteID?, unlinkedReply: RemoteID? = nil, attachments: [Attachment]) -> OutgoingMessage {
        if let unsupported = message.metadata[RemoteMessage.unsupportedContentKey] {
            configuration.log("bridging \(source.name) message \(message.remoteID) of unsupported content type \(unsupported) "
                              + "as its fallback text")
        }
        var metadata = Self.relayable(message.metadata)
        if let unlinkedReply { metadata["bridge.replyTo"] = unlinkedReply.rawValue }
        metadata["bridge.sender"] = message.sender.rawValue
        metadata["bridge.sentAt"] = String(TimelinePosition.micros(message.sentAt))
        metadata["bridge.origin"] = "\(source.backend):\(message.remoteID)"
        return OutgoingMessage(id: id, conversation: target.conversation, sender: target.adapter.localUser,
                               text: message.text.isEmpty && attachments.isEmpty ? "(empty message)" : message.text,
                               replyTo: replyTo, attachments: attachments, metadata: metadata, createdAt: message.sentAt)
    }

    /// The source metadata a copy may carry: everything but the reserved `switchboard.*` and `bridge.*` keys,
    /// which only Switchboard itself sets (a sender who writes them could otherwise claim another message's key
    /// or forge a copy's origin on the other side).
    static func relayable(_ metadata: [String: String]) -> [String: String] {
        guard metadata.keys.contains(where: isReserved) else { return metadata }
        return metadata.filter { !isReserved($0.key) }
    }

    /// Whether a metadata key is reserved for Switchboard.
    private static func isReserved(_ key: String) -> Bool {
        key.hasPrefix("switchboard.") || key.hasPrefix("bridge.")
    }

    // MARK: - Batched copies

    /// A new source message a batch will copy, with everything decided before the network.
    /// A class: a batch's copies pass through several arrays and loops, each then a reference, not a copy of every
    /// field.
    private final class PlannedCopy: Sendable {
        /// The source message.
        let message: RemoteMessage
        /// Its `MessageID` (the key on both sides).
        let id: MessageID
        /// The copy to prepare on the target.
        let outgoing: OutgoingMessage

        /// A planned copy of `message` under `id`.
        init(message: RemoteMessage, id: MessageID, outgoing: OutgoingMessage) {
            self.message = message
            self.id = id
            self.outgoing = outgoing
        }
    }

    /// The batched copy of `message` when it is a plain new message (not bridged, not the bridge's own, not
    /// deleted, no reply, no attachment, not already in the batch); nil sends it down the one-by-one path.
    /// Reads the store only: the mappings are written by `copy`.
    private func plan(_ message: RemoteMessage, from source: BridgeSide, to target: BridgeSide,
                      excluding planned: Set<MessageID>, known: (id: MessageID, state: BridgeCopyState)?) throws -> PlannedCopy? {
        guard isPlain(message, from: source, to: target) else { return nil }
        let id = try known?.id ?? identify(message, on: source)
        guard !planned.contains(id) else { return nil }
        guard case .new = try known?.state ?? copyState(id, on: target) else { return nil }  // done, or pending: one by one
        let outgoing = outgoingCopy(of: message, id: id, from: source, to: target, replyTo: nil, attachments: [])
        return PlannedCopy(message: message, id: id, outgoing: outgoing)
    }

    /// Copies a batch in `bridgeMessage`'s order of steps: prepare each (noSend) under its key → record every
    /// mapping in one transaction → `publishAll` → record the receipts' IDs and remember each message in one
    /// transaction → counts, observer and waiting operations. A kill anywhere leaves each message either not
    /// remembered (the next run republishes it harmlessly under the same key) or fully bridged.
    private func copy(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                      via adapter: any BulkPublishingAdapter) async throws {
        let staged = try await stage(run, from: source, to: target, via: adapter)
        try await finish(staged, receipts: try await adapter.publishAll(staged.prepared))
    }

    /// A batch prepared and persisted (mappings, pending ledger rows and prepared copies), ready to publish.
    private struct StagedCopy {
        /// The planned copies.
        var run: [PlannedCopy]
        /// Their prepared messages, in the same order.
        var prepared: [PreparedMessage]
        /// Where they come from.
        var source: BridgeSide
        /// Where they go.
        var target: BridgeSide
    }

    /// `copy`'s steps before the publish: prepare each under its key, then persist everything in one transaction.
    private func stage(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                       via adapter: any BulkPublishingAdapter) async throws -> StagedCopy {
        var prepared: [PreparedMessage] = []
        prepared.reserveCapacity(run.count)
        for planned in run { prepared.append(try await adapter.prepare(planned.outgoing, noSend: true)) }
        let entries = run.map { ledgerEntry($0.message, id: $0.id, from: source, deleted: false) }
        let keepingCopies = !adapter.republishesByKey
        let pair = self.pair
        try store.write { tx in
            for index in run.indices {
                try Self.record(run[index].id, run[index].message.remoteID, on: source, in: tx)
                try Self.persist(prepared[index], entries[index], on: target, pair: pair, keepingCopy: keepingCopies, in: tx)
            }
        }
        return StagedCopy(run: run, prepared: prepared, source: source, target: target)
    }

    /// `copy`'s steps after the publish: record the receipts, count, and apply operations that waited.
    private func finish(_ staged: StagedCopy, receipts: [PublishReceipt]) async throws {
        let (run, prepared, source, target) = (staged.run, staged.prepared, staged.source, staged.target)
        guard receipts.count == prepared.count else {
            throw SwitchboardError(.transport, "\(target.name) returned \(receipts.count) receipts for \(prepared.count) messages",
                                   retryable: true)
        }
        let pair = self.pair
        try store.write { tx in
            for index in run.indices {
                // A target ID known at prepare was recorded with the batch; only a different or new one is recorded now.
                let remote = receipts[index].remoteID ?? prepared[index].remoteID
                if let remote, remote != prepared[index].remoteID { try Self.record(run[index].id, remote, on: target, in: tx) }
            }
            // The batch's ledger entries leave `pending` together: one statement, not one per message.
            try tx.markBridgeCopiesPublished(run.map(\.id), pair: pair)
        }
        for planned in run {
            counted(planned.message, id: planned.id, from: source)
            try releaseHeld(supersededBy: .message(planned.message), from: source)
        }
        if !noWaitingReplies.contains(source.backend) {
            // Replies waiting for these are copied at the pass's next safe point (nothing in flight then).
            copiedSinceReplyCheck[source.backend, default: []] += run.map(\.message.remoteID)
        }
        let waitKeys = run.map { BridgeWaitKey.copy($0.id, towards: target.backend) }
        let waiting = try store.read { try $0.bridgeWaitKeys(pair: pair, among: waitKeys) }
        let waited = waiting.isEmpty ? [] : run.indices.filter { waiting.contains(waitKeys[$0]) }
        for index in waited { try await flushWaiting(for: run[index].id, on: target) }
    }

    /// Applies an edit or delete of an already bridged message on the other side (once).
    private func applyUpdates(_ message: RemoteMessage, id: MessageID, remote: RemoteID, from source: BridgeSide,
                              to target: BridgeSide) async throws {
        let known = try store.read { try $0.bridgeCopy(id) }
        switch BridgeDecision.update(of: message, from: source.backend, isOwnCopy: isOwnCopy(message, from: source, to: target),
                                     known: known) {
        case .nothing:
            return
        case .refuseNotOriginal(let original):
            stats.keyCollisions += 1
            configuration.log("not bridging changes of \(source.name) message \(message.remoteID) from \(message.sender): it "
                              + "stands under \(id), whose original is \(original)'s")
        case .delete:
            if let deleting = target.adapter as? any DeletingAdapter {
                try await deleting.delete(remote, in: target.conversation)
                stats.updates += 1
            }
            try remember(message, id: id, from: source, deleted: true)
        case .edit(let text):
            if let editing = target.adapter as? any EditingAdapter {
                try await editing.edit(remote, in: target.conversation, text: text)
                stats.updates += 1
            }
            try remember(message, id: id, from: source, deleted: false)
        case .remember(let deleted):
            try remember(message, id: id, from: source, deleted: deleted)
        }
    }

    /// Keeps the last bridged text and deletion of a message, so an edit is applied once.
    private func remember(_ message: RemoteMessage, id: MessageID, from source: BridgeSide, deleted: Bool) throws {
        let entry = ledgerEntry(message, id: id, from: source, deleted: deleted)
        try store.write { try $0.upsertBridgeCopy(entry) }
    }

    /// The pair's ledger entry for a message as bridged now (`persist` marks it pending while its copy is prepared
    /// but not yet published). It names the original's sender and side, so only its author can change the copy.
    private func ledgerEntry(_ message: RemoteMessage, id: MessageID, from source: BridgeSide, deleted: Bool) -> BridgeCopy {
        BridgeCopy(pair: pair, messageID: id, origin: source.backend, sender: message.sender, text: message.text,
                   sentAt: message.sentAt, editedAt: message.editedAt,
                   deletedAt: deleted ? (message.deletedAt ?? Date()) : nil)
    }

    /// Downloads each attachment from the source and uploads it to the target, checking the digest.
    private func rehost(_ attachments: [Attachment], from source: BridgeSide, to target: BridgeSide) async throws -> [Attachment] {
        guard !attachments.isEmpty else { return [] }
        guard let downloader = source.adapter as? any UploadingAdapter, let uploader = target.adapter as? any UploadingAdapter else {
            return []
        }
        var hosted: [Attachment] = []
        for attachment in attachments where attachment.remoteLocation != nil {
            let data = try await downloader.download(attachment)
            let digest = Digest.sha256Hex(data)
            if !attachment.sha256.isEmpty, digest != attachment.sha256 {
                throw SwitchboardError(.storage, "attachment \(attachment.filename): digest mismatch while re-hosting")
            }
            var fresh = Attachment(id: attachment.id, filename: attachment.filename, mimeType: attachment.mimeType,
                                   byteCount: Int64(data.count), sha256: digest)
            fresh = try await uploader.upload(fresh, data: data, in: target.conversation, progress: { _ in })
            hosted.append(fresh)
        }
        return hosted
    }

    // MARK: - The quarantine

    /// Whether `error` is one no retry of the same change can fix (the change itself is refused), so the change is
    /// held in the quarantine instead of stopping the pair; transport, storage, authentication and missing
    /// conversation errors are the pair's, not the change's, and are retried.
    static func isPermanent(_ error: any Error) -> Bool {
        guard let error = error as? SwitchboardError, !error.isRetryable else { return false }
        switch error.code {
        case .conflict, .invalidArgument, .contentTooLarge, .emptyMessage, .refused, .notOwner, .notSupported,
             .unknownMessage, .editWindowExpired, .deleteWindowExpired, .alreadyPublished, .notFound:
            return true
        default:
            return false
        }
    }

    /// Bridges one change; one that fails for a reason no retry can fix is held in the quarantine with that reason,
    /// logged and counted, so it cannot stop the pair.
    private func bridgeOrHold(_ change: RemoteChange, from source: BridgeSide, to target: BridgeSide) async throws {
        do {
            try await bridge(change, from: source, to: target)
            try releaseHeld(supersededBy: change, from: source)
        } catch where Self.isPermanent(error) {
            try hold(change, from: source, to: target, because: error)
        }
    }

    /// Sets `change` aside in the quarantine (replacing an older version of it), and logs it.
    private func hold(_ change: RemoteChange, from source: BridgeSide, to target: BridgeSide, because error: any Error) throws {
        let subject = BridgeQuarantine.Subject(source: source.backend, change: change)
        try quarantine.hold(change, from: source.backend, reason: String(describing: error))
        held.removeAll { $0 == subject }
        held.append(subject)
        if case .message(let message) = change {
            let mapped = try? store.read { try $0.messageID(backend: source.backend, remoteID: message.remoteID) }
            let id = mapped ?? MessageID.derived(backend: source.backend, remote: message.remoteID)
            observer?(.refused(id, message.remoteID, reason: String(describing: error)))
        }
        configuration.log("quarantined \(source.name) \(change.kindName) \(change.subjectRemoteID) (bridging it to "
                          + "\(target.name) failed: \(error)); the pair goes on")
    }

    /// Releases the quarantine's older version of `change`, which was just bridged, if it holds one (looked up in
    /// `held`, so a pair whose quarantine holds nothing of it writes nothing).
    private func releaseHeld(supersededBy change: RemoteChange, from source: BridgeSide) throws {
        let subject = BridgeQuarantine.Subject(source: source.backend, change: change)
        guard held.contains(subject) else { return }
        held.removeAll { $0 == subject }
        if try quarantine.release(supersededBy: change, from: source.backend) {
            configuration.log("released the quarantined \(source.name) \(change.kindName) \(change.subjectRemoteID): a "
                              + "newer version was bridged")
        }
    }

    /// Stages a batch to leave in flight; when one of its messages cannot be staged (its copy's target ID is
    /// mapped to another message), bridges each alone instead, so only that one is held, and returns nil.
    private func stageOrSplit(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                              via adapter: any BulkPublishingAdapter) async throws -> StagedCopy? {
        try Task.checkCancellation()
        do {
            return try await stage(run, from: source, to: target, via: adapter)
        } catch where Self.isPermanent(error) {
            try await completeInFlight()
            for planned in run { try await bridgeOrHold(.message(planned.message), from: source, to: target) }
            return nil
        }
    }

    /// A batch copy that falls back to one change at a time when one of its messages cannot go, so only that one
    /// is held.
    private func copyOrSplit(_ run: [PlannedCopy], from source: BridgeSide, to target: BridgeSide,
                             via adapter: any BulkPublishingAdapter) async throws {
        do {
            try await copy(run, from: source, to: target, via: adapter)
        } catch where Self.isPermanent(error) {
            for planned in run { try await bridgeOrHold(.message(planned.message), from: source, to: target) }
        }
    }

    /// Loads what the quarantine holds (`held`), then bridges the changes an operator asked to retry; each that
    /// fails again is held again.
    private func bridgeRetryRequests(_ direction: Direction) async throws {
        held = try quarantine.entries().map { BridgeQuarantine.Subject(source: $0.source, change: $0.change) }
        for entry in try quarantine.takeRetryRequests() {
            let (source, target) = entry.source == a.backend ? (a, b) : (b, a)
            guard entry.source == a.backend || entry.source == b.backend, direction == .both || source.backend == a.backend
            else { continue }
            try await completeInFlight()
            // Success releases the entry (`bridgeOrHold`); another refusal holds the change again.
            try await bridgeOrHold(entry.change, from: source, to: target)
        }
    }

    // MARK: - Reactions, receipts and the waiting queue

    private struct WaitingOperation: Codable {
        var kind: String
        var symbol: String?
        var isActive: Bool?
        var receipt: String?
    }

    private func bridgeReaction(_ reaction: RemoteReaction, from source: BridgeSide, to target: BridgeSide) async throws {
        let id = try resolveTarget(reaction.target, on: source)
        let operation = WaitingOperation(kind: "reaction", symbol: reaction.symbol, isActive: reaction.isActive)
        try await apply(operation, to: id, on: target)
    }

    private func bridgeReceipt(_ receipt: RemoteReceipt, from source: BridgeSide, to target: BridgeSide) async throws {
        let id = try resolveTarget(receipt.target, on: source)
        try await apply(WaitingOperation(kind: "receipt", receipt: receipt.state.rawValue), to: id, on: target)
    }

    /// Applies an operation on the target when its message is mapped there, else queues it.
    private func apply(_ operation: WaitingOperation, to id: MessageID, on target: BridgeSide) async throws {
        guard let remote = try store.read({ try $0.remoteID(of: id, backend: target.backend, part: 0) }) else {
            let payload = try JSONEncoder().encode(operation)
            let key = BridgeWaitKey.copy(id, towards: target.backend)
            _ = try store.write { [pair] tx in
                try tx.enqueueBridgeOperation(PendingOperation(waitKey: key, kind: operation.kind, payload: payload,
                                                               createdAt: Date()), pair: pair)
            }
            return
        }
        switch operation.kind {
        case "reaction":
            guard let reacting = target.adapter as? any ReactingAdapter, let symbol = operation.symbol else { return }
            try await reacting.setReaction(symbol, isActive: operation.isActive ?? true, on: remote, in: target.conversation)
        case "receipt":
            guard let receipts = target.adapter as? any ReceiptAdapter,
                  let state = operation.receipt.flatMap(ReceiptState.init(rawValue:)) else { return }
            try await receipts.sendReceipt(state, for: remote, in: target.conversation)
        default:
            return
        }
        stats.updates += 1
    }

    /// Runs the operations that waited for `id` to be bridged to `target`.
    private func flushWaiting(for id: MessageID, on target: BridgeSide) async throws {
        let key = BridgeWaitKey.copy(id, towards: target.backend)
        let waiting = try store.read { [pair] in try $0.bridgeOperations(pair: pair, waitingOn: key) }
        for entry in waiting {
            if let operation = try? JSONDecoder().decode(WaitingOperation.self, from: entry.payload) {
                do {
                    try await apply(operation, to: id, on: target)
                } catch where Self.isPermanent(error) {
                    configuration.log("dropped a waiting \(operation.kind) on \(id): \(target.name) refused it (\(error))")
                }
            }
            try store.write { try $0.removeBridgeOperation(entry.id) }
        }
    }

    // MARK: - Replies whose target has no copy yet

    /// Once per bridge and source: notes whether replies from an earlier run still wait (none: nothing to look up).
    private func lookUpWaitingReplies(from source: BridgeSide, to target: BridgeSide) throws {
        guard repliesLookedUp.insert(source.backend).inserted else { return }
        if try waitingReplies(from: source, to: target).isEmpty { noWaitingReplies.insert(source.backend) }
    }

    /// Every reply from `source` waiting for its target's copy on `target`, from the store.
    private func waitingReplies(from source: BridgeSide, to target: BridgeSide) throws -> [PendingOperation] {
        let prefix = BridgeWaitKey.replyPrefix(from: source.backend, to: target.backend)
        return try store.read { [pair] in try $0.bridgeOperations(pair: pair, waitKeyPrefix: prefix) }
    }

    /// Persists `message`, a reply whose target `reply` has no copy on `target` yet, to be copied once it has
    /// (`copyReplies(waitingFor:)`) or once the source has nothing more to read (`copyWaitingReplies`). A newer
    /// version of the same reply replaces the one waiting.
    private func deferReply(_ message: RemoteMessage, to reply: RemoteID, from source: BridgeSide,
                            to target: BridgeSide) throws {
        let key = BridgeWaitKey.reply(to: reply, from: source.backend, to: target.backend)
        let payload = try JSONEncoder().encode(message)
        try store.write { [pair] tx in
            for waiting in try tx.bridgeOperations(pair: pair, waitingOn: key)
            where (try? JSONDecoder().decode(RemoteMessage.self, from: waiting.payload))?.remoteID == message.remoteID {
                try tx.removeBridgeOperation(waiting.id)
            }
            try tx.enqueueBridgeOperation(PendingOperation(waitKey: key, kind: "reply", payload: payload, createdAt: Date()),
                                          pair: pair)
        }
        noWaitingReplies.remove(source.backend)
    }

    /// Copies the replies that waited for the source messages copied since the last look (batches note theirs).
    private func copyRepliesToCopiedTargets(from source: BridgeSide, to target: BridgeSide) async throws {
        guard let copied = copiedSinceReplyCheck.removeValue(forKey: source.backend) else { return }
        try await copyReplies(waitingFor: copied, from: source, to: target)
    }

    /// Copies, linked, the replies that waited for `copied` (source remote IDs whose copies now exist).
    private func copyReplies(waitingFor copied: [RemoteID], from source: BridgeSide, to target: BridgeSide) async throws {
        guard !noWaitingReplies.contains(source.backend), !copied.isEmpty else { return }
        let keys = copied.map { BridgeWaitKey.reply(to: $0, from: source.backend, to: target.backend) }
        let waiting = try store.read { [pair] tx in try keys.flatMap { try tx.bridgeOperations(pair: pair, waitingOn: $0) } }
        try await copyWaiting(waiting, from: source, to: target)
    }

    /// Copies every reply from `source` still waiting (the source has nothing more to read now): linked when its
    /// target's copy appeared meanwhile, else unlinked with `bridge.replyTo`, like a reply to a message never copied.
    private func copyWaitingReplies(from source: BridgeSide, to target: BridgeSide) async throws {
        guard !noWaitingReplies.contains(source.backend) else { return }
        // All of them, so the copied targets noted since the last look need no lookup of their own.
        copiedSinceReplyCheck[source.backend] = nil
        try await copyWaiting(try waitingReplies(from: source, to: target), from: source, to: target)
        noWaitingReplies.insert(source.backend)
    }

    /// Copies waiting replies in the order they were deferred and drops each from the queue once copied (a kill in
    /// between copies it again next time, harmlessly: it is bridged by then). A reply deleted at the source
    /// meanwhile is not copied.
    private func copyWaiting(_ waiting: [PendingOperation], from source: BridgeSide, to target: BridgeSide) async throws {
        guard !waiting.isEmpty else { return }
        try await completeInFlight()
        for entry in waiting.sorted(by: { $0.id < $1.id }) {
            if let message = try? JSONDecoder().decode(RemoteMessage.self, from: entry.payload) {
                let id = try identify(message, on: source)
                let deleted = try store.read { try $0.bridgeCopy(id) }?.deletedAt != nil
                if !deleted {
                    do {
                        try await bridgeMessage(message, from: source, to: target, repliesMayWait: false)
                    } catch where Self.isPermanent(error) {
                        try hold(.message(message), from: source, to: target, because: error)
                    }
                }
            }
            try store.write { try $0.removeBridgeOperation(entry.id) }
        }
    }
}
