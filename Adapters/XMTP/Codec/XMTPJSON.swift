/// A JSON value with ordered object keys: serialized compactly the way serde_json does (for the legacy reaction's
/// exact bytes) and parsed strictly (RFC 8259).
public enum XMTPJSON: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([XMTPJSON])
    /// An object, keys in order (duplicates keep the last value on lookup).
    case object([(String, XMTPJSON)])

    /// The value of `key` in an object (the last one when repeated), else nil.
    public subscript(key: String) -> XMTPJSON? {
        guard case .object(let fields) = self else { return nil }
        return fields.last(where: { $0.0 == key })?.1
    }

    /// Structural equality (object keys compared in order).
    public static func == (lhs: XMTPJSON, rhs: XMTPJSON) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.number(a), .number(b)): a == b
        case let (.string(a), .string(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: false
        }
    }

    /// Hashes the structure.
    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0)
        case .bool(let value): hasher.combine(value)
        case .number(let value): hasher.combine(value)
        case .string(let value): hasher.combine(value)
        case .array(let values): hasher.combine(values)
        case .object(let fields):
            for (key, value) in fields { hasher.combine(key); hasher.combine(value) }
        }
    }

    /// Compact JSON text: no spaces, non-ASCII written as UTF-8, `"`, `\` and control characters escaped as
    /// serde_json escapes them; integral numbers without a fraction.
    public func serialized() -> String {
        var out = ""
        write(into: &out)
        return out
    }

    /// Appends the compact JSON text.
    private func write(into out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let value):
            if value.isFinite, value.rounded() == value, abs(value) < 1e15 { out += String(Int64(value)) } else { out += "\(value)" }
        case .string(let value): Self.writeString(value, into: &out)
        case .array(let values):
            out += "["
            for (index, value) in values.enumerated() {
                if index > 0 { out += "," }
                value.write(into: &out)
            }
            out += "]"
        case .object(let fields):
            out += "{"
            for (index, (key, value)) in fields.enumerated() {
                if index > 0 { out += "," }
                Self.writeString(key, into: &out)
                out += ":"
                value.write(into: &out)
            }
            out += "}"
        }
    }

    /// Appends a quoted, escaped string.
    private static func writeString(_ value: String, into out: inout String) {
        out += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20:
                let digits = Array("0123456789abcdef")
                out += "\\u00" + String(digits[Int(c.value >> 4)]) + String(digits[Int(c.value & 0xF)])
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// Why JSON text could not be parsed.
    public struct ParseError: Error, Sendable, Hashable, CustomStringConvertible {
        /// What is wrong and where.
        public let description: String
    }

    /// Parses one JSON value (surrounding whitespace allowed, nothing else).
    public static func parse(_ text: String) throws(ParseError) -> XMTPJSON {
        var parser = Parser(bytes: Array(text.utf8))
        parser.skipWhitespace()
        let value = try parser.value(depth: 0)
        parser.skipWhitespace()
        guard parser.index == parser.bytes.count else { throw parser.error("trailing characters") }
        return value
    }

    /// A recursive-descent parser over UTF-8 bytes.
    private struct Parser {
        /// The input.
        let bytes: [UInt8]
        /// The next byte.
        var index = 0

        /// An error at the current offset.
        func error(_ message: String) -> ParseError { ParseError(description: "\(message) at offset \(index)") }

        /// Skips spaces, tabs and line breaks.
        mutating func skipWhitespace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        /// Consumes `literal` or throws.
        mutating func expect(_ literal: String) throws(ParseError) {
            let expected = Array(literal.utf8)
            guard index + expected.count <= bytes.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw error("expected \(literal)")
            }
            index += expected.count
        }

        /// Parses any value.
        mutating func value(depth: Int) throws(ParseError) -> XMTPJSON {
            guard depth < 128 else { throw error("nesting too deep") }
            guard index < bytes.count else { throw error("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "n"): try expect("null"); return .null
            case UInt8(ascii: "t"): try expect("true"); return .bool(true)
            case UInt8(ascii: "f"): try expect("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                index += 1
                var values: [XMTPJSON] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                while true {
                    skipWhitespace()
                    values.append(try value(depth: depth + 1))
                    skipWhitespace()
                    guard index < bytes.count else { throw error("unterminated array") }
                    if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                    guard bytes[index] == UInt8(ascii: ",") else { throw error("expected , or ]") }
                    index += 1
                }
            case UInt8(ascii: "{"):
                index += 1
                var fields: [(String, XMTPJSON)] = []
                skipWhitespace()
                if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
                while true {
                    skipWhitespace()
                    guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw error("expected a key") }
                    let key = try string()
                    skipWhitespace()
                    try expect(":")
                    skipWhitespace()
                    fields.append((key, try value(depth: depth + 1)))
                    skipWhitespace()
                    guard index < bytes.count else { throw error("unterminated object") }
                    if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(fields) }
                    guard bytes[index] == UInt8(ascii: ",") else { throw error("expected , or }") }
                    index += 1
                }
            default: return .number(try number())
            }
        }

        /// Parses a number per the JSON grammar.
        mutating func number() throws(ParseError) -> Double {
            let start = index
            /// Consumes decimal digits; returns how many.
            func digits() -> Int {
                let from = index
                while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
                return index - from
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            let intStart = index
            guard digits() > 0 else { throw error("invalid value") }
            if bytes[intStart] == UInt8(ascii: "0"), index - intStart > 1 { throw error("leading zero") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                guard digits() > 0 else { throw error("invalid fraction") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw error("invalid exponent") }
            }
            guard let value = Double(String(decoding: bytes[start..<index], as: UTF8.self)) else { throw error("invalid number") }
            return value
        }

        /// Reads four hex digits.
        mutating func hex4() throws(ParseError) -> UInt32 {
            guard index + 4 <= bytes.count,
                  let value = UInt32(String(decoding: bytes[index..<index + 4], as: UTF8.self), radix: 16) else {
                throw error("invalid \\u escape")
            }
            index += 4
            return value
        }

        /// Parses a quoted string.
        mutating func string() throws(ParseError) -> String {
            index += 1
            var scalars = String.UnicodeScalarView()
            var run: [UInt8] = []
            /// Moves the pending UTF-8 run into `scalars`.
            func flush() {
                scalars.append(contentsOf: String(decoding: run, as: UTF8.self).unicodeScalars)
                run.removeAll()
            }
            while true {
                guard index < bytes.count else { throw error("unterminated string") }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    flush()
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    flush()
                    guard index < bytes.count else { throw error("unterminated escape") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        var code = try hex4()
                        if (0xD800..<0xDC00).contains(code) {
                            guard index + 2 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                                throw error("unpaired surrogate")
                            }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw error("unpaired surrogate") }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw error("invalid code point") }
                        scalars.append(scalar)
                    default: throw error("invalid escape")
                    }
                case 0..<0x20: throw error("control character in string")
                default: run.append(byte)
                }
            }
        }
    }
}
