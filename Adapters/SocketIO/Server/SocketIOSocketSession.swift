import Foundation
import SocketIOProtocol
import SwitchboardCore
import SwitchboardNet

/// The open Engine.IO sessions, so the server can count them.
final class SocketIOSocketRegistry: Sendable {
    private let sessions = Locked(Set<String>())

    /// How many sessions are open.
    var count: Int { sessions.withLock { $0.count } }

    /// Records an open session.
    func add(_ sid: String) { _ = sessions.withLock { $0.insert(sid) } }

    /// Forgets a closed session.
    func remove(_ sid: String) { _ = sessions.withLock { $0.remove(sid) } }
}

/// One Socket.IO connection over a WebSocket at `/socket.io/?EIO=4&transport=websocket`.
///
/// One loop owns the pure machines (`EngineIOServerSession`, `SocketIOServerConnection`) and handles, in order,
/// the client's frames and the ping timer. After a namespace connect with a valid token, a forwarder task moves
/// the user's live events from its bounded hub listener onto the socket; a listener that overflows closes the
/// socket. Whatever way the socket ends, its listener is removed and every task it started is cancelled.
enum SocketIOSocketSession {
    /// What the loop reacts to.
    private enum Input: Sendable {
        /// A WebSocket message or the final close.
        case frame(WebSocketFrame)
        /// The ping timer fired.
        case tick
        /// A hub listener's stream ended (overflow, or the server is stopping).
        case listenerEnded(ObjectIdentifier)
        /// The connect timeout passed; the socket closes unless a namespace is joined with a valid token.
        case connectTimeout
    }

    /// The live part of a joined namespace: the hub listener and the task sending its events.
    private struct Subscription {
        var listener: SocketIOEventHub.Listener
        var forwarder: Task<Void, Never>
    }

    /// How many inputs (frames, ticks) may wait for the loop; one more closes the socket.
    static let inputQueueLimit = 256

    /// A random id: `bytes` random bytes, base64url without padding.
    static func randomID(bytes: Int = 15) -> String {
        var generator = SystemRandomNumberGenerator()
        let raw = (0..<bytes).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
        return Base64.encode(raw).replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Serves `connection` until it closes.
    static func run(_ connection: WebSocketConnection, service: SocketIOService, registry: SocketIOSocketRegistry) async {
        let request = connection.request
        guard request.queryValue("EIO") == String(SocketIOProtocol.engineIOVersion), request.queryValue("transport") == "websocket",
              request.queryValue("sid") == nil else {
            // No polling sessions exist to upgrade, and only Engine.IO v4 is spoken.
            await connection.close(code: .policyViolation, reason: "only EIO=4&transport=websocket is served")
            return
        }
        let configuration = service.configuration
        var session = EngineIOServerSession(sid: randomID(), configuration: .init(
            pingInterval: configuration.pingInterval, pingTimeout: configuration.pingTimeout, maxPayload: configuration.maxPayload))
        var socket = SocketIOServerConnection(maxAttachmentBytes: configuration.maxPayload)
        var subscription: Subscription?
        let (inputs, continuation) = AsyncStream.makeStream(of: Input.self,
                                                            bufferingPolicy: .bufferingOldest(inputQueueLimit))
        let reader = Task {
            for await frame in connection.frames {
                if case .dropped = continuation.yield(.frame(frame)) {
                    // The loop is behind by `inputQueueLimit` inputs: stop reading and end the socket.
                    configuration.logger.warning("socket input queue overflowed; closing")
                    await connection.close(code: .policyViolation, reason: "too many frames queued")
                    continuation.finish()
                    return
                }
            }
            if case .dropped = continuation.yield(.frame(.close(code: .abnormalClosure, reason: ""))) {
                continuation.finish()
            }
        }
        let connectTimer = Task {
            try? await Task.sleep(for: configuration.connectTimeout)
            if !Task.isCancelled { continuation.yield(.connectTimeout) }
        }
        var timer: Task<Void, Never>?
        var timerDeadline: ContinuousClock.Instant?
        registry.add(session.sid)
        defer {
            if let subscription {
                service.hub.remove(subscription.listener)
                subscription.forwarder.cancel()
            }
            timer?.cancel()
            connectTimer.cancel()
            reader.cancel()
            continuation.finish()
            registry.remove(session.sid)
        }

        var iterator = inputs.makeAsyncIterator()
        var pending = session.start(at: .now)
        loop: while true {
            // Carry out the machine's outputs in order.
            while !pending.isEmpty {
                let output = pending.removeFirst()
                switch output {
                case .send(let frame):
                    await send(frame, on: connection)
                case .deliverText, .deliverBinary:
                    let decision: SocketIOServerDecision?
                    do throws(SocketIOProtocolError) {
                        decision = try socket.receive(output)
                    } catch {
                        configuration.logger.warning("socket \(session.sid): malformed Socket.IO packet: \(error)")
                        pending = session.handle(.closeRequested)
                        continue
                    }
                    guard let decision else { continue }
                    let keepOpen = await decide(decision, socket: &socket, subscription: &subscription,
                                                connection: connection, service: service, continuation: continuation)
                    if !keepOpen {
                        configuration.logger.info("socket \(session.sid): connect refused")
                        pending = session.handle(.closeRequested)
                    } else if subscription != nil {
                        connectTimer.cancel()  // Authenticated: a later namespace disconnect keeps the socket.
                    }
                case .closeTransport:
                    await connection.close(code: .normalClosure, reason: "")
                case .closed(let reason):
                    configuration.logger.debug("socket \(session.sid) closed: \(reason)")
                    break loop
                }
            }
            // Keep one timer armed for the session's next deadline.
            if session.nextDeadline != timerDeadline {
                timer?.cancel()
                timerDeadline = session.nextDeadline
                timer = timerDeadline.map { deadline in
                    Task {
                        try? await Task.sleep(until: deadline, clock: .continuous)
                        if !Task.isCancelled { continuation.yield(.tick) }
                    }
                }
            }
            guard let input = await iterator.next() else { break }
            switch input {
            case .frame(.text(let text)):
                pending = session.handle(.frameReceived(.text(text), at: .now))
            case .frame(.binary(let data)):
                pending = session.handle(.frameReceived(.binary(data), at: .now))
            case .frame(.close(let code, _)):
                pending = session.handle(.transportClosed(reason: "WebSocket closed (\(code))"))
            case .tick:
                timerDeadline = nil
                pending = session.handle(.tick(at: .now))
            case .listenerEnded(let id):
                guard let current = subscription, ObjectIdentifier(current.listener) == id else { continue }
                configuration.logger.log(level: current.listener.overflowed ? .warning : .debug,
                                         "socket \(session.sid): live events ended (overflow: \(current.listener.overflowed))")
                pending = session.handle(.closeRequested)
            case .connectTimeout:
                guard subscription == nil else { continue }
                configuration.logger.info("socket \(session.sid): no authenticated connect within the connect timeout")
                pending = session.handle(.closeRequested)
            }
        }
    }

    /// Sends one Engine.IO frame; a closed connection is noticed through its frames, so failures are ignored.
    private static func send(_ frame: EngineIOFrame, on connection: WebSocketConnection) async {
        switch frame {
        case .text(let text): try? await connection.send(text: text)
        case .binary(let data): try? await connection.send(binary: data)
        }
    }

    private static func send(_ frames: [EngineIOFrame], on connection: WebSocketConnection) async {
        for frame in frames { await send(frame, on: connection) }
    }

    /// Carries out one Socket.IO decision; false when the socket must close (a refused auth).
    private static func decide(_ decision: SocketIOServerDecision, socket: inout SocketIOServerConnection,
                               subscription: inout Subscription?, connection: WebSocketConnection, service: SocketIOService,
                               continuation: AsyncStream<Input>.Continuation) async -> Bool {
        switch decision {
        case .connect(let namespace, let auth):
            guard namespace == "/" else {
                await send(socket.reject(namespace: namespace, message: "Invalid namespace"), on: connection)
                return true
            }
            let token = auth?["token"]?.stringValue ?? ""
            let user: String?
            do {
                user = try await service.user(forToken: token)
            } catch {
                service.configuration.logger.error("token check failed: \(error)")
                user = nil
            }
            guard let user else {
                await send(socket.reject(namespace: namespace, message: "unauthorized"), on: connection)
                return false
            }
            if let previous = subscription {
                service.hub.remove(previous.listener)
                previous.forwarder.cancel()
            }
            // Register before answering, so nothing committed after the client sees `40{"sid"}` is missed; the
            // forwarder starts after the answer, so events never precede it.
            let listener = service.hub.add(userID: user)
            await send(socket.accept(namespace: namespace, sid: randomID()), on: connection)
            let forwarder = Task {
                for await event in listener.stream {
                    await send(SocketIOPacket.event(event.name, [event.payload], namespace: namespace).frames, on: connection)
                }
                continuation.yield(.listenerEnded(ObjectIdentifier(listener)))
            }
            subscription = Subscription(listener: listener, forwarder: forwarder)
        case .event(let event):
            let answer = await answer(event, user: subscription?.listener.userID, service: service)
            if let id = event.ackID {
                await send(socket.ack(id: id, [answer], namespace: event.namespace), on: connection)
            }
        case .disconnect:
            if let current = subscription {
                subscription = nil
                service.hub.remove(current.listener)
                current.forwarder.cancel()
            }
        case .ack, .ignored:
            break
        }
        return true
    }

    /// The ack argument for a client event: `{"ok":true…}` or `{"ok":false,"error":"…"}`.
    private static func answer(_ event: SocketIOEvent, user: String?, service: SocketIOService) async -> JSONValue {
        func failure(_ message: String) -> JSONValue { .object([("ok", .bool(false)), ("error", .string(message))]) }
        switch event.name {
        case "typing":
            guard let user else { return failure("not connected") }
            guard let payload = event.arguments.first, let conversation = payload["conversationId"]?.stringValue,
                  let typing = payload["typing"]?.boolValue else {
                return failure("typing needs {\"conversationId\":string,\"typing\":bool}")
            }
            do {
                try await service.typing(user: user, conversation: conversation, typing: typing)
                return .object([("ok", .bool(true))])
            } catch let error as SocketIOServerError {
                return failure(error.message)
            } catch {
                service.configuration.logger.error("typing failed: \(error)")
                return failure("the server's store failed")
            }
        case "ping:app":
            return .object([("ok", .bool(true)), ("time", .string(SocketIOTime.format(ms: SocketIOTime.nowMs())))])
        default:
            return failure("unknown event")
        }
    }
}
