import Foundation

/// A complete WebSocket message, or the close frame that ends the stream (pings and pongs are answered for you).
public enum WebSocketFrame: Sendable, Hashable {
    /// A text message (fragments already joined, UTF-8 checked).
    case text(String)
    /// A binary message (fragments already joined).
    case binary(Data)
    /// The peer's close frame, or `.abnormalClosure` (1006) when the connection dropped without one; always last.
    case close(code: WebSocketCloseCode, reason: String)
}

extension WebSocketFrame {
    /// Text and binary messages as (opcode, payload) pairs for a batched send; a `.close` throws `invalidArgument`.
    static func wireMessages(_ messages: [WebSocketFrame]) throws -> [(opcode: UInt8, payload: Data)] {
        try messages.map { message in
            switch message {
            case .text(let text): (WebSocketOpcode.text, Data(text.utf8))
            case .binary(let data): (WebSocketOpcode.binary, data)
            case .close: throw WebSocketError(.invalidArgument, "a close frame cannot be batched; use close(code:reason:)")
            }
        }
    }
}

/// A WebSocket close status code (RFC 6455 §7.4); any `UInt16` can be expressed, `isValidOnTheWire` says if it may be sent.
public struct WebSocketCloseCode: RawRepresentable, Hashable, Sendable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    /// The numeric code.
    public let rawValue: UInt16

    /// Wraps a numeric code.
    public init(rawValue: UInt16) { self.rawValue = rawValue }
    /// Wraps a numeric literal.
    public init(integerLiteral value: UInt16) { self.init(rawValue: value) }

    /// The number, with its RFC name when it has one.
    public var description: String {
        let names: [UInt16: String] = [
            1000: "normal closure", 1001: "going away", 1002: "protocol error", 1003: "unsupported data",
            1005: "no status received", 1006: "abnormal closure", 1007: "invalid payload data",
            1008: "policy violation", 1009: "message too big", 1010: "mandatory extension",
            1011: "internal error", 1012: "service restart", 1013: "try again later", 1014: "bad gateway",
            1015: "TLS handshake failure",
        ]
        return names[rawValue].map { "\(rawValue) (\($0))" } ?? "\(rawValue)"
    }

    /// Whether the code may appear in a close frame: 1000–1003, 1007–1014 or 3000–4999.
    public var isValidOnTheWire: Bool {
        switch rawValue {
        case 1000...1003, 1007...1014, 3000...4999: true
        default: false
        }
    }

    /// 1000: the purpose of the connection was fulfilled.
    public static let normalClosure: WebSocketCloseCode = 1000
    /// 1001: the endpoint is going away (server shutdown, page navigation).
    public static let goingAway: WebSocketCloseCode = 1001
    /// 1002: the peer broke the protocol.
    public static let protocolError: WebSocketCloseCode = 1002
    /// 1003: a message type the endpoint cannot accept.
    public static let unsupportedData: WebSocketCloseCode = 1003
    /// 1005: the close frame carried no code (never sent on the wire).
    public static let noStatusReceived: WebSocketCloseCode = 1005
    /// 1006: the connection ended without a close frame (never sent on the wire).
    public static let abnormalClosure: WebSocketCloseCode = 1006
    /// 1007: a text message was not valid UTF-8.
    public static let invalidPayloadData: WebSocketCloseCode = 1007
    /// 1008: a message violated the endpoint's policy.
    public static let policyViolation: WebSocketCloseCode = 1008
    /// 1009: a message was larger than the endpoint accepts.
    public static let messageTooBig: WebSocketCloseCode = 1009
    /// 1011: the server hit an unexpected condition.
    public static let internalError: WebSocketCloseCode = 1011
}

/// A WebSocket failure: a stable code plus a human-readable message.
public struct WebSocketError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The code's name.
        public var description: String { name }

        /// The URL is not a usable `ws://` or `wss://` URL.
        public static let invalidURL = Code("invalidURL")
        /// A header name or value cannot be sent (empty name, CR, LF or NUL).
        public static let invalidHeader = Code("invalidHeader")
        /// The TCP connection, TLS or the opening handshake failed.
        public static let connectFailed = Code("connectFailed")
        /// `connect` was called twice on the same client.
        public static let alreadyConnected = Code("alreadyConnected")
        /// The client is not connected yet.
        public static let notConnected = Code("notConnected")
        /// The connection is closing or closed, so nothing more can be sent.
        public static let connectionClosed = Code("connectionClosed")
        /// A ping was not answered in time.
        public static let timedOut = Code("timedOut")
        /// The request cannot be served with civetweb 1.15 (for example `wss://` without trusted certificates).
        public static let unsupported = Code("unsupported")
        /// A control-frame payload is longer than 125 bytes.
        public static let payloadTooLarge = Code("payloadTooLarge")
        /// The call's arguments cannot be sent as given (a close frame in a batch of messages).
        public static let invalidArgument = Code("invalidArgument")
    }

    /// The kind of failure.
    public let code: Code
    /// Details for people (never contains header values).
    public let message: String

    /// Makes an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "WebSocketError.\(code): \(message)" }
}
