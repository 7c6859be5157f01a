import Foundation

/// The server side of one Engine.IO v4 connection over WebSocket, as a pure state machine.
///
/// `start(at:)` yields the open packet (sid chosen by the caller). From then on the session pings every
/// `pingInterval` after the open packet or the last pong, closes the connection when a pong does not arrive
/// within `pingTimeout` of its ping, answers client pings (`2probe` → `3probe`), refuses frames above
/// `maxPayload`, and delivers messages (`4…`, binary frames) for the Socket.IO layer. The driver ticks at
/// `nextDeadline`.
public struct EngineIOServerSession: Sendable {
    /// Timing and limits advertised in the open packet.
    public struct Configuration: Sendable, Hashable {
        /// Time between pings (25 s).
        public var pingInterval: Duration
        /// Time a pong may take (20 s).
        public var pingTimeout: Duration
        /// The largest frame accepted, in bytes (1,000,000).
        public var maxPayload: Int

        /// A configuration with `WIRE.md`'s defaults.
        public init(pingInterval: Duration = .seconds(25), pingTimeout: Duration = .seconds(20),
                    maxPayload: Int = 1_000_000) {
            self.pingInterval = pingInterval
            self.pingTimeout = pingTimeout
            self.maxPayload = maxPayload
        }
    }

    /// Something the driver tells the session.
    public enum Input: Sendable {
        /// A frame arrived from the client.
        case frameReceived(EngineIOFrame, at: ContinuousClock.Instant)
        /// The clock reached the instant (call at or after `nextDeadline`).
        case tick(at: ContinuousClock.Instant)
        /// The WebSocket closed or failed underneath.
        case transportClosed(reason: String)
        /// The server closes the session: sends `1` and asks to close the transport.
        case closeRequested
    }

    /// Something the session asks the driver to do or to report, in order.
    public enum Output: Sendable, Hashable {
        /// Send this frame.
        case send(EngineIOFrame)
        /// A text message (Socket.IO packet text) from the client.
        case deliverText(String)
        /// A binary message (Socket.IO attachment) from the client.
        case deliverBinary(Data)
        /// Close the WebSocket.
        case closeTransport
        /// The session ended; reported once.
        case closed(EngineIOCloseReason)
    }

    /// The session id.
    public let sid: String
    /// The configuration.
    public let configuration: Configuration
    /// Whether the session has ended.
    public private(set) var isClosed = false
    /// When the next ping is due (nil while waiting for a pong, or before `start`).
    public private(set) var nextPingAt: ContinuousClock.Instant?
    /// When the outstanding ping was sent (nil when none is outstanding).
    public private(set) var pingSentAt: ContinuousClock.Instant?
    private var started = false

    /// A session for `sid` (generate it randomly; engine.io uses 20 base64url characters).
    public init(sid: String, configuration: Configuration = Configuration()) {
        self.sid = sid
        self.configuration = configuration
    }

    /// The handshake this session advertises (`upgrades` is `[]`: WebSocket only).
    public var handshake: EngineIOHandshake {
        EngineIOHandshake(sid: sid, upgrades: [], pingInterval: configuration.pingInterval,
                          pingTimeout: configuration.pingTimeout, maxPayload: configuration.maxPayload)
    }

    /// The open packet's frame: `0{"sid",…}`.
    public var openFrame: EngineIOFrame { EngineIOPacket.open(handshake).encoded }

    /// Starts the session at `now`: returns the open packet to send and schedules the first ping.
    public mutating func start(at now: ContinuousClock.Instant) -> [Output] {
        guard !started, !isClosed else { return [] }
        started = true
        nextPingAt = now + configuration.pingInterval
        return [.send(openFrame)]
    }

    /// When the driver must `tick` next: the next ping, or the pong deadline.
    public var nextDeadline: ContinuousClock.Instant? {
        guard !isClosed else { return nil }
        if let sent = pingSentAt { return sent + configuration.pingTimeout }
        return nextPingAt
    }

    /// The frame for a text message to the client (`4<text>`), nil once closed.
    public func frame(forMessage text: String) -> EngineIOFrame? {
        isClosed ? nil : EngineIOPacket.message(text).encoded
    }

    /// The frames of a Socket.IO packet for the client, `[]` once closed.
    public func frames(for packet: SocketIOPacket) -> [EngineIOFrame] {
        isClosed ? [] : packet.frames
    }

    /// Advances the session by one input and returns what the driver must do, in order.
    public mutating func handle(_ input: Input) -> [Output] {
        guard !isClosed else { return [] }
        switch input {
        case .frameReceived(let frame, let now):
            return receive(frame, at: now)
        case .tick(let now):
            guard started else { return [] }
            if let sent = pingSentAt {
                return now >= sent + configuration.pingTimeout ? fail(.pingTimeout) : []
            }
            if let due = nextPingAt, now >= due {
                nextPingAt = nil
                pingSentAt = now
                return [.send(EngineIOPacket.ping(nil).encoded)]
            }
            return []
        case .transportClosed(let reason):
            finish()
            return [.closed(.transportClosed(reason))]
        case .closeRequested:
            finish()
            return [.send(EngineIOPacket.close.encoded), .closeTransport, .closed(.requested)]
        }
    }

    private mutating func finish() {
        isClosed = true
        nextPingAt = nil
        pingSentAt = nil
    }

    private mutating func fail(_ reason: EngineIOCloseReason) -> [Output] {
        finish()
        return [.closeTransport, .closed(reason)]
    }

    private mutating func receive(_ frame: EngineIOFrame, at now: ContinuousClock.Instant) -> [Output] {
        guard frame.byteCount <= configuration.maxPayload else {
            return fail(.payloadTooLarge(size: frame.byteCount, limit: configuration.maxPayload))
        }
        let packet: EngineIOPacket
        do throws(EngineIOProtocolError) {
            packet = try EngineIOPacket.decode(frame)
        } catch {
            return fail(.protocolError(error.description))
        }
        switch packet {
        case .pong:
            if pingSentAt != nil {
                pingSentAt = nil
                nextPingAt = now + configuration.pingInterval
            }
            return []
        case .ping(let data):
            return [.send(EngineIOPacket.pong(data).encoded)]
        case .message(let text): return [.deliverText(text)]
        case .binaryMessage(let data): return [.deliverBinary(data)]
        case .close:
            finish()
            return [.closeTransport, .closed(.peerClosed)]
        case .upgrade, .noop: return []
        case .open: return fail(.protocolError("the client sent an open packet"))
        }
    }
}
