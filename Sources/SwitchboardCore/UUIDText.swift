import Foundation

/// UUID text in the 8-4-4-4-12 hex form, read without Foundation's `UUID(uuidString:)` (which goes through
/// `sscanf`, ~1 µs a call, on paths that check every message's ID).
public enum UUIDText {
    /// The 16 bytes of `text` when it is 36 characters of 8-4-4-4-12 hex digits (either case), else nil.
    public static func bytes(_ text: String) -> [UInt8]? {
        var bytes = [UInt8](repeating: 0, count: 16)
        return scan(text) { bytes[$0] = $1 } ? bytes : nil
    }

    /// Whether `text` is a UUID in the 8-4-4-4-12 hex form (either case).
    public static func isUUID(_ text: String) -> Bool {
        scan(text) { _, _ in }
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

    /// Checks the 8-4-4-4-12 shape, handing each byte's index (0..<16) and value to `byte`; false when `text` is
    /// not a UUID (`byte` may have been called for a prefix then).
    private static func scan(_ text: String, _ byte: (Int, UInt8) -> Void) -> Bool {
        var text = text
        return text.withUTF8 { utf8 in
            guard utf8.count == 36 else { return false }
            var index = 0, output = 0
            while index < 36 {
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard utf8[index] == UInt8(ascii: "-") else { return false }
                    index += 1
                    continue
                }
                guard let high = Hex.nibble(utf8[index]), let low = Hex.nibble(utf8[index + 1]) else { return false }
                byte(output, high << 4 | low)
                output += 1
                index += 2
            }
            return true
        }
    }
}
