import Foundation

/// Why an Engine.IO connection ended.
public enum EngineIOCloseReason: Sendable, Hashable, CustomStringConvertible {
    /// No open packet arrived within the handshake timeout.
    case handshakeTimeout
    /// No ping (client side) or no pong (server side) arrived in time: the peer is presumed dead.
    case pingTimeout
    /// The peer sent the Engine.IO close packet `1`.
    case peerClosed
    /// The transport closed underneath (the text is the driver's reason).
    case transportClosed(String)
    /// The local side asked to close.
    case requested
    /// The peer sent something that is not valid Engine.IO / Socket.IO (the text says what).
    case protocolError(String)
    /// A frame exceeded the payload limit.
    case payloadTooLarge(size: Int, limit: Int)

    /// A human-readable explanation.
    public var description: String {
        switch self {
        case .handshakeTimeout: return "handshake timeout"
        case .pingTimeout: return "ping timeout"
        case .peerClosed: return "closed by peer"
        case .transportClosed(let why): return "transport closed: \(why)"
        case .requested: return "closed on request"
        case .protocolError(let why): return "protocol error: \(why)"
        case .payloadTooLarge(let size, let limit): return "payload of \(size) bytes exceeds \(limit)"
        }
    }
}

/// The client side of one Engine.IO v4 connection over WebSocket, as a pure state machine.
///
/// The driver opens the WebSocket, then feeds `transportOpened`, every received frame, `tick`s at
/// `nextDeadline`, and `transportClosed`; it carries out the outputs in order. The machine waits at most
/// `handshakeTimeout` for the open packet, answers every ping `2` with pong `3`, and declares the connection
/// dead when no ping arrives within `pingInterval + pingTimeout` of the previous one (or of the open packet).
/// After `closed` it is idle again and a new `transportOpened` starts a fresh connection.
public struct EngineIOClientMachine: Sendable {
    /// Timing of the client.
    public struct Configuration: Sendable, Hashable {
        /// How long to wait from the transport opening to the open packet (10 s by default).
        public var handshakeTimeout: Duration

        /// A configuration; the handshake timeout defaults to 10 s.
        public init(handshakeTimeout: Duration = .seconds(10)) {
            self.handshakeTimeout = handshakeTimeout
        }
    }

    /// Where the connection is.
    public enum State: Sendable, Hashable {
        /// No transport (never started, or closed).
        case idle
        /// The transport is open; waiting for the open packet since the instant.
        case awaitingHandshake(since: ContinuousClock.Instant)
        /// The handshake arrived; messages flow.
        case open(EngineIOHandshake)
    }

    /// Something the driver tells the machine.
    public enum Input: Sendable {
        /// The WebSocket opened at the instant.
        case transportOpened(at: ContinuousClock.Instant)
        /// A frame arrived at the instant.
        case frameReceived(EngineIOFrame, at: ContinuousClock.Instant)
        /// The clock reached the instant (call at or after `nextDeadline`).
        case tick(at: ContinuousClock.Instant)
        /// The WebSocket closed or failed underneath.
        case transportClosed(reason: String)
        /// The application wants to close: the machine sends `1` and asks to close the transport.
        case closeRequested
    }

    /// Something the machine asks the driver to do or to report.
    public enum Output: Sendable, Hashable {
        /// Send this frame.
        case send(EngineIOFrame)
        /// The handshake arrived: the connection is open.
        case opened(EngineIOHandshake)
        /// A text message (a Socket.IO packet's text) for the layer above.
        case deliverText(String)
        /// A binary message (a Socket.IO attachment) for the layer above.
        case deliverBinary(Data)
        /// Close the WebSocket (the machine has already counted the connection as closed).
        case closeTransport
        /// The connection ended; reported exactly once per connection.
        case closed(EngineIOCloseReason)
    }

    /// The configuration.
    public let configuration: Configuration
    /// The current state.
    public private(set) var state: State = .idle
    /// When the last ping (or the open packet) arrived.
    public private(set) var lastPingAt: ContinuousClock.Instant?

    /// An idle machine.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// The handshake once open.
    public var handshake: EngineIOHandshake? {
        if case .open(let handshake) = state { return handshake }
        return nil
    }

    /// Whether messages may be sent.
    public var isOpen: Bool { handshake != nil }

    /// When the driver must `tick` next: the handshake deadline, or the ping deadline once open.
    public var nextDeadline: ContinuousClock.Instant? {
        switch state {
        case .idle: return nil
        case .awaitingHandshake(let since): return since + configuration.handshakeTimeout
        case .open(let handshake):
            return lastPingAt.map { $0 + handshake.pingInterval + handshake.pingTimeout }
        }
    }

    /// The frame for a text message, or nil when the connection is not open.
    public func frame(forMessage text: String) -> EngineIOFrame? {
        isOpen ? EngineIOPacket.message(text).encoded : nil
    }

    /// Advances the machine by one input and returns what the driver must do, in order.
    public mutating func handle(_ input: Input) -> [Output] {
        switch input {
        case .transportOpened(let now):
            state = .awaitingHandshake(since: now)
            lastPingAt = nil
            return []
        case .frameReceived(let frame, let now):
            return receive(frame, at: now)
        case .tick(let now):
            guard let deadline = nextDeadline, now >= deadline else { return [] }
            if case .awaitingHandshake = state { return fail(.handshakeTimeout) }
            return fail(.pingTimeout)
        case .transportClosed(let reason):
            guard state != .idle else { return [] }
            reset()
            return [.closed(.transportClosed(reason))]
        case .closeRequested:
            guard state != .idle else { return [] }
            let wasOpen = isOpen
            reset()
            return (wasOpen ? [.send(EngineIOPacket.close.encoded)] : []) + [.closeTransport, .closed(.requested)]
        }
    }

    private mutating func reset() {
        state = .idle
        lastPingAt = nil
    }

    private mutating func fail(_ reason: EngineIOCloseReason) -> [Output] {
        reset()
        return [.closeTransport, .closed(reason)]
    }

    private mutating func receive(_ frame: EngineIOFrame, at now: ContinuousClock.Instant) -> [Output] {
        guard state != .idle else { return [] }
        let packet: EngineIOPacket
        do throws(EngineIOProtocolError) {
            packet = try EngineIOPacket.decode(frame)
        } catch {
            return fail(.protocolError(error.description))
        }
        if case .awaitingHandshake = state {
            guard case .open(let handshake) = packet else {
                if case .close = packet { return fail(.peerClosed) }
                return fail(.protocolError("expected the open packet first"))
            }
            state = .open(handshake)
            lastPingAt = now
            return [.opened(handshake)]
        }
        switch packet {
        case .open: return fail(.protocolError("a second open packet"))
        case .close: return fail(.peerClosed)
        case .ping(let data):
            lastPingAt = now
            return [.send(EngineIOPacket.pong(data).encoded)]
        case .pong, .upgrade, .noop: return []
        case .message(let text): return [.deliverText(text)]
        case .binaryMessage(let data): return [.deliverBinary(data)]
        }
    }
}
