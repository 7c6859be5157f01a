import Foundation
import SwitchboardCore

/// Typed, protobuf-JSON-style access to one object: each field is found by its snake_case name or its
/// lowerCamelCase JSON name, as grpc-gateway accepts both; `null` counts as absent.
struct NodeJSONObject: Sendable {
    /// The fields in order.
    let pairs: [(key: String, value: JSONValue)]
    /// The path used in error messages, e.g. `messages[0].v1`.
    let path: String

    /// Wraps an object value; throws when `value` is not an object.
    init(_ value: JSONValue, path: String) throws(XMTPNodeError) {
        guard case .object(let pairs) = value else { throw .invalid("\(path.isEmpty ? "the body" : path) must be a JSON object") }
        self.pairs = pairs
        self.path = path
    }

    /// The deepest nesting a request body may have, so hostile input cannot exhaust the stack.
    static let maximumDepth = 64

    /// Parses a whole JSON document strictly (RFC 8259); throws `invalidArgument` naming the problem and its offset.
    static func parse(_ data: Data) throws(XMTPNodeError) -> JSONValue {
        do {
            return try JSONValue.parse(data, maximumDepth: maximumDepth)
        } catch {
            throw .invalid("malformed JSON: \(error.message)")
        }
    }

    /// Parses a request body that must be one JSON object (an empty body reads as `{}`).
    static func body(_ data: Data) throws(XMTPNodeError) -> NodeJSONObject {
        if data.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return try NodeJSONObject(.object([]), path: "") }
        return try NodeJSONObject(parse(data), path: "")
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
    func value(_ name: String) -> JSONValue? {
        let camel = Self.camelCase(name)
        guard let found = pairs.last(where: { $0.key == name || $0.key == camel })?.value else { return nil }
        if case .null = found { return nil }
        return found
    }

    /// A string field.
    func string(_ name: String) throws(XMTPNodeError) -> String? {
        guard let value = value(name) else { return nil }
        guard case .string(let text) = value else { throw .invalid("\(label(name)) must be a string") }
        return text
    }

    /// A bytes field (standard or URL-safe base64, padding optional, as grpc-gateway reads it).
    func bytes(_ name: String) throws(XMTPNodeError) -> [UInt8]? {
        guard let text = try string(name) else { return nil }
        guard let bytes = Base64.decodeLenient(text) else { throw .invalid("\(label(name)) is not valid base64") }
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
    func array(_ name: String) throws(XMTPNodeError) -> [JSONValue]? {
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
