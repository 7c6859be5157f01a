import Foundation

/// Splits received bytes into WebSocket frames (RFC 6455 §5.2): a client's frames on our server (masked, which
/// is required), a server's frames on our own TLS client (unmasked, which is required).
///
/// Pure: it never touches a socket. A frame's length is checked against `maxFramePayload` as soon as its header
/// is complete, before any of its payload is buffered, so a header declaring a gigabyte costs nothing. Protocol rules beyond framing (opcodes, fragmentation, UTF-8, close codes) are
/// left to `WebSocketStateMachine`, which receives each frame's first byte and its payload.
struct WebSocketFrameParser: Sendable {
    /// One complete frame: the first header byte (FIN, RSV1-3, opcode) and the unmasked payload.
    struct Frame: Hashable, Sendable {
        var bits: UInt8
        var payload: Data
    }

    /// Why the byte stream cannot be framed.
    struct Violation: Error, Hashable, Sendable {
        var code: WebSocketCloseCode
        var reason: String
    }

    /// The largest single frame payload accepted.
    let maxFramePayload: Int
    /// Whether frames must be masked (a server reading a client) or must not be (a client reading a server).
    let expectsMasked: Bool
    private var buffer: [UInt8] = []
    private var start = 0

    /// A parser that refuses frames whose payload exceeds `maxFramePayload`; by default it reads a server's
    /// (unmasked) frames.
    init(maxFramePayload: Int, expectsMasked: Bool = false) {
        self.maxFramePayload = maxFramePayload
        self.expectsMasked = expectsMasked
    }

    /// Bytes received and not yet consumed by `next()`.
    var bufferedCount: Int { buffer.count - start }

    /// Adds received bytes.
    mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        if start > 0 && start >= buffer.count / 2 {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete frame, `nil` when more bytes are needed, or a violation (wrong masking, oversize).
    mutating func next() throws(Violation) -> Frame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start]
        let second = buffer[start + 1]
        let isMasked = second & 0x80 != 0
        if isMasked != expectsMasked {
            throw Violation(code: .protocolError,
                            reason: expectsMasked ? "the client sent an unmasked frame" : "the server masked a frame")
        }
        var headerLength = 2
        var length = UInt64(second & 0x7F)
        if length == 126 {
            guard available >= 4 else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            headerLength = 4
        } else if length == 127 {
            guard available >= 10 else { return nil }
            length = (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(buffer[start + 2 + $1]) }
            headerLength = 10
            if length >> 63 != 0 { throw Violation(code: .protocolError, reason: "frame length has the top bit set") }
        }
        guard length <= UInt64(maxFramePayload) else {
            throw Violation(code: .messageTooBig, reason: "frame larger than \(maxFramePayload) bytes")
        }
        let maskLength = isMasked ? 4 : 0
        let total = headerLength + maskLength + Int(length)
        guard available >= total else { return nil }
        var payload = Data(buffer[(start + headerLength + maskLength)..<(start + total)])
        if isMasked {
            let key = buffer[(start + headerLength)..<(start + headerLength + 4)].map { $0 }
            payload.withUnsafeMutableBytes { raw in
                for index in raw.indices { raw[index] ^= key[index & 3] }
            }
        }
        start += total
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            start = 0
        }
        return Frame(bits: first, payload: payload)
    }
}
