/// Reads structured choices out of fuzz bytes: single bytes, small numbers and length-prefixed chunks.
///
/// Past the end every read answers zero or empty, so any byte string is a valid program for a target.
struct FuzzInput {
    private let bytes: [UInt8]
    private var index = 0

    /// A reader over `bytes`.
    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Whether every byte was read.
    var isAtEnd: Bool { index >= bytes.count }

    /// The next byte, 0 past the end.
    mutating func byte() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    /// A chunk: one length byte, then that many bytes (fewer at the end).
    mutating func chunk() -> [UInt8] {
        let count = Int(byte())
        let end = min(bytes.count, index + count)
        defer { index = end }
        return index < end ? Array(bytes[index..<end]) : []
    }

    /// A chunk as UTF-8 text (invalid sequences replaced).
    mutating func text() -> String { String(decoding: chunk(), as: UTF8.self) }

    /// Everything not read yet.
    mutating func rest() -> [UInt8] {
        defer { index = bytes.count }
        return index < bytes.count ? Array(bytes[index...]) : []
    }
}

/// Splits `bytes` at each `separator` byte (empty pieces kept).
func split(_ bytes: [UInt8], at separator: UInt8) -> [[UInt8]] {
    bytes.split(separator: separator, omittingEmptySubsequences: false).map(Array.init)
}
