/// # SocketIOProtocol — the pure Engine.IO v4 / Socket.IO v5 layer
///
/// Everything in this module is pure: no sockets, no threads, and no clock is ever read. Drivers feed the
/// machines inputs stamped with `ContinuousClock.Instant`s they read themselves, carry out the outputs, and
/// call `tick(at:)`/`.tick(at:)` when `nextDeadline` passes. Only the WebSocket transport is modelled (one
/// Engine.IO packet per WebSocket frame; binary frames are raw binary messages), as `WIRE.md` requires.
///
/// Layers, bottom up:
/// - `EngineIOFrame` / `EngineIOPacket` / `EngineIOHandshake`: the Engine.IO v4 packet codec
///   (`0{open}`, `1`, `2`, `3`, `4<text>`, binary frames, `5`, `6`).
/// - `SocketIOPacket`: the Socket.IO v5 text codec `<type>[<attachments>-][<nsp>,][<id>][<json>]`.
/// - `SocketIOValue`, `SocketIOBinary`, `SocketIOBinaryAssembler`: binary arguments. `JSONValue` has no bytes
///   case, so binary travels as JSON with `{"_placeholder":true,"num":n}` objects plus a separate `[Data]`
///   list (`SocketIOPacket.attachments`); `SocketIOValue` is the argument tree with real `.binary(Data)` leaves.
/// - Client side: `EngineIOClientMachine` (handshake timeout, ping → pong, dead-connection detection) and,
///   on top of it, `SocketIOClientMachine` (namespace connect with auth, events, acks with deadlines,
///   disconnects); `ReconnectBackoff` gives socket.io-client's reconnect delays.
/// - Server side: `EngineIOServerSession` (open packet, ping schedule, pong timeout, payload limit) and
///   `SocketIOServerConnection` (client packets → `SocketIOServerDecision`s, answer frames).
///
/// The interop peer is python-socketio 5.x / python-engineio 4.x; wire details follow it and the
/// socketio/engine.io-protocol and socket.io-protocol specifications.
public enum SocketIOProtocol {
    /// The Engine.IO protocol revision carried as `EIO=4` in the query string.
    public static let engineIOVersion = 4
    /// The default HTTP path of the endpoint.
    public static let defaultPath = "/socket.io/"
    /// The query string of a WebSocket-only connection: `EIO=4&transport=websocket`.
    public static let webSocketQuery = "EIO=\(engineIOVersion)&transport=websocket"
}

/// Why an Engine.IO frame could not be decoded.
public enum EngineIOProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A text frame with no characters (there is no packet type).
    case emptyPacket
    /// The first character is not a packet type `0`–`6` (nor `b` for base64 binary).
    case unknownPacketType(String)
    /// The open packet's JSON is missing or malformed; the text says what is wrong.
    case invalidHandshake(String)
    /// A `b`-prefixed text frame whose payload is not base64.
    case invalidBase64
    /// A frame larger than the negotiated maximum payload, in bytes.
    case payloadTooLarge(size: Int, limit: Int)

    /// A human-readable explanation.
    public var description: String {
        switch self {
        case .emptyPacket: return "empty Engine.IO packet"
        case .unknownPacketType(let type): return "unknown Engine.IO packet type \"\(type)\""
        case .invalidHandshake(let why): return "invalid Engine.IO open packet: \(why)"
        case .invalidBase64: return "invalid base64 in Engine.IO binary packet"
        case .payloadTooLarge(let size, let limit): return "Engine.IO payload of \(size) bytes exceeds \(limit)"
        }
    }
}

/// Why a Socket.IO packet (or its binary attachments) could not be decoded.
public enum SocketIOProtocolError: Error, Sendable, Hashable, CustomStringConvertible {
    /// An empty packet text.
    case emptyPacket
    /// The first character is not a packet type `0`–`6`.
    case unknownPacketType(String)
    /// The `<n>-` attachment count of a binary packet is missing, malformed or above the limit.
    case invalidAttachmentCount(String)
    /// The ack id is not a non-negative integer that fits in `Int`.
    case invalidAckID(String)
    /// The payload is not valid JSON.
    case invalidJSON(String)
    /// The payload is JSON but not of the shape the packet type needs (e.g. an event that is not an array).
    case invalidPayload(String)
    /// A binary attachment arrived when none was expected, or a text packet arrived mid-assembly.
    case unexpectedAttachment
    /// A text packet arrived while binary attachments were still expected.
    case expectedAttachment
    /// A placeholder refers to an attachment that does not exist.
    case invalidPlaceholder(String)
    /// A binary packet (`5`/`6`) on a namespace the client has not joined (server side).
    case notConnected(String)
    /// A binary packet over the server's attachment count or byte limit; the text says which.
    case limitExceeded(String)

    /// A human-readable explanation.
    public var description: String {
        switch self {
        case .emptyPacket: return "empty Socket.IO packet"
        case .unknownPacketType(let type): return "unknown Socket.IO packet type \"\(type)\""
        case .invalidAttachmentCount(let why): return "invalid attachment count: \(why)"
        case .invalidAckID(let why): return "invalid ack id: \(why)"
        case .invalidJSON(let why): return "invalid JSON payload: \(why)"
        case .invalidPayload(let why): return "invalid payload: \(why)"
        case .unexpectedAttachment: return "unexpected binary attachment"
        case .expectedAttachment: return "expected a binary attachment, got a text packet"
        case .invalidPlaceholder(let why): return "invalid binary placeholder: \(why)"
        case .notConnected(let namespace): return "binary packet on namespace \(namespace) which is not connected"
        case .limitExceeded(let why): return "binary packet too large: \(why)"
        }
    }
}

extension Duration {
    /// The duration in whole milliseconds (truncated), as Engine.IO's handshake carries it.
    var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(seconds) * 1000 + Int(attoseconds / 1_000_000_000_000_000)
    }
}
