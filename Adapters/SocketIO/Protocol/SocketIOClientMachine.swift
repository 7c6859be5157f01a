import Foundation
import SwitchboardCore

/// An event received from the peer: its name, arguments and, when the peer wants an answer, the ack id.
public struct SocketIOEvent: Sendable, Hashable {
    /// The namespace it arrived on.
    public var namespace: String
    /// The event name.
    public var name: String
    /// The arguments after the name (binary ones as placeholders; see `attachments`).
    public var arguments: [JSONValue]
    /// The ack id when the sender waits for an answer.
    public var ackID: Int?
    /// Binary attachments referenced by placeholders in `arguments` (empty for text events).
    public var attachments: [Data]

    /// An event.
    public init(namespace: String = "/", name: String, arguments: [JSONValue], ackID: Int? = nil,
                attachments: [Data] = []) {
        self.namespace = namespace
        self.name = name
        self.arguments = arguments
        self.ackID = ackID
        self.attachments = attachments
    }

    /// The event carried by an event packet, nil for other packet types.
    public init?(packet: SocketIOPacket) {
        guard let name = packet.eventName else { return nil }
        self.init(namespace: packet.namespace, name: name, arguments: packet.arguments, ackID: packet.ackID,
                  attachments: packet.attachments)
    }

    /// The arguments with placeholders replaced by their attachments.
    public func resolvedArguments() throws(SocketIOProtocolError) -> [SocketIOValue] {
        try arguments.map { (argument) throws(SocketIOProtocolError) -> SocketIOValue in
            try SocketIOBinary.reconstruct(argument, attachments: attachments)
        }
    }
}

/// Why a Socket.IO client connection ended.
public enum SocketIOCloseReason: Sendable, Hashable, CustomStringConvertible {
    /// The server refused the namespace connect (`44`): its message and optional `data`. Not retried.
    case connectError(message: String, data: JSONValue?)
    /// The server disconnected the namespace (`41`). socket.io-client does not reconnect after this.
    case serverDisconnect
    /// The application disconnected.
    case clientDisconnect
    /// The server did not answer the namespace connect within `connectTimeout`.
    case connectTimeout
    /// The Engine.IO connection ended (handshake/ping timeout, transport closed, protocol error…).
    case engine(EngineIOCloseReason)

    /// Whether a driver should reconnect (with `ReconnectBackoff`): only after transport-level failures.
    public var shouldReconnect: Bool {
        switch self {
        case .connectError, .serverDisconnect, .clientDisconnect: return false
        case .connectTimeout: return true
        case .engine(let reason): return reason != .requested
        }
    }

    /// A human-readable explanation.
    public var description: String {
        switch self {
        case .connectError(let message, _): return "connect_error: \(message)"
        case .serverDisconnect: return "io server disconnect"
        case .clientDisconnect: return "io client disconnect"
        case .connectTimeout: return "connect timeout"
        case .engine(let reason): return reason.description
        }
    }
}

/// Why an emitted event's ack will never arrive.
public enum SocketIOAckFailure: Sendable, Hashable {
    /// Its deadline passed.
    case timedOut
    /// The connection dropped before the answer.
    case disconnected
}

/// Why the client machine refused a call.
public enum SocketIOClientError: Error, Sendable, Hashable {
    /// The namespace is not connected.
    case notConnected
    /// No unanswered server event carries this ack id (never received, or already answered).
    case unknownAckID(Int)
}

/// The client side of one Socket.IO v5 namespace over `EngineIOClientMachine`, as a pure state machine.
///
/// When the Engine.IO handshake completes it sends `40[{auth}]`; `40{"sid"}` reports `connected`, `44{…}`
/// closes with `connectError` (not retried here: `SocketIOCloseReason.shouldReconnect` is false). Events
/// arrive as `SocketIOEvent`s (binary ones reassembled); events carrying an ack id are answered through
/// `ack(id:_:)`. `emit` allocates increasing ack ids (from 0, as socket.io-client) when an answer is wanted;
/// `43<id>[…]` resolves them, their optional deadlines fail them on `tick`, and every pending ack fails when the
/// connection drops. `41` from the server closes with `serverDisconnect`. After `closed` the machine is idle and
/// the driver may reconnect by feeding a new `transportOpened` (ack ids keep increasing).
public struct SocketIOClientMachine: Sendable {
    /// What to connect to and how long to wait.
    public struct Configuration: Sendable, Hashable {
        /// The namespace (`/` by default).
        public var namespace: String
        /// The auth object sent with the connect packet (`{"token":…}`), or nil for a bare `40`.
        public var auth: JSONValue?
        /// Engine.IO handshake timeout (10 s).
        public var handshakeTimeout: Duration
        /// How long the namespace connect may take after `40` is sent (20 s, socket.io-client's `timeout`);
        /// nil waits forever.
        public var connectTimeout: Duration?

        /// A configuration.
        public init(namespace: String = "/", auth: JSONValue? = nil, handshakeTimeout: Duration = .seconds(10),
                    connectTimeout: Duration? = .seconds(20)) {
            self.namespace = namespace
            self.auth = auth
            self.handshakeTimeout = handshakeTimeout
            self.connectTimeout = connectTimeout
        }
    }

    /// Where the connection is.
    public enum Phase: Sendable, Hashable {
        /// No transport.
        case idle
        /// The transport is open; waiting for the Engine.IO open packet.
        case handshaking
        /// `40` sent; waiting for `40{"sid"}` or `44`.
        case connecting
        /// The namespace is connected with this Socket.IO sid.
        case connected(sid: String?)
    }

    /// Something the driver tells the machine.
    public enum Input: Sendable {
        /// The WebSocket opened.
        case transportOpened(at: ContinuousClock.Instant)
        /// A frame arrived.
        case frameReceived(EngineIOFrame, at: ContinuousClock.Instant)
        /// The clock reached the instant (call at or after `nextDeadline`).
        case tick(at: ContinuousClock.Instant)
        /// The WebSocket closed or failed underneath.
        case transportClosed(reason: String)
        /// The application disconnects: `41`, then Engine.IO close.
        case disconnectRequested
    }

    /// Something the machine asks the driver to do or to report, in order.
    public enum Output: Sendable, Hashable {
        /// Send this frame.
        case send(EngineIOFrame)
        /// Close the WebSocket.
        case closeTransport
        /// The Engine.IO handshake arrived (the namespace connect follows).
        case engineOpened(EngineIOHandshake)
        /// The namespace is connected (the sid from `40{"sid"}`, if the server sent one).
        case connected(sid: String?)
        /// An event from the server.
        case event(SocketIOEvent)
        /// The ack for emitted ack id `id` arrived with these arguments (binary as placeholders + attachments).
        case ackReceived(id: Int, arguments: [JSONValue], attachments: [Data])
        /// The ack for `id` will never arrive.
        case ackFailed(id: Int, SocketIOAckFailure)
        /// The connection ended (after any `ackFailed`); reported once per connection.
        case closed(SocketIOCloseReason)
    }

    /// The configuration (the auth may be changed between connections with `setAuth`).
    public private(set) var configuration: Configuration
    /// The current phase.
    public private(set) var phase: Phase = .idle

    private var engine: EngineIOClientMachine
    private var assembler = SocketIOBinaryAssembler()
    private var connectSentAt: ContinuousClock.Instant?
    private var nextAckID = 0
    private var pendingAcks: [Int: ContinuousClock.Instant?] = [:]
    private var unansweredServerAcks: Set<Int> = []

    /// An idle machine.
    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.engine = EngineIOClientMachine(configuration: .init(handshakeTimeout: configuration.handshakeTimeout))
    }

    /// Replaces the auth object used by the next connect packet (e.g. after a token refresh).
    public mutating func setAuth(_ auth: JSONValue?) { configuration.auth = auth }

    /// Whether the namespace is connected.
    public var isConnected: Bool {
        if case .connected = phase { return true }
        return false
    }

    /// The Engine.IO handshake of the current connection.
    public var handshake: EngineIOHandshake? { engine.handshake }

    /// The ack ids of emitted events still waiting for an answer, ascending.
    public var pendingAckIDs: [Int] { pendingAcks.keys.sorted() }

    /// When the driver must `tick` next: the earliest of the Engine.IO deadline, the connect deadline and the
    /// ack deadlines.
    public var nextDeadline: ContinuousClock.Instant? {
        var deadlines: [ContinuousClock.Instant] = []
        if let engineDeadline = engine.nextDeadline { deadlines.append(engineDeadline) }
        if phase == .connecting, let sent = connectSentAt, let timeout = configuration.connectTimeout {
            deadlines.append(sent + timeout)
        }
        for case let deadline? in pendingAcks.values { deadlines.append(deadline) }
        return deadlines.min()
    }

    /// Emits an event; with `ack` it allocates the next ack id (returned) and tracks it until the answer, the
    /// optional `ackDeadline` or a drop. Throws `notConnected` unless connected.
    public mutating func emit(_ name: String, _ arguments: [JSONValue] = [], ack: Bool = false,
                              ackDeadline: ContinuousClock.Instant? = nil)
        throws(SocketIOClientError) -> (ackID: Int?, outputs: [Output]) {
        try emit(name, binaryArguments: arguments.map(SocketIOValue.json), ack: ack, ackDeadline: ackDeadline)
    }

    /// Emits an event whose arguments may hold binary (sent as `45<n>-…` plus attachment frames).
    public mutating func emit(_ name: String, binaryArguments: [SocketIOValue], ack: Bool = false,
                              ackDeadline: ContinuousClock.Instant? = nil)
        throws(SocketIOClientError) -> (ackID: Int?, outputs: [Output]) {
        guard isConnected else { throw .notConnected }
        var ackID: Int?
        if ack {
            ackID = nextAckID
            nextAckID += 1
            pendingAcks[nextAckID - 1] = .some(ackDeadline)
        }
        let packet = SocketIOPacket.event(name, binaryArguments: binaryArguments, namespace: configuration.namespace,
                                          ackID: ackID)
        return (ackID, packet.frames.map(Output.send))
    }

    /// Answers a server event that carried ack id `id` (once). Throws unless connected and the id is owed.
    public mutating func ack(id: Int, _ arguments: [JSONValue] = []) throws(SocketIOClientError) -> [Output] {
        guard isConnected else { throw .notConnected }
        guard unansweredServerAcks.remove(id) != nil else { throw .unknownAckID(id) }
        return SocketIOPacket.ack(id: id, arguments, namespace: configuration.namespace).frames.map(Output.send)
    }

    /// Advances the machine by one input and returns what the driver must do, in order.
    public mutating func handle(_ input: Input) -> [Output] {
        switch input {
        case .transportOpened(let now):
            var outputs: [Output] = []
            if phase != .idle {
                _ = engine.handle(.transportClosed(reason: "replaced by a new transport"))
                outputs = finish(.engine(.transportClosed("replaced by a new transport")))
            }
            phase = .handshaking
            return outputs + translate(engine.handle(.transportOpened(at: now)), at: now)
        case .frameReceived(let frame, let now):
            return translate(engine.handle(.frameReceived(frame, at: now)), at: now)
        case .tick(let now):
            var outputs = translate(engine.handle(.tick(at: now)), at: now)
            guard phase != .idle else { return outputs }
            if phase == .connecting, let sent = connectSentAt, let timeout = configuration.connectTimeout,
               now >= sent + timeout {
                return outputs + close(.connectTimeout)
            }
            let expired = pendingAcks.compactMap { id, deadline in deadline.flatMap { $0 <= now ? id : nil } }.sorted()
            for id in expired {
                pendingAcks[id] = nil
                outputs.append(.ackFailed(id: id, .timedOut))
            }
            return outputs
        case .transportClosed(let reason):
            return translate(engine.handle(.transportClosed(reason: reason)), at: nil)
        case .disconnectRequested:
            guard phase != .idle else { return [] }
            var outputs: [Output] = []
            if isConnected { outputs += SocketIOPacket.disconnect(namespace: configuration.namespace).frames.map(Output.send) }
            return outputs + close(.clientDisconnect)
        }
    }

    private mutating func resetConnection() {
        assembler.reset()
        connectSentAt = nil
        unansweredServerAcks = []
    }

    /// Closes the engine on our initiative and reports `reason` instead of the engine's.
    private mutating func close(_ reason: SocketIOCloseReason) -> [Output] {
        var outputs: [Output] = []
        for output in engine.handle(.closeRequested) {
            switch output {
            case .send(let frame): outputs.append(.send(frame))
            case .closeTransport: outputs.append(.closeTransport)
            default: break
            }
        }
        return outputs + finish(reason)
    }

    private mutating func finish(_ reason: SocketIOCloseReason) -> [Output] {
        phase = .idle
        resetConnection()
        var outputs: [Output] = pendingAcks.keys.sorted().map { .ackFailed(id: $0, .disconnected) }
        pendingAcks = [:]
        outputs.append(.closed(reason))
        return outputs
    }

    private mutating func translate(_ engineOutputs: [EngineIOClientMachine.Output],
                                    at now: ContinuousClock.Instant?) -> [Output] {
        var outputs: [Output] = []
        for output in engineOutputs {
            guard phase != .idle else { break }
            switch output {
            case .send(let frame): outputs.append(.send(frame))
            case .closeTransport: outputs.append(.closeTransport)
            case .closed(let reason): outputs += finish(.engine(reason))
            case .opened(let handshake):
                phase = .connecting
                connectSentAt = now
                outputs.append(.engineOpened(handshake))
                let connect = SocketIOPacket.connect(namespace: configuration.namespace, auth: configuration.auth)
                outputs += connect.frames.map(Output.send)
            case .deliverText(let text):
                outputs += receive(text: text)
            case .deliverBinary(let data):
                do throws(SocketIOProtocolError) {
                    if let packet = try assembler.add(data) { outputs += dispatch(packet) }
                } catch {
                    outputs += close(.engine(.protocolError(error.description)))
                }
            }
        }
        return outputs
    }

    private mutating func receive(text: String) -> [Output] {
        do throws(SocketIOProtocolError) {
            if assembler.isAwaitingAttachments { throw .expectedAttachment }
            let packet = try SocketIOPacket.decode(text)
            guard packet.namespace == configuration.namespace else { return [] }
            guard let complete = try assembler.begin(packet) else { return [] }
            return dispatch(complete)
        } catch {
            return close(.engine(.protocolError(error.description)))
        }
    }

    private mutating func dispatch(_ packet: SocketIOPacket) -> [Output] {
        switch packet.type {
        case .connect:
            guard phase == .connecting else { return [] }
            let sid = packet.data?["sid"]?.stringValue
            phase = .connected(sid: sid)
            connectSentAt = nil
            return [.connected(sid: sid)]
        case .connectError:
            let message = packet.errorMessage ?? "connect_error"
            return close(.connectError(message: message, data: packet.data?["data"]))
        case .disconnect:
            return close(.serverDisconnect)
        case .event, .binaryEvent:
            guard isConnected, let event = SocketIOEvent(packet: packet) else { return [] }
            if let id = event.ackID { unansweredServerAcks.insert(id) }
            return [.event(event)]
        case .ack, .binaryAck:
            guard let id = packet.ackID, pendingAcks.removeValue(forKey: id) != nil else { return [] }
            return [.ackReceived(id: id, arguments: packet.arguments, attachments: packet.attachments)]
        }
    }
}
