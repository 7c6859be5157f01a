/// A bounds-checked cursor over a binary frame.
struct PhoenixByteReader {
    /// The frame.
    private let bytes: [UInt8]
    /// The next unread index.
    private(set) var offset = 0

    /// A reader at the start of `bytes`.
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// The next byte.
    mutating func byte() throws(PhoenixFrameError) -> UInt8 {
        guard offset < bytes.count else { throw .invalidBinary("frame truncated") }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The next `count` bytes.
    mutating func take(_ count: Int) throws(PhoenixFrameError) -> [UInt8] {
        guard count <= bytes.count - offset else { throw .invalidBinary("frame truncated") }
        defer { offset += count }
        return Array(bytes[offset..<offset + count])
    }

    /// The next `count` bytes as UTF-8 text.
    mutating func text(_ count: Int, _ name: String) throws(PhoenixFrameError) -> String {
        let raw = try take(count)
        guard let text = String(validating: raw, as: UTF8.self) else { throw .invalidBinary("\(name) is not UTF-8") }
        return text
    }

    /// Everything not yet read.
    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return Array(bytes[offset...])
    }

    /// A one-byte length for `field`, or an error if it exceeds 255.
    static func length(_ field: [UInt8], _ name: String) throws(PhoenixFrameError) -> UInt8 {
        guard field.count <= 255 else { throw .fieldTooLong(name) }
        return UInt8(field.count)
    }
}
