import Foundation
import SwitchboardCore
import Synchronization
import SupabaseProtocol
import SwitchboardNet
import SwitchboardPostgres

/// Realtime at `/realtime/v1/websocket`: wires sockets and the PostgreSQL change feed to `RealtimeHubState`.
///
/// All protocol decisions live in the pure `RealtimeHubState`; this class only moves frames. Each socket has an
/// outbound queue drained by its own writer task, so a slow socket never blocks the change listener or other
/// sockets. Changes to INSERT/UPDATE rows are delivered to a non-service subscriber only when that subscriber can
/// select the row (by primary key) under row-level security, checked per batch of changes and identity.
final class RealtimeHub: Sendable {
    let context: SupabaseServerContext
    private let state = Locked<RealtimeHubState?>(nil)
    private let outboxes = Locked<[Int: RealtimeOutbox]>([:])
    private let nextSocketID = Atomic<Int>(0)
    private let feed = Locked<RealtimeChangeFeed?>(nil)
    private let ticker = Locked<Task<Void, Never>?>(nil)

    /// A hub that serves nothing until `start()`.
    init(context: SupabaseServerContext) { self.context = context }

    /// Installs the change log and triggers, then starts the listener thread and the heartbeat clock.
    func start() throws {
        let context = self.context
        let feed = RealtimeChangeFeed(databaseURL: context.databaseURL, logger: context.logger,
                                      isWatched: { [weak self] table in
                                          self?.state.withLock { $0?.hasSubscription(covering: table) } ?? false
                                      },
                                      dispatch: { [weak self] changes in self?.dispatch(changes) })
        let tables = try feed.install()
        let authenticator = context.authenticator
        state.withLock { state in
            state = RealtimeHubState(knownTables: tables) { token in
                do throws(AuthenticationError) {
                    return .valid(try authenticator.identity(token: token).claims)
                } catch {
                    return .invalid(reason: error.isExpired ? "InvalidJWTToken: Token has expired"
                                                            : "InvalidJWTToken: \(error.message)")
                }
            }
        }
        self.feed.withLock { $0 = feed }
        feed.start()
        let clock = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(5))
                guard let self else { return }
                self.apply { $0.tick(now: Date()) }
            }
        }
        ticker.withLock { $0 = clock }
    }

    /// The id of the newest change-log row the change feed has dispatched (nil before `start` or after `stop`).
    var feedPosition: Int64? { feed.withLock { $0?.position } }

    /// Decides before the upgrade whether a realtime socket may open: its `apikey` (query item, or header) must be
    /// a key this project signed and that has not expired, as the Supabase gateway requires; otherwise 401 with
    /// the gateway's JSON message, and no socket is opened.
    func admit(_ request: HTTPServerRequest) -> HTTPServerResponse? {
        let key = request.queryValue("apikey") ?? request.headers["apikey"]
        guard let key, !key.isEmpty else {
            return .json(Data(#"{"message":"No API key found in request"}"#.utf8), status: 401)
        }
        do throws(AuthenticationError) {
            _ = try context.authenticator.identity(token: key)
            return nil
        } catch {
            return .json(Data(#"{"message":"Invalid API key"}"#.utf8), status: 401)
        }
    }

    /// Serves one socket until it closes.
    func serve(_ connection: WebSocketConnection) async {
        guard state.withLock({ $0 != nil }) else {
            await connection.close(code: .goingAway, reason: "realtime is not running")
            return
        }
        let id = nextSocketID.add(1, ordering: .relaxed).newValue
        let outbox = RealtimeOutbox()
        outboxes.withLock { $0[id] = outbox }
        let writer = Task { await Self.drain(outbox, into: connection) }
        let version = PhoenixTextCodec.Version(vsn: connection.request.queryValue("vsn"))
        let apiKey = connection.request.queryValue("apikey")
        apply { $0.connect(socket: id, version: version, apiKey: apiKey, now: Date()) }
        for await frame in connection.frames {
            switch frame {
            case .text(let text):
                apply { $0.receive(socket: id, text: text, now: Date()) }
            case .binary(let data):
                apply { $0.receive(socket: id, binary: [UInt8](data), now: Date()) }
            case .close:
                break
            }
        }
        apply { $0.disconnect(socket: id) }
        outboxes.withLock { $0[id] = nil }
        outbox.finish()
        await writer.value
    }

    /// Stops the clock and the listener and closes every socket still open.
    func stop() async {
        ticker.withLock { task in
            task?.cancel()
            task = nil
        }
        let feed = self.feed.withLock { feed in defer { feed = nil }; return feed }
        await feed?.stop()
        let open = outboxes.withLock { outboxes in defer { outboxes = [:] }; return Array(outboxes.values) }
        for outbox in open {
            outbox.enqueue(.close(code: 1001, reason: "server shutting down"))
            outbox.finish()
        }
        state.withLock { $0 = nil }
    }

    /// Runs `body` on the state and queues the deliveries it makes (a no-op when stopped).
    ///
    /// The deliveries are queued before the state is released, so every socket receives frames in the order the
    /// state made them: queued afterwards, a `presence_diff` from another socket's track could overtake a joining
    /// socket's own join reply and `presence_state`, which then wiped the joiner's view of that presence.
    private func apply(_ body: (inout RealtimeHubState) -> [RealtimeDelivery]) {
        state.withLock { state in
            guard var current = state else { return }
            state = nil
            defer { state = current }
            deliver(body(&current))
        }
    }

    /// Sends a broadcast from the REST API to the sockets joined to `topic` (see `RealtimeHubState.serverBroadcast`).
    func broadcast(topic: String, isPrivate: Bool, event: String, json: JSONValue?, binary: [UInt8]?) {
        apply { $0.serverBroadcast(topic: topic, isPrivate: isPrivate, event: event, json: json, binary: binary) }
    }

    /// Queues each delivery on its socket's outbox.
    private func deliver(_ deliveries: [RealtimeDelivery]) {
        guard !deliveries.isEmpty else { return }
        let targets = outboxes.withLock { outboxes in deliveries.map { outboxes[$0.socket] } }
        for (delivery, outbox) in zip(deliveries, targets) {
            outbox?.enqueue(delivery.frame)
        }
    }

    /// Called on the listener thread for each batch of changes (log order): match, check visibility, queue.
    ///
    /// Targets come from one look at the state; each identity's checks run in one transaction (one query per table
    /// and chunk, see `RealtimeVisibility`); deliveries keep the changes' order on every socket.
    private func dispatch(_ changes: [RealtimeChange]) {
        guard !changes.isEmpty else { return }
        let targets = state.withLock { state in changes.map { state?.targets(for: $0) ?? [] } }
        var visible: [String: Set<Int>] = [:]
        for group in RealtimeVisibility.groups(changes, targets: targets) {
            visible[group.claims.json] = visibleChanges(group, of: changes)
        }
        var deliveries: [RealtimeDelivery] = []
        for (index, change) in changes.enumerated() {
            for target in targets[index] {
                if RealtimeVisibility.needsCheck(change, claims: target.claims) {
                    guard visible[target.claims.json]?.contains(index) == true else { continue }
                }
                deliveries.append(RealtimeHubState.changeDelivery(change, to: target))
            }
        }
        deliver(deliveries)
    }

    /// The batch indices of `group.changes` whose rows `group.claims` can select now (row-level security decides).
    ///
    /// All queries run in one transaction as the identity. When one fails, the results of that transaction are
    /// dropped and the rest is retried: a failed batched query is split into one query per change, a failed
    /// single-change query makes that change invisible (logged), exactly as a per-change check would.
    private func visibleChanges(_ group: RealtimeVisibility.Group, of changes: [RealtimeChange]) -> Set<Int> {
        let identity = RequestIdentity(claims: group.claims)
        var pending = RealtimeVisibility.queries(for: group.changes, of: changes)
        var visible = Set<Int>()
        while !pending.isEmpty {
            var current = 0
            do {
                let found = try context.pool.run { connection in
                    try connection.transaction { connection -> [Int] in
                        try SupabaseServerContext.assume(identity, on: connection)
                        var found: [Int] = []
                        for (offset, query) in pending.enumerated() {
                            current = offset
                            found += query.visibleChanges(in: try connection.query(query.sql, query.parameters).rows)
                        }
                        return found
                    }
                }
                visible.formUnion(found)
                pending = []
            } catch {
                let failed = pending[current]
                let tables = Set(failed.changes.map { changes[$0].table.description }).sorted().joined(separator: ", ")
                context.logger.warning("realtime: visibility check of \(failed.changes.count) change(s) on \(tables) failed: \(error)")
                let retry = failed.changes.count > 1 ? failed.changes.map { RealtimeVisibility.single($0, changes[$0]) } : []
                pending = retry + pending[(current + 1)...]
            }
        }
        return visible
    }

    /// Writes queued frames to the socket until the queue ends, the socket fails or a close is requested: every
    /// message queued since the last write goes out in one write (a burst of changes costs one system call, not
    /// one per change), in queue order.
    private static func drain(_ outbox: RealtimeOutbox, into connection: WebSocketConnection) async {
        while let batch = await outbox.next() {
            if outbox.isOverflowed {
                await connection.close(code: .policyViolation, reason: "client too slow")
                return
            }
            var messages: [WebSocketFrame] = []
            messages.reserveCapacity(batch.count)
            for frame in batch {
                switch frame {
                case .text(let text): messages.append(.text(text))
                case .binary(let bytes): messages.append(.binary(Data(bytes)))
                case .close(let code, let reason):
                    try? await connection.send(messages)
                    await connection.close(code: WebSocketCloseCode(rawValue: code), reason: reason)
                    return
                }
            }
            do {
                try await connection.send(messages)
            } catch {
                return
            }
            outbox.sent(batch.count)
        }
    }
}

/// One socket's outbound queue: unbounded, but a socket more than `limit` frames behind is closed.
final class RealtimeOutbox: Sendable {
    /// The most frames allowed to wait before the socket is considered too slow.
    static let limit = 10_000
    /// The most frames handed to the writer at once.
    static let batchLimit = 256

    private let queue = BatchQueue<RealtimeOutboundFrame>()
    private let pending = Atomic<Int>(0)
    private let overflowed = Atomic<Bool>(false)

    /// Whether the queue overflowed (the writer then closes the socket).
    var isOverflowed: Bool { overflowed.load(ordering: .relaxed) }

    /// Queues a frame (never blocks).
    func enqueue(_ frame: RealtimeOutboundFrame) {
        if pending.add(1, ordering: .relaxed).newValue > Self.limit { overflowed.store(true, ordering: .relaxed) }
        queue.append(frame)
    }

    /// The frames queued so far (up to `batchLimit`, oldest first), waiting while there are none; nil once the
    /// queue is finished and empty.
    func next() async -> [RealtimeOutboundFrame]? { await queue.next(limit: Self.batchLimit) }

    /// Records that `count` frames were written.
    func sent(_ count: Int) { pending.subtract(count, ordering: .relaxed) }

    /// Ends the queue; the writer stops after the frames already queued.
    func finish() { queue.finish() }
}
