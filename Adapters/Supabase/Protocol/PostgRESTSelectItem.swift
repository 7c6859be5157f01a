/// One entry of `select=`: a column (or `*`), optionally renamed (`alias:column`) and cast (`column::type`).
public struct PostgRESTSelectItem: Sendable, Equatable, ExpressibleByStringLiteral {
    /// The column, or `*`.
    public var column: String
    /// The key the column gets in each row (`alias:column`), nil for the column's own name.
    public var alias: String?
    /// The type the value is cast to (`column::text`), nil for none; a plain type name, never SQL.
    public var cast: String?

    /// Creates an item.
    public init(column: String, alias: String? = nil, cast: String? = nil) {
        self.column = column
        self.alias = alias
        self.cast = cast
    }

    /// A plain column: `"id"` in a literal list.
    public init(stringLiteral column: String) {
        self.init(column: column)
    }

    /// Type names a cast may spell with spaces; any other is one word, optionally an array (`text[]`).
    static let multiWordTypes: Set<String> = [
        "double precision", "character varying", "bit varying", "timestamp with time zone",
        "timestamp without time zone", "time with time zone", "time without time zone",
    ]

    /// Parses one trimmed item: `column`, `alias:column`, `column::type`, `alias:column::type` or `*`.
    static func parse(_ text: String, failure: String) throws -> PostgRESTSelectItem {
        var rest = Substring(text)
        var cast: String?
        if let marker = rest.range(of: "::") {
            cast = String(rest[marker.upperBound...])
            rest = rest[..<marker.lowerBound]
        }
        var alias: String?
        if let colon = rest.firstIndex(of: ":") {
            alias = String(rest[..<colon])
            rest = rest[rest.index(after: colon)...]
        }
        let column = String(rest)
        guard !column.isEmpty, !column.contains(":"), alias.map({ !$0.isEmpty }) ?? true else {
            throw PostgRESTError.parse(failure, details: "expected 'column', 'alias:column' or 'column::type'")
        }
        if column == "*", alias != nil || cast != nil {
            throw PostgRESTError.parse(failure, details: "'*' cannot be renamed or cast")
        }
        if let cast, !isTypeName(cast) {
            throw PostgRESTError.parse(failure, details: "'\(cast)' is not a type name this server casts to")
        }
        return PostgRESTSelectItem(column: column, alias: alias, cast: cast)
    }

    /// Whether `name` is a type name that can go into SQL as it is: one word of letters, digits and `_` (not
    /// starting with a digit) with an optional `[]`, or one of the multi-word standard types. Nothing else reaches
    /// the statement, so a cast cannot carry SQL.
    static func isTypeName(_ name: String) -> Bool {
        let base = name.hasSuffix("[]") ? String(name.dropLast(2)) : name
        if multiWordTypes.contains(base.lowercased()) { return true }
        func isLetter(_ c: Unicode.Scalar) -> Bool { ("a"..."z").contains(c) || ("A"..."Z").contains(c) || c == "_" }
        guard let first = base.unicodeScalars.first, isLetter(first), base.unicodeScalars.count <= 63 else { return false }
        return base.unicodeScalars.allSatisfy { isLetter($0) || ("0"..."9").contains($0) }
    }
}
