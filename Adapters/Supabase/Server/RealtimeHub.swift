import Foundation
import Synchronization
import SupabaseProtocol
import SwitchboardNet
import SwitchboardPostgres

/// Realtime at `/realtime/v1/websocket`: wires sockets and the PostgreSQL change feed to `RealtimeHubState`.
///
/// All protocol decisions live in the pure `RealtimeHubState`; this class only moves frames. Each socket has an
/// outbound queue drained by its own writer task, so a slow socket never blocks the change listener or other
/// sockets. Changes to INSERT/UPDATE rows are delivered to a non-service subscriber only when that subscriber can
/// select the row (by primary key) under row-level security.
final class RealtimeHub: Sendable {
    let context: SupabaseServerContext
    private let state = Mutex<RealtimeHubState?>(nil)
    private let outboxes = Mutex<[Int: RealtimeOutbox]>([:])
    private let nextSocketID = Atomic<Int>(0)
    private let feed = Mutex<RealtimeChangeFeed?>(nil)
    private let ticker = Mutex<Task<Void, Never>?>(nil)

    /// A hub that serves nothing until `start()`.
    init(context: SupabaseServerContext) { self.context = context }

    /// Installs the change log and triggers, then starts the listener thread and the heartbeat clock.
    func start() throws {
        let context = self.context
        let feed = RealtimeChangeFeed(databaseURL: context.databaseURL, log: { context.log($0) },
                                      dispatch: { [weak self] change in self?.dispatch(change) })
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
                self.deliver(self.mutate { $0.tick(now: Date()) })
            }
        }
        ticker.withLock { $0 = clock }
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
        deliver(mutate { $0.connect(socket: id, version: version, apiKey: apiKey, now: Date()) })
        for await frame in connection.frames {
            switch frame {
            case .text(let text):
                deliver(mutate { $0.receive(socket: id, text: text, now: Date()) })
            case .binary(let data):
                deliver(mutate { $0.receive(socket: id, binary: [UInt8](data), now: Date()) })
            case .close:
                break
            }
        }
        deliver(mutate { $0.disconnect(socket: id) })
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

    /// Runs `body` on the state (a no-op returning nothing when stopped).
    private func mutate(_ body: (inout RealtimeHubState) -> [RealtimeDelivery]) -> [RealtimeDelivery] {
        state.withLock { state in
            guard var current = state else { return [] }
            state = nil
            defer { state = current }
            return body(&current)
        }
    }

    /// Queues each delivery on its socket's outbox.
    private func deliver(_ deliveries: [RealtimeDelivery]) {
        guard !deliveries.isEmpty else { return }
        let targets = outboxes.withLock { outboxes in deliveries.map { outboxes[$0.socket] } }
        for (delivery, outbox) in zip(deliveries, targets) {
            outbox?.enqueue(delivery.frame)
        }
    }

    /// Called on the listener thread for every change: match, check visibility per subscriber, queue.
    private func dispatch(_ change: RealtimeChange) {
        let targets = state.withLock { $0?.targets(for: change) ?? [] }
        var visibility: [String: Bool] = [:]
        var deliveries: [RealtimeDelivery] = []
        for target in targets {
            let identity = RequestIdentity(claims: target.claims)
            if change.type != "DELETE" && !identity.isServiceRole {
                let key = target.claims.json
                let visible = visibility[key] ?? isVisible(change, to: identity)
                visibility[key] = visible
                guard visible else { continue }
            }
            deliveries.append(RealtimeHubState.changeDelivery(change, to: target))
        }
        deliver(deliveries)
    }

    /// Whether `identity` can select the changed row now (row-level security decides), by primary key.
    private func isVisible(_ change: RealtimeChange, to identity: RequestIdentity) -> Bool {
        let table = PostgRESTSQLBuilder.quoteIdentifier(change.table.schema) + "." + PostgRESTSQLBuilder.quoteIdentifier(change.table.table)
        var sql = "SELECT 1 FROM \(table) AS \"row\" WHERE "
        var parameters: [String?] = []
        if change.primaryKey.isEmpty {
            // No primary key: match the whole row image.
            sql += "to_jsonb(\"row\".*) = $1::jsonb"
            parameters = [change.record?.serialized ?? "null"]
        } else {
            let conditions = change.primaryKey.enumerated().map { index, key in
                "\"row\".\(PostgRESTSQLBuilder.quoteIdentifier(key.column)) = $\(index + 1)"
            }
            sql += conditions.joined(separator: " AND ")
            parameters = change.primaryKey.map { $0.value.parameterText }
        }
        sql += " LIMIT 1"
        do {
            return try context.pool.run { connection in
                try connection.transaction { connection in
                    try SupabaseServerContext.assume(identity, on: connection)
                    return try !connection.query(sql, parameters).rows.isEmpty
                }
            }
        } catch {
            context.log("realtime: visibility check on \(change.table) failed: \(error)")
            return false
        }
    }

    /// Writes queued frames to the socket until the queue ends, the socket fails or a close is requested.
    private static func drain(_ outbox: RealtimeOutbox, into connection: WebSocketConnection) async {
        for await frame in outbox.frames {
            if outbox.isOverflowed {
                await connection.close(code: .policyViolation, reason: "client too slow")
                return
            }
            do {
                switch frame {
                case .text(let text): try await connection.send(text: text)
                case .binary(let bytes): try await connection.send(binary: Data(bytes))
                case .close(let code, let reason):
                    await connection.close(code: WebSocketCloseCode(rawValue: code), reason: reason)
                    return
                }
            } catch {
                return
            }
            outbox.sent()
        }
    }
}

/// One socket's outbound queue: unbounded stream, but a socket more than `limit` frames behind is closed.
final class RealtimeOutbox: Sendable {
    /// The most frames allowed to wait before the socket is considered too slow.
    static let limit = 10_000
    /// The queued frames, in order.
    let frames: AsyncStream<RealtimeOutboundFrame>
    private let continuation: AsyncStream<RealtimeOutboundFrame>.Continuation
    private let pending = Atomic<Int>(0)
    private let overflowed = Atomic<Bool>(false)

    /// An empty queue.
    init() {
        (frames, continuation) = AsyncStream.makeStream(of: RealtimeOutboundFrame.self, bufferingPolicy: .unbounded)
    }

    /// Whether the queue overflowed (the writer then closes the socket).
    var isOverflowed: Bool { overflowed.load(ordering: .relaxed) }

    /// Queues a frame (never blocks).
    func enqueue(_ frame: RealtimeOutboundFrame) {
        if pending.add(1, ordering: .relaxed).newValue > Self.limit { overflowed.store(true, ordering: .relaxed) }
        continuation.yield(frame)
    }

    /// Records that one frame was written.
    func sent() { pending.subtract(1, ordering: .relaxed) }

    /// Ends the queue; the writer stops after the frames already queued.
    func finish() { continuation.finish() }
}
