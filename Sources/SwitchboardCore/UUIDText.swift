import Foundation

/// UUID text in the 8-4-4-4-12 hex form, read without Foundation's `UUID(uuidString:)` (which goes through
/// `sscanf`, ~1 µs a call, on paths that check every message's ID).
public enum UUIDText {
    /// The 16 bytes of `text` when it is 36 characters of 8-4-4-4-12 hex digits (either case), else nil.
    public static func bytes(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { utf8 -> [UInt8]? in
            guard utf8.count == 36 else { return nil }
            var bytes = [UInt8](repeating: 0, count: 16)
            var index = 0, output = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard utf8[index] == UInt8(ascii: "-") else { return nil }
                    index += 1
                    continue
                }
                guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
                bytes[output] = high << 4 | low
                output += 1
                index += 2
            }
            return bytes
        }
    }

    /// Whether `text` is a UUID in the 8-4-4-4-12 hex form (either case).
    public static func isUUID(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.count == 36 else { return false }
            for (index, byte) in utf8.enumerated() {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return false }
                } else if nibble(byte) == nil {
                    return false
                }
            }
            return true
        }
    }

    /// Whether `text` is a UUID in the canonical form: 8-4-4-4-12 lowercase hex digits.
    public static func isCanonical(_ text: String) -> Bool {
        isUUID(text) && !text.utf8.contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "F") }
    }

    /// `text` in the canonical lowercase form when it is a UUID in the 8-4-4-4-12 hex form, else nil.
    public static func canonical(_ text: String) -> String? {
        guard isUUID(text) else { return nil }
        return isCanonical(text) ? text : text.lowercased()
    }

    /// The value of one hex digit.
    @inline(__always)
    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
