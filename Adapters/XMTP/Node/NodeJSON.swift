import Foundation

/// A parsed JSON value; numbers keep their text so 64-bit integers survive.
public enum NodeJSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` / `false`.
    case bool(Bool)
    /// A number, as written.
    case number(String)
    /// A string.
    case string(String)
    /// An array.
    case array([NodeJSONValue])
    /// An object; key order is kept, a repeated key keeps its last value on lookup.
    case object([(String, NodeJSONValue)])

    /// Equality by structure (object keys in order).
    public static func == (lhs: NodeJSONValue, rhs: NodeJSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case (.bool(let a), .bool(let b)): a == b
        case (.number(let a), .number(let b)): a == b
        case (.string(let a), .string(let b)): a == b
        case (.array(let a), .array(let b)): a == b
        case (.object(let a), .object(let b)): a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
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
        case .object(let pairs): for (key, value) in pairs { hasher.combine(key); hasher.combine(value) }
        }
    }
}

/// A strict, small JSON parser (RFC 8259) producing `NodeJSONValue`; depth-limited so hostile input cannot crash it.
enum NodeJSONParser {
    /// Parses a whole document; throws `invalidArgument` with the offset of the problem.
    static func parse(_ data: Data) throws(XMTPNodeError) -> NodeJSONValue {
        var parser = Parser(bytes: [UInt8](data))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.index == parser.bytes.count else { throw parser.fail("trailing characters") }
        return value
    }

    /// The cursor over the input.
    private struct Parser {
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ what: String) -> XMTPNodeError { .invalid("malformed JSON at byte \(index): \(what)") }

        mutating func skipSpace() {
            while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        }

        mutating func value(depth: Int) throws(XMTPNodeError) -> NodeJSONValue {
            guard depth < 64 else { throw fail("nested too deeply") }
            guard index < bytes.count else { throw fail("unexpected end") }
            switch bytes[index] {
            case UInt8(ascii: "{"): return try object(depth: depth)
            case UInt8(ascii: "["): return try array(depth: depth)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            default: return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws(XMTPNodeError) {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
                throw fail("unexpected character")
            }
            index += expected.count
        }

        mutating func object(depth: Int) throws(XMTPNodeError) -> NodeJSONValue {
            index += 1
            var pairs: [(String, NodeJSONValue)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a key") }
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
                index += 1
                skipSpace()
                pairs.append((key, try value(depth: depth + 1)))
                skipSpace()
                guard index < bytes.count else { throw fail("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "}") { index += 1; return .object(pairs) }
                throw fail("expected ',' or '}'")
            }
        }

        mutating func array(depth: Int) throws(XMTPNodeError) -> NodeJSONValue {
            index += 1
            var values: [NodeJSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
            while true {
                skipSpace()
                values.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw fail("unexpected end") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                if bytes[index] == UInt8(ascii: "]") { index += 1; return .array(values) }
                throw fail("expected ',' or ']'")
            }
        }

        mutating func number() throws(XMTPNodeError) -> String {
            let start = index
            if index < bytes.count, bytes[index] == UInt8(ascii: "-") { index += 1 }
            var digits = 0
            while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1; digits += 1 }
            guard digits > 0 else { throw fail("unexpected character") }
            if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
                index += 1
                var fraction = 0
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1; fraction += 1 }
                guard fraction > 0 else { throw fail("bad number") }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                index += 1
                if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
                var exponent = 0
                while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1; exponent += 1 }
                guard exponent > 0 else { throw fail("bad number") }
            }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }

        mutating func hex4() throws(XMTPNodeError) -> UInt32 {
            guard bytes.count - index >= 4 else { throw fail("bad \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case 0x30...0x39: digit = UInt32(byte - 0x30)
                case 0x41...0x46: digit = UInt32(byte - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(byte - 0x61 + 10)
                default: throw fail("bad \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func string() throws(XMTPNodeError) -> String {
            index += 1
            var out: [UInt8] = []
            while true {
                guard index < bytes.count else { throw fail("unterminated string") }
                let byte = bytes[index]
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    guard let text = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8") }
                    return text
                case UInt8(ascii: "\\"):
                    guard index < bytes.count else { throw fail("unterminated string") }
                    let escape = bytes[index]
                    index += 1
                    switch escape {
                    case UInt8(ascii: "\""): out.append(0x22)
                    case UInt8(ascii: "\\"): out.append(0x5C)
                    case UInt8(ascii: "/"): out.append(0x2F)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800...0xDBFF).contains(scalar) {
                            guard bytes.count - index >= 6, bytes[index] == UInt8(ascii: "\\"),
                                  bytes[index + 1] == UInt8(ascii: "u") else { throw fail("lone surrogate") }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00...0xDFFF).contains(low) else { throw fail("lone surrogate") }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw fail("lone surrogate") }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default:
                        throw fail("bad escape")
                    }
                default:
                    guard byte >= 0x20 else { throw fail("control character in string") }
                    out.append(byte)
                }
            }
        }
    }
}

/// Writes `NodeJSONValue`s compactly.
enum NodeJSONWriter {
    /// The UTF-8 JSON text of `value`.
    static func encode(_ value: NodeJSONValue) -> Data {
        var out = ""
        write(value, into: &out)
        return Data(out.utf8)
    }

    private static func write(_ value: NodeJSONValue, into out: inout String) {
        switch value {
        case .null: out += "null"
        case .bool(let flag): out += flag ? "true" : "false"
        case .number(let text): out += text
        case .string(let text): writeString(text, into: &out)
        case .array(let values):
            out += "["
            for (offset, element) in values.enumerated() {
                if offset > 0 { out += "," }
                write(element, into: &out)
            }
            out += "]"
        case .object(let pairs):
            out += "{"
            for (offset, pair) in pairs.enumerated() {
                if offset > 0 { out += "," }
                writeString(pair.0, into: &out)
                out += ":"
                write(pair.1, into: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

/// Typed, protobuf-JSON-style access to one object: each field is found by its snake_case name or its
/// lowerCamelCase JSON name, as grpc-gateway accepts both; `null` counts as absent.
struct NodeJSONObject: Sendable {
    /// The fields in order.
    let pairs: [(String, NodeJSONValue)]
    /// The path used in error messages, e.g. `messages[0].v1`.
    let path: String

    /// Wraps an object value; throws when `value` is not an object.
    init(_ value: NodeJSONValue, path: String) throws(XMTPNodeError) {
        guard case .object(let pairs) = value else { throw .invalid("\(path.isEmpty ? "the body" : path) must be a JSON object") }
        self.pairs = pairs
        self.path = path
    }

    /// Parses a request body that must be one JSON object (an empty body reads as `{}`).
    static func body(_ data: Data) throws(XMTPNodeError) -> NodeJSONObject {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return try NodeJSONObject(.object([]), path: "") }
        return try NodeJSONObject(NodeJSONParser.parse(data), path: "")
    }

    /// `field_name` → `fieldName`.
    static func camelCase(_ name: String) -> String {
        var out = ""
        var upper = false
        for character in name {
            if character == "_" { upper = true; continue }
            out += upper ? character.uppercased() : String(character)
            upper = false
        }
        return out
    }

    private func label(_ name: String) -> String { path.isEmpty ? name : "\(path).\(name)" }

    /// The raw value of `name`, nil when absent or null.
    func value(_ name: String) -> NodeJSONValue? {
        let camel = Self.camelCase(name)
        guard let found = pairs.last(where: { $0.0 == name || $0.0 == camel })?.1 else { return nil }
        if case .null = found { return nil }
        return found
    }

    /// A string field.
    func string(_ name: String) throws(XMTPNodeError) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value else { throw .invalid("\(label(name)) must be a string") }
        return text
    }

    /// A bytes field (standard or URL-safe base64, padding optional).
    func bytes(_ name: String) throws(XMTPNodeError) -> [UInt8]? {
        guard let text = try string(name) else { return nil }
        guard let bytes = NodeBase64.decode(text) else { throw .invalid("\(label(name)) is not valid base64") }
        return bytes
    }

    /// A uint64 field, written as a decimal string or a JSON number.
    func uint64(_ name: String) throws(XMTPNodeError) -> UInt64? {
        guard let value = value(name) else { return nil }
        let text: String
        switch value {
        case .string(let string): text = string
        case .number(let number): text = number
        default: throw .invalid("\(label(name)) must be an unsigned integer (a string or a number)")
        }
        guard let number = UInt64(text) else { throw .invalid("\(label(name)) must be an unsigned 64-bit integer, got '\(text)'") }
        return number
    }

    /// A bool field.
    func bool(_ name: String) throws(XMTPNodeError) -> Bool? {
        guard let value = value(name) else { return nil }
        guard case .bool(let flag) = value else { throw .invalid("\(label(name)) must be true or false") }
        return flag
    }

    /// A nested object field.
    func object(_ name: String) throws(XMTPNodeError) -> NodeJSONObject? {
        guard let value = value(name) else { return nil }
        return try NodeJSONObject(value, path: label(name))
    }

    /// An array field.
    func array(_ name: String) throws(XMTPNodeError) -> [NodeJSONValue]? {
        guard let value = value(name) else { return nil }
        guard case .array(let values) = value else { throw .invalid("\(label(name)) must be an array") }
        return values
    }

    /// An array of objects, each wrapped with its path.
    func objects(_ name: String) throws(XMTPNodeError) -> [NodeJSONObject]? {
        guard let values = try array(name) else { return nil }
        var out: [NodeJSONObject] = []
        for (offset, value) in values.enumerated() { out.append(try NodeJSONObject(value, path: "\(label(name))[\(offset)]")) }
        return out
    }

    /// An array of strings.
    func strings(_ name: String) throws(XMTPNodeError) -> [String]? {
        guard let values = try array(name) else { return nil }
        var out: [String] = []
        for value in values {
            guard case .string(let text) = value else { throw .invalid("\(label(name)) must hold strings only") }
            out.append(text)
        }
        return out
    }
}

/// Base64 as protobuf JSON uses it: standard alphabet with padding when writing; either alphabet, padding
/// optional, when reading.
enum NodeBase64 {
    /// Standard base64 with padding.
    static func encode(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    /// Decodes standard or URL-safe base64; nil when malformed.
    static func decode(_ text: String) -> [UInt8]? {
        var normalized = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard !normalized.contains("=") || normalized.count % 4 == 0 else { return nil }
        while normalized.count % 4 != 0 { normalized += "=" }
        return Data(base64Encoded: normalized).map { [UInt8]($0) }
    }
}
