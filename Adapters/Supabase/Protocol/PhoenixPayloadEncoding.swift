/// How a binary user-broadcast frame's payload bytes are encoded (one byte on the wire).
public enum PhoenixPayloadEncoding: UInt8, Sendable, Hashable {
    /// Opaque bytes.
    case binary = 0
    /// UTF-8 JSON text.
    case json = 1
}
