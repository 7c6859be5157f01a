import Foundation
import SocketIOProtocol
import SwitchboardCore
import SwitchboardNet

/// A Socket.IO v5 client over `WebSocketClient` (WebSocket transport only): it runs `SocketIOClientMachine`,
/// carries out its outputs, keeps its timers and reconnects with `ReconnectBackoff`. All protocol decisions
/// (handshake and ping timeouts, pongs, namespace connect with auth, acks) are the machine's; this only does I/O.
public actor SocketIOClient {
    /// Where to connect and how to behave.
    public struct Configuration: Sendable {
        /// The server's base URL (`http`, `https`, `ws` or `wss`); the path and query are added.
        public var url: URL
        /// The Engine.IO path (`/socket.io/`).
        public var path: String = SocketIOProtocol.defaultPath
        /// The auth object of the namespace connect, e.g. `{"token":"…"}`.
        public var auth: JSONValue?
        /// How long to wait for the Engine.IO open packet (10 s).
        public var handshakeTimeout: Duration = .seconds(10)
        /// How long to wait for the namespace connect answer (20 s).
        public var connectTimeout: Duration? = .seconds(20)
        /// Whether to reconnect after a lost connection (forever, with `backoff`).
        public var reconnects = true
        /// Whether to keep reconnecting after the server refused the connect (`44`); socket.io-client does not.
        public var reconnectsAfterConnectError = false
        /// The reconnect delays (1 s doubling to 5 s, ±50 %).
        public var backoff = ReconnectBackoff()

        /// A configuration for the server at `url`.
        public init(url: URL, auth: JSONValue? = nil) {
            self.url = url
            self.auth = auth
        }
    }

    /// What the client reports, in order.
    public enum Event: Sendable, Hashable {
        /// The namespace connected (first time or again), with the Socket.IO sid.
        case connected(sid: String?)
        /// The server refused the namespace connect (`44`), with its message and data.
        case connectError(message: String, data: JSONValue?)
        /// A connection, or an attempt at one, ended.
        case disconnected(reason: String)
        /// An event from the server (answer those with an ack id through `ack`).
        case event(SocketIOEvent)
    }

    /// One WebSocket and the queue that writes to it in order.
    private struct Link {
        let generation: Int
        let socket: WebSocketClient
        let outbox: AsyncStream<EngineIOFrame>.Continuation
    }

    /// The configuration (auth changes through `setAuth`).
    public private(set) var configuration: Configuration
    /// Everything the client reports; ends after `stop`.
    public nonisolated let events: AsyncStream<Event>
    /// How many times the namespace has connected.
    public private(set) var connectionCount = 0

    private let continuation: AsyncStream<Event>.Continuation
    private var machine: SocketIOClientMachine
    private var backoff: ReconnectBackoff
    private var link: Link?
    private var generation = 0
    private var isStarted = false
    private var isStopped = false
    private var timerTask: Task<Void, Never>?
    private var timerDeadline: ContinuousClock.Instant?
    private var reconnectTask: Task<Void, Never>?
    private var linkTasks: [Int: Task<Void, Never>] = [:]
    private var pendingAcks: [Int: CheckedContinuation<[JSONValue], any Error>] = [:]

    /// A client that has not connected yet (call `start`).
    public init(configuration: Configuration) {
        self.configuration = configuration
        machine = SocketIOClientMachine(configuration: .init(auth: configuration.auth,
                                                             handshakeTimeout: configuration.handshakeTimeout,
                                                             connectTimeout: configuration.connectTimeout))
        backoff = configuration.backoff
        webSocketURL = Self.webSocketURL(for: configuration.url, path: configuration.path)
        (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
    }

    /// `ws(s)://host:port/socket.io/?EIO=4&transport=websocket` for the configured server.
    public nonisolated let webSocketURL: URL

    /// The WebSocket URL of the Engine.IO endpoint at `path` on the server at `url`.
    public static func webSocketURL(for url: URL, path: String = SocketIOProtocol.defaultPath) -> URL {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        switch components?.scheme?.lowercased() {
        case "https", "wss": components?.scheme = "wss"
        default: components?.scheme = "ws"
        }
        components?.path = path
        components?.percentEncodedQuery = SocketIOProtocol.webSocketQuery
        return components?.url ?? url
    }

    /// Whether the namespace is connected now.
    public var isConnected: Bool { machine.isConnected }

    /// Waits up to `timeout` for the namespace to be connected; true when it is.
    public func waitUntilConnected(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !machine.isConnected && !isStopped && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        return machine.isConnected
    }

    /// Connects (and keeps reconnecting as configured) until `stop`.
    public func start() {
        guard !isStarted, !isStopped else { return }
        isStarted = true
        connect()
    }

    /// Disconnects (`41`, then Engine.IO close), stops reconnecting, waits for the socket to close, ends `events`.
    public func stop() async {
        guard !isStopped else { return }
        isStopped = true
        reconnectTask?.cancel()
        reconnectTask = nil
        perform(machine.handle(.disconnectRequested))
        closeLink()
        timerTask?.cancel()
        timerTask = nil
        for (_, continuation) in pendingAcks {
            continuation.resume(throwing: SwitchboardError(.cancelled, "the Socket.IO client stopped", retryable: true))
        }
        pendingAcks = [:]
        let tasks = linkTasks.values
        linkTasks = [:]
        for task in tasks { await task.value }
        continuation.finish()
    }

    /// Uses `auth` for the next connect; with `reconnectNow` a client that is not connected tries at once.
    public func setAuth(_ auth: JSONValue?, reconnectNow: Bool = false) {
        configuration.auth = auth
        machine.setAuth(auth)
        guard reconnectNow, isStarted, !isStopped, !machine.isConnected, link == nil else { return }
        reconnectTask?.cancel()
        reconnectTask = nil
        backoff.reset()
        connect()
    }

    /// Emits an event without waiting for an answer; throws unless connected.
    public func emit(_ name: String, _ arguments: [JSONValue] = []) throws {
        let emitted: (ackID: Int?, outputs: [SocketIOClientMachine.Output])
        do throws(SocketIOClientError) {
            emitted = try machine.emit(name, arguments)
        } catch {
            throw Self.notConnected
        }
        perform(emitted.outputs)
    }

    /// Emits an event with an ack id and returns the answer's arguments; throws when not connected, on timeout
    /// or when the connection drops first.
    public func emitWithAck(_ name: String, _ arguments: [JSONValue] = [], timeout: Duration = .seconds(10)) async throws
        -> [JSONValue] {
        let emitted: (ackID: Int?, outputs: [SocketIOClientMachine.Output])
        do throws(SocketIOClientError) {
            emitted = try machine.emit(name, arguments, ack: true, ackDeadline: .now + timeout)
        } catch {
            throw Self.notConnected
        }
        guard let id = emitted.ackID else { throw Self.notConnected }
        return try await withCheckedThrowingContinuation { continuation in
            pendingAcks[id] = continuation
            perform(emitted.outputs)
        }
    }

    /// Answers a server event that asked for an ack.
    public func ack(_ event: SocketIOEvent, _ arguments: [JSONValue] = []) throws {
        guard let id = event.ackID else { return }
        let outputs: [SocketIOClientMachine.Output]
        do throws(SocketIOClientError) {
            outputs = try machine.ack(id: id, arguments)
        } catch {
            throw SwitchboardError(.invalidArgument, "cannot ack \(id): \(error)")
        }
        perform(outputs)
    }

    // MARK: - I/O

    private static var notConnected: SwitchboardError {
        SwitchboardError(.transport, "the Socket.IO client is not connected", retryable: true)
    }

    private func connect() {
        reconnectTask = nil
        guard !isStopped else { return }
        generation += 1
        let current = generation
        let socket = WebSocketClient()
        let (outbox, writer) = AsyncStream<EngineIOFrame>.makeStream(bufferingPolicy: .unbounded)
        link = Link(generation: current, socket: socket, outbox: writer)
        let url = webSocketURL
        linkTasks[current] = Task { [weak self] in
            do {
                try await socket.connect(url: url)
            } catch {
                writer.finish()
                await self?.transportEnded(generation: current, reason: "connect failed: \(error)")
                await self?.forget(generation: current)
                return
            }
            let sender = Task {
                for await frame in outbox {
                    switch frame {
                    case .text(let text): try? await socket.send(text: text)
                    case .binary(let data): try? await socket.send(binary: data)
                    }
                }
                await socket.close()
            }
            await self?.transportOpened(generation: current)
            var reason = "stream ended"
            for await frame in socket.frames {
                switch frame {
                case .text(let text): await self?.received(.text(text), generation: current)
                case .binary(let data): await self?.received(.binary(data), generation: current)
                case .close(let code, let text): reason = "closed \(code)\(text.isEmpty ? "" : " \(text)")"
                }
            }
            await self?.transportEnded(generation: current, reason: reason)
            writer.finish()
            await sender.value
            await self?.forget(generation: current)
        }
    }

    private func forget(generation: Int) {
        linkTasks[generation] = nil
    }

    private func transportOpened(generation: Int) {
        guard generation == self.generation, link != nil else { return }
        perform(machine.handle(.transportOpened(at: .now)))
    }

    private func received(_ frame: EngineIOFrame, generation: Int) {
        guard generation == self.generation, link != nil else { return }
        perform(machine.handle(.frameReceived(frame, at: .now)))
    }

    private func transportEnded(generation: Int, reason: String) {
        guard generation == self.generation, link != nil else { return }
        let outputs = machine.handle(.transportClosed(reason: reason))
        if outputs.contains(where: { if case .closed = $0 { true } else { false } }) {
            perform(outputs)
        } else {
            // The WebSocket never opened (or the machine was idle): an attempt failed.
            closeLink()
            continuation.yield(.disconnected(reason: reason))
            scheduleReconnect(after: nil)
        }
    }

    /// Finishes the current link's queue (its writer sends what is queued, then closes the WebSocket).
    private func closeLink() {
        guard let link else { return }
        self.link = nil
        generation += 1
        link.outbox.finish()
    }

    private func perform(_ outputs: [SocketIOClientMachine.Output]) {
        for output in outputs {
            switch output {
            case .send(let frame):
                link?.outbox.yield(frame)
            case .closeTransport:
                closeLink()
            case .engineOpened:
                break
            case .connected(let sid):
                backoff.reset()
                connectionCount += 1
                continuation.yield(.connected(sid: sid))
            case .event(let event):
                continuation.yield(.event(event))
            case .ackReceived(let id, let arguments, _):
                pendingAcks.removeValue(forKey: id)?.resume(returning: arguments)
            case .ackFailed(let id, let failure):
                let text = failure == .timedOut ? "no ack within the timeout" : "the connection dropped before the ack"
                pendingAcks.removeValue(forKey: id)?.resume(throwing: SwitchboardError(.transport, text, retryable: true))
            case .closed(let reason):
                closeLink()
                if case .connectError(let message, let data) = reason {
                    continuation.yield(.connectError(message: message, data: data))
                } else {
                    continuation.yield(.disconnected(reason: reason.description))
                }
                scheduleReconnect(after: reason)
            }
        }
        rescheduleTimer()
    }

    private func scheduleReconnect(after reason: SocketIOCloseReason?) {
        guard !isStopped, configuration.reconnects, reconnectTask == nil else { return }
        switch reason {
        case .clientDisconnect?: return
        case .connectError?: guard configuration.reconnectsAfterConnectError else { return }
        default: break
        }
        let delay = backoff.nextDelay()
        reconnectTask = Task { [weak self] in
            try? await Task.sleep(for: delay)
            guard !Task.isCancelled else { return }
            await self?.connect()
        }
    }

    private func rescheduleTimer() {
        let deadline = machine.nextDeadline
        guard deadline != timerDeadline else { return }
        timerTask?.cancel()
        timerDeadline = deadline
        guard let deadline, !isStopped else {
            timerTask = nil
            return
        }
        timerTask = Task { [weak self] in
            try? await Task.sleep(until: deadline, clock: .continuous)
            guard !Task.isCancelled else { return }
            await self?.tick()
        }
    }

    private func tick() {
        timerDeadline = nil
        perform(machine.handle(.tick(at: .now)))
    }
}
