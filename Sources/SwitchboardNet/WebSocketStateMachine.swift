import Foundation

/// WebSocket opcodes (RFC 6455 §5.2).
enum WebSocketOpcode {
    static let continuation: UInt8 = 0x0
    static let text: UInt8 = 0x1
    static let binary: UInt8 = 0x2
    static let close: UInt8 = 0x8
    static let ping: UInt8 = 0x9
    static let pong: UInt8 = 0xA
}

/// A frame to write, as civetweb's `mg_websocket_write` / `mg_websocket_client_write` take it.
struct WebSocketOutgoingFrame: Hashable, Sendable {
    var opcode: UInt8
    var payload: Data

    /// A close frame carrying `code` and `reason` (cut to 123 bytes on a character boundary); 1005 gives an empty payload.
    static func close(code: WebSocketCloseCode, reason: String) -> WebSocketOutgoingFrame {
        WebSocketOutgoingFrame(opcode: WebSocketOpcode.close, payload: WebSocketClosePayload.encode(code: code, reason: reason))
    }
}

/// Turns a frame into wire bytes (RFC 6455 §5.2): FIN set, 7/16/64-bit length, optional mask.
///
/// We frame ourselves instead of calling `mg_websocket_write` / `mg_websocket_client_write`, which send the header
/// and the payload in two `send` calls; on the client side (where civetweb never sets `TCP_NODELAY`) that costs a
/// Nagle/delayed-ACK stall of about 40 ms per frame. One buffer, one `mg_write`.
enum WebSocketFrameEncoder {
    /// The frame's bytes; `maskingKey` (clients must mask) is applied to the payload.
    static func encode(_ frame: WebSocketOutgoingFrame, maskingKey: UInt32?) -> Data {
        let count = frame.payload.count
        var bytes: [UInt8] = [0x80 | (frame.opcode & 0x0F)]
        bytes.reserveCapacity(count + 14)
        let maskBit: UInt8 = maskingKey == nil ? 0 : 0x80
        if count < 126 {
            bytes.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            bytes.append(maskBit | 126)
            bytes.append(contentsOf: [UInt8(count >> 8), UInt8(count & 0xFF)])
        } else {
            bytes.append(maskBit | 127)
            bytes.append(contentsOf: (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(count) >> ($0 * 8)) })
        }
        guard let maskingKey else {
            bytes.append(contentsOf: frame.payload)
            return Data(bytes)
        }
        let mask = (0..<4).reversed().map { UInt8(truncatingIfNeeded: maskingKey >> ($0 * 8)) }
        bytes.append(contentsOf: mask)
        let start = bytes.count
        bytes.append(contentsOf: frame.payload)
        for index in 0..<count { bytes[start + index] ^= mask[index & 3] }
        return Data(bytes)
    }
}

/// Encoding and decoding of close-frame payloads: a big-endian code and a UTF-8 reason.
enum WebSocketClosePayload {
    /// The problem found in a received close payload.
    struct Violation: Error, Hashable {
        var code: WebSocketCloseCode
        var reason: String
    }

    /// `code` followed by `reason`, at most 125 bytes; `.noStatusReceived` (or any code not valid on the wire) gives an empty payload.
    static func encode(code: WebSocketCloseCode, reason: String) -> Data {
        guard code.isValidOnTheWire else { return Data() }
        var data = Data([UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)])
        var utf8Count = 0
        var kept = ""
        for character in reason {
            let size = String(character).utf8.count
            guard utf8Count + size <= 123 else { break }
            utf8Count += size
            kept.append(character)
        }
        data.append(contentsOf: Array(kept.utf8))
        return data
    }

    /// The code and reason in a received payload, or the violation that must close the connection.
    static func decode(_ payload: Data) -> Result<(code: WebSocketCloseCode, reason: String), Violation> {
        let bytes = [UInt8](payload)
        if bytes.isEmpty { return .success((.noStatusReceived, "")) }
        guard bytes.count >= 2 else {
            return .failure(Violation(code: .protocolError, reason: "close payload of 1 byte"))
        }
        let code = WebSocketCloseCode(rawValue: UInt16(bytes[0]) << 8 | UInt16(bytes[1]))
        guard code.isValidOnTheWire else {
            return .failure(Violation(code: .protocolError, reason: "invalid close code \(code.rawValue)"))
        }
        guard let reason = String(validating: bytes[2...], as: UTF8.self) else {
            return .failure(Violation(code: .invalidPayloadData, reason: "close reason is not UTF-8"))
        }
        return .success((code, reason))
    }
}

/// The WebSocket protocol rules civetweb 1.15 leaves to the application, as a pure state machine:
/// frame validation (reserved bits and opcodes, control-frame rules, fragmentation order, UTF-8, size limit),
/// message reassembly, ping replies and the closing handshake. It never touches a socket.
struct WebSocketStateMachine: Sendable {
    /// Where the closing handshake stands.
    enum Phase: Hashable, Sendable {
        /// Messages flow both ways.
        case open
        /// We sent a close frame and wait for the peer's.
        case closeSent
        /// Both close frames were exchanged, the connection failed, or it ended.
        case closed
    }

    /// What the caller must do after an input.
    struct Reaction: Hashable, Sendable {
        /// Frames to hand to the application, in order.
        var deliver: [WebSocketFrame] = []
        /// A frame to write back at once (pong, close echo, or a failure's close frame).
        var reply: WebSocketOutgoingFrame?
        /// The payload of a pong that arrived (to match against pending pings).
        var pong: Data?
        /// `false` when the connection must stop reading and close now.
        var keepReading = true
    }

    /// The current phase.
    private(set) var phase: Phase = .open
    /// The largest message (after reassembly) accepted; bigger ones close with 1009.
    let maxMessageSize: Int
    private var fragmentOpcode: UInt8?
    private var fragments = Data()
    private var closeDelivered = false

    /// A machine for a new, open connection.
    init(maxMessageSize: Int) {
        self.maxMessageSize = maxMessageSize
    }

    /// Whether application messages may still be sent.
    var canSend: Bool { phase == .open }

    /// Handles one received frame: `bits` is its first byte (FIN, RSV1-3, opcode) as civetweb passes it.
    mutating func frameReceived(bits: UInt8, payload: Data) -> Reaction {
        guard phase != .closed else { return Reaction(keepReading: false) }
        let isFinal = bits & 0x80 != 0
        let opcode = bits & 0x0F
        if bits & 0x70 != 0 { return fail(.protocolError, "reserved bits set without an extension") }

        switch opcode {
        case WebSocketOpcode.close:
            guard isFinal else { return fail(.protocolError, "fragmented control frame") }
            guard payload.count <= 125 else { return fail(.protocolError, "control frame longer than 125 bytes") }
            return closeReceived(payload)
        case WebSocketOpcode.ping:
            guard isFinal else { return fail(.protocolError, "fragmented control frame") }
            guard payload.count <= 125 else { return fail(.protocolError, "control frame longer than 125 bytes") }
            guard phase == .open else { return Reaction() }
            return Reaction(reply: WebSocketOutgoingFrame(opcode: WebSocketOpcode.pong, payload: payload))
        case WebSocketOpcode.pong:
            guard isFinal else { return fail(.protocolError, "fragmented control frame") }
            guard payload.count <= 125 else { return fail(.protocolError, "control frame longer than 125 bytes") }
            return Reaction(pong: payload)
        case WebSocketOpcode.text, WebSocketOpcode.binary:
            guard fragmentOpcode == nil else { return fail(.protocolError, "new message before the last one ended") }
            guard payload.count <= maxMessageSize else { return fail(.messageTooBig, "message larger than \(maxMessageSize) bytes") }
            if isFinal { return complete(opcode: opcode, payload) }
            fragmentOpcode = opcode
            fragments = payload
            return Reaction()
        case WebSocketOpcode.continuation:
            guard let opcode = fragmentOpcode else { return fail(.protocolError, "continuation frame without a message") }
            guard fragments.count + payload.count <= maxMessageSize else {
                return fail(.messageTooBig, "message larger than \(maxMessageSize) bytes")
            }
            fragments.append(payload)
            guard isFinal else { return Reaction() }
            let message = fragments
            fragmentOpcode = nil
            fragments = Data()
            return complete(opcode: opcode, message)
        default:
            return fail(.protocolError, "reserved opcode \(opcode)")
        }
    }

    /// The application asks to close: the close frame to send, or `nil` when a close was already sent or the connection ended.
    mutating func closeRequested(code: WebSocketCloseCode, reason: String) -> WebSocketOutgoingFrame? {
        guard phase == .open else { return nil }
        phase = .closeSent
        return .close(code: code, reason: reason)
    }

    /// The transport ended: the `.close` frame to deliver if the application has not seen one yet (1006, or the code we sent).
    mutating func connectionEnded() -> WebSocketFrame? {
        phase = .closed
        guard !closeDelivered else { return nil }
        closeDelivered = true
        return .close(code: .abnormalClosure, reason: "connection ended without a close frame")
    }

    private mutating func complete(opcode: UInt8, _ payload: Data) -> Reaction {
        guard phase == .open else { return Reaction() }
        if opcode == WebSocketOpcode.binary { return Reaction(deliver: [.binary(payload)]) }
        guard let text = String(validating: payload, as: UTF8.self) else {
            return fail(.invalidPayloadData, "text message is not UTF-8")
        }
        return Reaction(deliver: [.text(text)])
    }

    private mutating func closeReceived(_ payload: Data) -> Reaction {
        switch WebSocketClosePayload.decode(payload) {
        case .failure(let violation):
            return fail(violation.code, violation.reason)
        case .success(let (code, reason)):
            let wasOpen = phase == .open
            phase = .closed
            closeDelivered = true
            // Echo the code (RFC 6455 §5.5.1) unless we already sent our own close frame.
            let echo: WebSocketOutgoingFrame? = wasOpen ? .close(code: code, reason: "") : nil
            return Reaction(deliver: [.close(code: code, reason: reason)], reply: echo, keepReading: false)
        }
    }

    private mutating func fail(_ code: WebSocketCloseCode, _ reason: String) -> Reaction {
        let wasOpen = phase == .open
        phase = .closed
        fragmentOpcode = nil
        fragments = Data()
        var reaction = Reaction(keepReading: false)
        if wasOpen { reaction.reply = .close(code: code, reason: reason) }
        if !closeDelivered {
            closeDelivered = true
            reaction.deliver = [.close(code: code, reason: reason)]
        }
        return reaction
    }
}
