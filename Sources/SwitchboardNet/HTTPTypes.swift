import Foundation

/// An HTTP request method.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The method token, upper case.
    public let rawValue: String
    /// Wraps a method token (upper-cased).
    public init(rawValue: String) { self.rawValue = rawValue.uppercased() }
    /// Wraps a method literal.
    public init(stringLiteral value: String) { self.init(rawValue: value) }
    /// The token.
    public var description: String { rawValue }

    /// GET.
    public static let get: HTTPMethod = "GET"
    /// HEAD.
    public static let head: HTTPMethod = "HEAD"
    /// POST.
    public static let post: HTTPMethod = "POST"
    /// PUT.
    public static let put: HTTPMethod = "PUT"
    /// PATCH.
    public static let patch: HTTPMethod = "PATCH"
    /// DELETE.
    public static let delete: HTTPMethod = "DELETE"
    /// OPTIONS.
    public static let options: HTTPMethod = "OPTIONS"
}

/// HTTP header fields: ordered, repeatable, looked up case-insensitively.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The fields in order.
    public private(set) var fields: [(name: String, value: String)] = []

    /// No fields.
    public init() {}
    /// Fields from a list.
    public init(_ fields: [(String, String)]) { self.fields = fields.map { (name: $0.0, value: $0.1) } }
    /// Fields from a literal.
    public init(dictionaryLiteral elements: (String, String)...) { self.init(elements) }

    /// The first value of `name`, case-insensitively.
    public subscript(name: String) -> String? {
        get { fields.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value }
        set {
            remove(name)
            if let newValue { add(name, newValue) }
        }
    }

    /// Every value of `name`.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// Appends a field (keeps existing ones of the same name).
    public mutating func add(_ name: String, _ value: String) { fields.append((name: name, value: value)) }

    /// Removes every field named `name`.
    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveCompare(name) == .orderedSame }
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// Equal when the same fields appear in the same order (names compared case-insensitively).
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count && zip(lhs.fields, rhs.fields).allSatisfy {
            $0.name.lowercased() == $1.name.lowercased() && $0.value == $1.value
        }
    }

    /// Hashes lower-cased names and values.
    public func hash(into hasher: inout Hasher) {
        for field in fields { hasher.combine(field.name.lowercased()); hasher.combine(field.value) }
    }

    /// `Name: value` lines, with values of credential headers redacted.
    public var description: String {
        fields.map { field in
            let secret = ["authorization", "apikey", "cookie", "set-cookie", "proxy-authorization"].contains(field.name.lowercased())
            return "\(field.name): \(secret ? "<redacted>" : field.value)"
        }.joined(separator: "\n")
    }
}
