import Foundation

/// A JSON value for Phoenix channel payloads and JWT claims; serializes with sorted keys.
public enum PhoenixJSON: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// JSON `true` / `false`.
    case bool(Bool)
    /// A JSON number without fraction or exponent that fits in 64 bits.
    case int(Int64)
    /// Any other JSON number.
    case double(Double)
    /// A JSON string.
    case string(String)
    /// A JSON array.
    case array([PhoenixJSON])
    /// A JSON object.
    case object([String: PhoenixJSON])

    /// The member named `key` if this is an object.
    public subscript(key: String) -> PhoenixJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string if this is a string.
    public var stringValue: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    /// The boolean if this is a boolean.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number as a Double if this is a number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// The members if this is an object.
    public var objectValue: [String: PhoenixJSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements if this is an array.
    public var arrayValue: [PhoenixJSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    /// Parses UTF-8 JSON text (any top-level value), or nil if it is not valid JSON.
    public static func parse(_ bytes: some Collection<UInt8>) -> PhoenixJSON? {
        try? JSONDecoder().decode(PhoenixJSON.self, from: Data(bytes))
    }

    /// Parses JSON text, or nil if it is not valid JSON.
    public static func parse(_ text: String) -> PhoenixJSON? { parse(Array(text.utf8)) }

    /// Compact JSON text with object keys sorted, slashes unescaped and non-ASCII kept as UTF-8.
    public var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    /// Appends the compact serialization to `out`.
    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .int(let value): out += String(value)
        case .double(let value): out += value.isFinite ? "\(value)" : "null"
        case .string(let value): JSONStringLiteral.append(value, to: &out)
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                element.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                JSONStringLiteral.append(key, to: &out)
                out += ":"
                members[key]!.write(to: &out)
            }
            out += "}"
        }
    }
}

extension PhoenixJSON: Codable {
    /// Decodes any JSON value, preferring integers over doubles for integral literals.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null; return }
        if let value = try? container.decode(Bool.self) { self = .bool(value); return }
        if let value = try? container.decode(Int64.self) { self = .int(value); return }
        if let value = try? container.decode(Double.self) { self = .double(value); return }
        if let value = try? container.decode(String.self) { self = .string(value); return }
        if let value = try? container.decode([PhoenixJSON].self) { self = .array(value); return }
        if let value = try? container.decode([String: PhoenixJSON].self) { self = .object(value); return }
        throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a JSON value")
    }

    /// Encodes the value as the matching JSON value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

extension PhoenixJSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A double.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: PhoenixJSON...) { self = .array(elements) }
    /// An object (later duplicate keys win).
    public init(dictionaryLiteral elements: (String, PhoenixJSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
