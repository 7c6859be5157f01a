/// Standard base64 (RFC 4648 §4), shared by every module that writes or reads it.
public enum Base64 {
    /// The 64 digits in order.
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// Padded base64 of `bytes`.
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        var out: [UInt8] = []
        append(bytes, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the padded base64 of `bytes` to `out` (ASCII digits only: safe inside a JSON string as is).
    public static func append(_ bytes: some Collection<UInt8>, to out: inout [UInt8]) {
        let bytes = Array(bytes)
        out.reserveCapacity(out.count + (bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let b0 = bytes[index], b1 = index + 1 < bytes.count ? bytes[index + 1] : 0, b2 = index + 2 < bytes.count ? bytes[index + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
            out.append(index + 1 < bytes.count ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(index + 2 < bytes.count ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
    }

    /// Each byte's digit value in the standard alphabet, 0xFF for bytes that are not digits.
    private static let standardValues: [UInt8] = values(for: alphabet)

    /// Like `standardValues`, but `-` and `_` also stand for 62 and 63 (the URL-safe alphabet).
    private static let lenientValues: [UInt8] = {
        var table = values(for: alphabet)
        table[Int(UInt8(ascii: "-"))] = 62
        table[Int(UInt8(ascii: "_"))] = 63
        return table
    }()

    /// A 256-entry table mapping each digit of `digits` to its value.
    private static func values(for digits: [UInt8]) -> [UInt8] {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (value, digit) in digits.enumerated() { table[Int(digit)] = UInt8(value) }
        return table
    }

    /// The bytes of padded standard base64 text, or nil when it is not exactly that.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(Array(text.utf8), table: standardValues)
    }

    /// The bytes of standard or URL-safe base64 text with padding optional (as protobuf JSON readers accept it),
    /// or nil when it is malformed.
    public static func decodeLenient(_ text: some StringProtocol) -> [UInt8]? {
        var chars = Array(text.utf8)
        guard !chars.contains(UInt8(ascii: "=")) || chars.count % 4 == 0 else { return nil }
        while chars.count % 4 != 0 { chars.append(UInt8(ascii: "=")) }
        return decode(chars, table: lenientValues)
    }

    /// Decodes padded base64 `chars` whose digits `table` maps to values; nil when malformed.
    private static func decode(_ chars: [UInt8], table: [UInt8]) -> [UInt8]? {
        guard chars.count % 4 == 0 else { return nil }
        var padding = 0
        if chars.last == UInt8(ascii: "=") { padding += 1 }
        if chars.count >= 2, chars[chars.count - 2] == UInt8(ascii: "=") {
            guard padding == 1 else { return nil }
            padding += 1
        }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var index = 0
        while index < chars.count {
            var quad: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
            for offset in 0..<4 {
                let position = index + offset
                let value: UInt8
                if position >= chars.count - padding {
                    value = 0
                } else {
                    value = table[Int(chars[position])]
                    guard value != 0xFF else { return nil }
                }
                switch offset {
                case 0: quad.0 = value
                case 1: quad.1 = value
                case 2: quad.2 = value
                default: quad.3 = value
                }
            }
            out.append(quad.0 << 2 | quad.1 >> 4)
            out.append((quad.1 & 0x0F) << 4 | quad.2 >> 2)
            out.append((quad.2 & 0x03) << 6 | quad.3)
            index += 4
        }
        out.removeLast(padding)
        return out
    }
}
