/// JSON string quoting shared by every JSON writer of the package.
public enum JSONStringLiteral {
    /// Appends `value` to `out` as a quoted, escaped JSON string.
    public static func append(_ value: String, to out: inout String) {
        // Characters that need escaping are all ASCII, so the runs between them end on scalar boundaries and are
        // appended whole; most strings are a single run, appended without looking at it again.
        guard let escape = firstEscapeOffset(value) else {
            out += "\""
            out += value
            out += "\""
            return
        }
        out += "\""
        let utf8 = value.utf8
        var runStart = utf8.startIndex
        var index = utf8.index(runStart, offsetBy: escape)
        while index != utf8.endIndex {
            let byte = utf8[index]
            if !needsEscape(byte) {
                utf8.formIndex(after: &index)
                continue
            }
            if runStart != index { out += value[runStart..<index] }
            out += escaped(byte)
            utf8.formIndex(after: &index)
            runStart = index
        }
        if runStart != utf8.endIndex { out += value[runStart...] }
        out += "\""
    }

    /// Appends `value` to the UTF-8 bytes `out` as a quoted, escaped JSON string.
    public static func append(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var runStart = 0
            for index in utf8.indices where needsEscape(utf8[index]) {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                out.append(contentsOf: escaped(utf8[index]).utf8)
                runStart = index + 1
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `value` as a quoted, escaped JSON string.
    public static func quoted(_ value: String) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }

    /// Whether `byte` must be escaped inside a JSON string: a quote, a backslash or a control character.
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The UTF-8 offset of the first byte of `value` that needs escaping, or nil when none does.
    private static func firstEscapeOffset(_ value: String) -> Int? {
        var value = value
        return value.withUTF8 { utf8 in utf8.firstIndex(where: needsEscape) }
    }

    /// The escape sequence of a byte that `needsEscape`.
    private static func escaped(_ byte: UInt8) -> String {
        switch byte {
        case UInt8(ascii: "\""): return "\\\""
        case UInt8(ascii: "\\"): return "\\\\"
        case UInt8(ascii: "\n"): return "\\n"
        case UInt8(ascii: "\r"): return "\\r"
        case UInt8(ascii: "\t"): return "\\t"
        case 0x08: return "\\b"
        case 0x0C: return "\\f"
        default:
            let hex = String(byte, radix: 16)
            return "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
        }
    }
}
