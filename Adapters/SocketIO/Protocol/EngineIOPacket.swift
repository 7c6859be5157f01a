import Foundation
import SwitchboardCore

/// One WebSocket frame of an Engine.IO connection: text or binary.
public enum EngineIOFrame: Sendable, Hashable {
    /// A text frame (UTF-8).
    case text(String)
    /// A binary frame.
    case binary(Data)

    /// The frame's size in bytes (UTF-8 length for text), as compared with `maxPayload`.
    public var byteCount: Int {
        switch self {
        case .text(let text): return text.utf8.count
        case .binary(let data): return data.count
        }
    }
}

/// The JSON of the Engine.IO open packet: `{"sid","upgrades","pingInterval","pingTimeout","maxPayload"}`.
public struct EngineIOHandshake: Sendable, Hashable {
    /// The session id the server assigned.
    public var sid: String
    /// Transports the connection may upgrade to (always `[]` over WebSocket).
    public var upgrades: [String]
    /// How often the server pings (sent as milliseconds).
    public var pingInterval: Duration
    /// How long the server waits for the pong (sent as milliseconds).
    public var pingTimeout: Duration
    /// The largest payload in bytes the server accepts.
    public var maxPayload: Int

    /// A handshake; the defaults are those of `WIRE.md` (and engine.io/python-engineio): 25 s, 20 s, 1,000,000.
    public init(sid: String, upgrades: [String] = [], pingInterval: Duration = .seconds(25),
                pingTimeout: Duration = .seconds(20), maxPayload: Int = 1_000_000) {
        self.sid = sid
        self.upgrades = upgrades
        self.pingInterval = pingInterval
        self.pingTimeout = pingTimeout
        self.maxPayload = maxPayload
    }

    /// `pingInterval` in milliseconds.
    public var pingIntervalMilliseconds: Int { pingInterval.wholeMilliseconds }
    /// `pingTimeout` in milliseconds.
    public var pingTimeoutMilliseconds: Int { pingTimeout.wholeMilliseconds }

    /// The JSON object in the order engine.io sends it: sid, upgrades, pingInterval, pingTimeout, maxPayload.
    public var json: JSONValue {
        [
            "sid": .string(sid),
            "upgrades": .array(upgrades.map(JSONValue.string)),
            "pingInterval": .int(Int64(pingIntervalMilliseconds)),
            "pingTimeout": .int(Int64(pingTimeoutMilliseconds)),
            "maxPayload": .int(Int64(maxPayload)),
        ]
    }

    /// Decodes the open packet's JSON text; `maxPayload` defaults to 1,000,000 when absent (older servers).
    public static func decode(_ text: String) throws(EngineIOProtocolError) -> EngineIOHandshake {
        guard let json = JSONValue.parseOrNil(text) else { throw .invalidHandshake("not JSON") }
        return try decode(json)
    }

    /// Decodes the open packet's JSON value.
    public static func decode(_ json: JSONValue) throws(EngineIOProtocolError) -> EngineIOHandshake {
        guard json.members != nil else { throw .invalidHandshake("not an object") }
        guard let sid = json["sid"]?.stringValue, !sid.isEmpty else { throw .invalidHandshake("sid must be a string") }
        var upgrades: [String] = []
        if let value = json["upgrades"], !value.isNull {
            guard let elements = value.arrayValue else { throw .invalidHandshake("upgrades must be an array") }
            for element in elements {
                guard let name = element.stringValue else { throw .invalidHandshake("upgrades must be strings") }
                upgrades.append(name)
            }
        }
        func milliseconds(_ key: String) throws(EngineIOProtocolError) -> Int64 {
            guard let value = json[key]?.intValue, value >= 0, value <= Int64(Int32.max) else {
                throw .invalidHandshake("\(key) must be a non-negative integer")
            }
            return value
        }
        let interval = try milliseconds("pingInterval")
        let timeout = try milliseconds("pingTimeout")
        var maxPayload = 1_000_000
        if let value = json["maxPayload"], !value.isNull {
            guard let limit = value.intValue, limit >= 0, let fitting = Int(exactly: limit) else {
                throw .invalidHandshake("maxPayload must be a non-negative integer")
            }
            maxPayload = fitting
        }
        return EngineIOHandshake(sid: sid, upgrades: upgrades, pingInterval: .milliseconds(interval),
                                 pingTimeout: .milliseconds(timeout), maxPayload: maxPayload)
    }
}

/// One Engine.IO v4 packet as carried by the WebSocket transport (one packet per frame).
public enum EngineIOPacket: Sendable, Hashable {
    /// `0{json}`: the server's handshake.
    case open(EngineIOHandshake)
    /// `1`: either side closes the session.
    case close
    /// `2[data]`: the server's heartbeat (`2probe` only during upgrades).
    case ping(String?)
    /// `3[data]`: the answer to a ping, echoing its data.
    case pong(String?)
    /// `4<text>`: a text message (a Socket.IO packet).
    case message(String)
    /// A binary frame: a binary message (a Socket.IO attachment).
    case binaryMessage(Data)
    /// `5`: upgrade completed (polling → WebSocket; unused by WebSocket-only sessions).
    case upgrade
    /// `6`: no-op.
    case noop

    /// The frame carrying this packet.
    public var encoded: EngineIOFrame {
        switch self {
        case .open(let handshake): return .text("0" + handshake.json.serialized)
        case .close: return .text("1")
        case .ping(let data): return .text("2" + (data ?? ""))
        case .pong(let data): return .text("3" + (data ?? ""))
        case .message(let text): return .text("4" + text)
        case .binaryMessage(let data): return .binary(data)
        case .upgrade: return .text("5")
        case .noop: return .text("6")
        }
    }

    /// Decodes one frame. Binary frames are binary messages; a `b<base64>` text frame (the polling encoding of
    /// binary) is accepted as a binary message too. Empty ping/pong data decodes as nil.
    public static func decode(_ frame: EngineIOFrame) throws(EngineIOProtocolError) -> EngineIOPacket {
        switch frame {
        case .binary(let data):
            return .binaryMessage(data)
        case .text(let text):
            guard let first = text.unicodeScalars.first else { throw .emptyPacket }
            let rest = String(text.unicodeScalars.dropFirst())
            switch first {
            case "0": return .open(try EngineIOHandshake.decode(rest))
            case "1": return .close
            case "2": return .ping(rest.isEmpty ? nil : rest)
            case "3": return .pong(rest.isEmpty ? nil : rest)
            case "4": return .message(rest)
            case "5": return .upgrade
            case "6": return .noop
            case "b":
                guard let data = Data(base64Encoded: rest) else { throw .invalidBase64 }
                return .binaryMessage(data)
            default: throw .unknownPacketType(String(first))
            }
        }
    }
}
