import Foundation
import SwitchboardCore
import SwitchboardNet

/// One conversation's live subscription: `subscribe-group-messages` read line by line, each envelope stored and
/// reported as a change. Reconnects forever with capped jittered backoff, resuming after the last sequence it
/// stored. Reports the run of sequences it stored without a gap to the adapter (`XMTPStreamCoverage`), so delta
/// reads of it stay local.
actor XMTPLiveStream {
    /// The most envelopes stored in one transaction when a burst arrives.
    static let batchLimit = 256
    /// The adapter whose node client and database the stream uses.
    private let adapter: XMTPAdapter
    private let conversation: ConversationID
    private let continuation: AsyncStream<AdapterEvent>.Continuation
    private var task: Task<Void, Never>?
    private var current: HTTPLineStream?
    /// The last sequence stored (nil before the first connect).
    private var cursor: UInt64?
    /// This stream's key in the adapter's coverage.
    private let id = UUID()
    private var seen = Set<UInt64>()
    private var seenOrder: [UInt64] = []
    private var isStopped = false

    /// The most sequences remembered for deduplication.
    private static let seenLimit = 4096

    /// A stream for `conversation` through `adapter`, yielding into `continuation`.
    init(adapter: XMTPAdapter, conversation: ConversationID, continuation: AsyncStream<AdapterEvent>.Continuation) {
        self.adapter = adapter
        self.conversation = conversation
        self.continuation = continuation
    }

    /// Starts the connect loop.
    func start() {
        guard !isStopped, task == nil else { return }
        task = Task { await self.run() }
    }

    /// Stops reconnecting and closes the subscription.
    func stop() {
        isStopped = true
        adapter.coverage.withLock { $0.ended(id) }
        task?.cancel()
        task = nil
        current?.cancel()
        current = nil
    }

    /// The connect loop: subscribe, read lines until the stream ends or fails, back off, repeat.
    private func run() async {
        var failures = 0
        var wasConnected = false
        while !Task.isCancelled && !isStopped {
            var reason = "stream ended"
            var askedDelay: Duration = .zero
            do {
                let group = try adapter.groupID(conversation)
                if cursor == nil {
                    let newest = try await adapter.node.query(groupID: group, ascending: false, cursor: 0, limit: 1)
                    cursor = newest.first?.sequence ?? 0
                }
                let stream = try await adapter.node.subscribe(groupID: group, cursor: cursor ?? 0)
                if isStopped || Task.isCancelled {
                    stream.cancel()
                    return
                }
                let hex = Digest.hex(group), id = self.id, after = cursor ?? 0
                adapter.coverage.withLock { $0.subscribed(id, group: hex, after: after) }
                current = stream
                wasConnected = true
                failures = 0
                continuation.yield(.connection(.connected))
                reading: for try await line in stream {
                    // A burst of envelopes already received is stored in one transaction.
                    var envelopes: [XMTPNodeEnvelope] = []
                    var failure: String?
                    var last = cursor ?? 0
                    var batch = Set<UInt64>()
                    for line in [line] + stream.bufferedLines(limit: Self.batchLimit - 1) {
                        if line.isEmpty { continue }
                        guard let json = JSONValue.parseOrNil(line) else {
                            unreadable()
                            continue
                        }
                        guard let result = json["result"] else {
                            failure = json["error"]?["message"]?.stringValue ?? json["message"]?.stringValue ?? "stream error"
                            break
                        }
                        guard let envelope = XMTPNodeEnvelope(json: result) else {
                            unreadable()
                            continue
                        }
                        last = max(last, envelope.sequence)
                        if !seen.contains(envelope.sequence), batch.insert(envelope.sequence).inserted { envelopes.append(envelope) }
                    }
                    if !envelopes.isEmpty {
                        do {
                            let changes = try adapter.ingest(envelopes, in: conversation)
                            for envelope in envelopes { remember(envelope.sequence) }
                            for change in changes { continuation.yield(.change(change)) }
                        } catch {
                            // Resubscribed after the last sequence stored, the node replays these.
                            reason = "storing an envelope failed: \(error)"
                            break reading
                        }
                    }
                    cursor = last
                    adapter.coverage.withLock { $0.stored(id, through: last) }
                    if let failure {
                        reason = failure
                        break reading
                    }
                }
            } catch {
                reason = String(describing: error)
                // A rate limit (429) or an unavailable node may say how long to wait: never sooner.
                askedDelay = (error as? SwitchboardError)?.retryAfter ?? .zero
            }
            current?.cancel()
            current = nil
            if isStopped || Task.isCancelled { return }
            if wasConnected {
                continuation.yield(.connection(.disconnected(reason: reason)))
                wasConnected = false
            }
            failures += 1
            let base = min(2.0, 0.05 * pow(2.0, Double(min(failures - 1, 6))))
            let delay = base * Double.random(in: 0.5...1.0)
            try? await Task.sleep(for: max(.seconds(delay), askedDelay))
        }
    }

    /// Records a sequence this stream stored and delivered.
    private func remember(_ sequence: UInt64) {
        guard seen.insert(sequence).inserted else { return }
        seenOrder.append(sequence)
        if seenOrder.count > Self.seenLimit {
            seen.remove(seenOrder.removeFirst())
        }
    }

    /// A line or envelope that could not be read (its sequence unknown): the stream's stored run ends before it, so
    /// delta reads go to the node again until the stream resubscribes and starts a new run.
    private func unreadable() {
        let id = self.id
        adapter.coverage.withLock { $0.ended(id) }
    }
}
