/// A JSON value that keeps object key order and number text, used for request bodies.
public indirect enum PostgRESTJSONValue: Sendable, Equatable {
    /// JSON `null`.
    case null
    /// JSON `true` / `false`.
    case bool(Bool)
    /// A JSON number, kept as its original text so no precision is lost.
    case number(String)
    /// A JSON string.
    case string(String)
    /// A JSON array.
    case array([PostgRESTJSONValue])
    /// A JSON object with keys in document order.
    case object([(String, PostgRESTJSONValue)])

    /// Compares two values structurally (object key order included).
    public static func == (lhs: PostgRESTJSONValue, rhs: PostgRESTJSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.number(a), .number(b)): return a == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
        default: return false
        }
    }

    /// Parses JSON text; throws `PGRST102` when it is not valid JSON.
    public static func parse(_ text: String) throws -> PostgRESTJSONValue {
        var reader = Reader(scalars: Array(text.unicodeScalars))
        reader.skipWhitespace()
        let value = try reader.value(depth: 0)
        reader.skipWhitespace()
        guard reader.index == reader.scalars.count else { throw PostgRESTError.invalidBody("trailing characters") }
        return value
    }

    /// Compact JSON text for this value.
    public var serialized: String {
        switch self {
        case .null: return "null"
        case let .bool(b): return b ? "true" : "false"
        case let .number(n): return n
        case let .string(s): return JSONStringLiteral.quoted(s)
        case let .array(items): return "[" + items.map(\.serialized).joined(separator: ",") + "]"
        case let .object(pairs):
            return "{" + pairs.map { JSONStringLiteral.quoted($0.0) + ":" + $0.1.serialized }.joined(separator: ",") + "}"
        }
    }

    /// The text bound as a SQL parameter: strings raw, `null` as SQL NULL, everything else as JSON text.
    public var parameterText: String? {
        switch self {
        case .null: return nil
        case let .string(s): return s
        default: return serialized
        }
    }

    private struct Reader {
        let scalars: [Unicode.Scalar]
        var index = 0

        mutating func skipWhitespace() {
            while index < scalars.count, [" ", "\n", "\r", "\t"].contains(scalars[index]) { index += 1 }
        }

        func fail(_ what: String) -> PostgRESTError { PostgRESTError.invalidBody("\(what) at offset \(index)") }

        mutating func value(depth: Int) throws -> PostgRESTJSONValue {
            guard depth < 512 else { throw fail("nesting too deep") }
            guard index < scalars.count else { throw fail("unexpected end of input") }
            switch scalars[index] {
            case "{":
                index += 1
                var pairs: [(String, PostgRESTJSONValue)] = []
                skipWhitespace()
                if index < scalars.count, scalars[index] == "}" { index += 1; return .object(pairs) }
                while true {
                    skipWhitespace()
                    guard index < scalars.count, scalars[index] == "\"" else { throw fail("expected string key") }
                    let key = try string()
                    skipWhitespace()
                    guard index < scalars.count, scalars[index] == ":" else { throw fail("expected ':'") }
                    index += 1
                    skipWhitespace()
                    pairs.append((key, try value(depth: depth + 1)))
                    skipWhitespace()
                    guard index < scalars.count else { throw fail("unexpected end of input") }
                    if scalars[index] == "," { index += 1; continue }
                    if scalars[index] == "}" { index += 1; return .object(pairs) }
                    throw fail("expected ',' or '}'")
                }
            case "[":
                index += 1
                var items: [PostgRESTJSONValue] = []
                skipWhitespace()
                if index < scalars.count, scalars[index] == "]" { index += 1; return .array(items) }
                while true {
                    skipWhitespace()
                    items.append(try value(depth: depth + 1))
                    skipWhitespace()
                    guard index < scalars.count else { throw fail("unexpected end of input") }
                    if scalars[index] == "," { index += 1; continue }
                    if scalars[index] == "]" { index += 1; return .array(items) }
                    throw fail("expected ',' or ']'")
                }
            case "\"":
                return .string(try string())
            case "t": try literal("true"); return .bool(true)
            case "f": try literal("false"); return .bool(false)
            case "n": try literal("null"); return .null
            default:
                return .number(try number())
            }
        }

        mutating func literal(_ word: String) throws {
            for expected in word.unicodeScalars {
                guard index < scalars.count, scalars[index] == expected else { throw fail("invalid literal") }
                index += 1
            }
        }

        mutating func number() throws -> String {
            let start = index
            func digits(_ r: inout Reader) -> Int {
                let s = r.index
                while r.index < r.scalars.count, ("0"..."9").contains(r.scalars[r.index]) { r.index += 1 }
                return r.index - s
            }
            if index < scalars.count, scalars[index] == "-" { index += 1 }
            guard digits(&self) > 0 else { throw fail("invalid number") }
            if index < scalars.count, scalars[index] == "." {
                index += 1
                guard digits(&self) > 0 else { throw fail("invalid number") }
            }
            if index < scalars.count, scalars[index] == "e" || scalars[index] == "E" {
                index += 1
                if index < scalars.count, scalars[index] == "+" || scalars[index] == "-" { index += 1 }
                guard digits(&self) > 0 else { throw fail("invalid number") }
            }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars[start..<index])
            return text
        }

        mutating func string() throws -> String {
            index += 1
            var out = String.UnicodeScalarView()
            while index < scalars.count {
                let c = scalars[index]
                index += 1
                switch c {
                case "\"": return String(out)
                case "\\":
                    guard index < scalars.count else { throw fail("unterminated escape") }
                    let e = scalars[index]
                    index += 1
                    switch e {
                    case "\"": out.append("\"")
                    case "\\": out.append("\\")
                    case "/": out.append("/")
                    case "b": out.append("\u{08}")
                    case "f": out.append("\u{0C}")
                    case "n": out.append("\n")
                    case "r": out.append("\r")
                    case "t": out.append("\t")
                    case "u":
                        var code = try hex4()
                        if (0xD800..<0xDC00).contains(code) {
                            guard index + 1 < scalars.count, scalars[index] == "\\", scalars[index + 1] == "u"
                            else { throw fail("lone surrogate") }
                            index += 2
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw fail("invalid surrogate pair") }
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let scalar = Unicode.Scalar(code) else { throw fail("invalid code point") }
                        out.append(scalar)
                    default: throw fail("invalid escape")
                    }
                default:
                    guard c.value >= 0x20 else { throw fail("control character in string") }
                    out.append(c)
                }
            }
            throw fail("unterminated string")
        }

        mutating func hex4() throws -> UInt32 {
            guard index + 4 <= scalars.count else { throw fail("short \\u escape") }
            var code: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = Int(String(scalars[index]), radix: 16) else { throw fail("invalid \\u escape") }
                code = code * 16 + UInt32(digit)
                index += 1
            }
            return code
        }
    }
}
