import Foundation

/// Time-ordered UUIDs (RFC 9562 version 7): 48 bits of Unix milliseconds, a 12-bit counter that keeps IDs minted
/// by this process strictly increasing within a millisecond, and 62 random bits.
///
/// Fresh IDs that sort by creation time land at the right edge of every B-tree that indexes them (the store's
/// primary keys and ID map here, PostgreSQL's primary keys on a server), so a burst of new rows dirties a few
/// pages instead of one page per row; random version-4 IDs scatter them over the whole index.
public enum UUIDv7 {
    /// The process-wide generator `make()` uses.
    public static let shared = UUIDv7Generator()

    /// A fresh lowercase UUIDv7 text from the shared generator, greater than every one it minted before.
    public static func make() -> String { shared.make(millis: UInt64(max(0, Date().timeIntervalSince1970 * 1000))) }

    /// The milliseconds since 1970 a UUIDv7 text carries, or nil when `text` is not a version-7 UUID.
    public static func millis(of text: String) -> UInt64? {
        guard let bytes = UUIDText.bytes(text), bytes[6] >> 4 == 7, bytes[8] >> 6 == 2 else { return nil }
        return bytes[0..<6].reduce(0) { $0 << 8 | UInt64($1) }
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// `8-4-4-4-12` lowercase hex of 16 bytes.
    static func format(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: 36) { buffer in
            var position = 0
            for (index, byte) in bytes.enumerated() {
                if index == 4 || index == 6 || index == 8 || index == 10 { buffer[position] = UInt8(ascii: "-"); position += 1 }
                buffer[position] = digits[Int(byte >> 4)]
                buffer[position + 1] = digits[Int(byte & 0x0F)]
                position += 2
            }
            return position
        }
    }
}

/// Mints strictly increasing UUIDv7s; one generator per process keeps every ID it mints in creation order.
public final class UUIDv7Generator: Sendable {
    private struct State {
        var millis: UInt64 = 0
        var counter: UInt16 = 0
    }

    private let state = Locked(State())

    /// A generator that has minted nothing yet.
    public init() {}

    /// A fresh UUIDv7 for the clock reading `millis` (milliseconds since 1970); later than every earlier one even
    /// when the clock steps back or more than 4,096 IDs are minted in one millisecond (the timestamp then runs
    /// ahead of the clock until it catches up).
    public func make(millis: UInt64) -> String {
        var random = SystemRandomNumberGenerator()
        let (stamp, counter) = state.withLock { state -> (UInt64, UInt16) in
            if millis > state.millis {
                state.millis = millis
                // Start low in the counter's range so a busy millisecond rarely has to borrow the next one.
                state.counter = UInt16.random(in: 0..<0x400, using: &random)
            } else if state.counter < 0xFFF {
                state.counter += 1
            } else {
                state.millis += 1
                state.counter = 0
            }
            return (state.millis, state.counter)
        }
        let tail = random.next() as UInt64
        var bytes = [UInt8](repeating: 0, count: 16)
        for index in 0..<6 { bytes[index] = UInt8(truncatingIfNeeded: stamp >> UInt64(40 - 8 * index)) }
        bytes[6] = 0x70 | UInt8(truncatingIfNeeded: counter >> 8)
        bytes[7] = UInt8(truncatingIfNeeded: counter)
        for index in 8..<16 { bytes[index] = UInt8(truncatingIfNeeded: tail >> UInt64(56 - 8 * (index - 8))) }
        bytes[8] = 0x80 | (bytes[8] & 0x3F)
        return UUIDv7.format(bytes)
    }
}
