/// JSON string quoting shared by every JSON writer of the package.
public enum JSONStringLiteral {
    /// Appends `value` to `out` as a quoted, escaped JSON string.
    public static func append(_ value: String, to out: inout String) {
        out += "\""
        // Characters that need escaping are all ASCII, so the runs between them end on scalar boundaries and are
        // appended whole; most strings are a single run.
        let utf8 = value.utf8
        var runStart = utf8.startIndex
        var index = runStart
        while index != utf8.endIndex {
            let byte = utf8[index]
            if byte >= 0x20 && byte != UInt8(ascii: "\"") && byte != UInt8(ascii: "\\") {
                utf8.formIndex(after: &index)
                continue
            }
            if runStart != index { out += value[runStart..<index] }
            switch byte {
            case UInt8(ascii: "\""): out += "\\\""
            case UInt8(ascii: "\\"): out += "\\\\"
            case UInt8(ascii: "\n"): out += "\\n"
            case UInt8(ascii: "\r"): out += "\\r"
            case UInt8(ascii: "\t"): out += "\\t"
            case 0x08: out += "\\b"
            case 0x0C: out += "\\f"
            default:
                let hex = String(byte, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
            utf8.formIndex(after: &index)
            runStart = index
        }
        if runStart != utf8.endIndex { out += value[runStart...] }
        out += "\""
    }

    /// `value` as a quoted, escaped JSON string.
    public static func quoted(_ value: String) -> String {
        var out = ""
        append(value, to: &out)
        return out
    }
}
