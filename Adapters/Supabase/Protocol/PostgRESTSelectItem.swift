/// One entry of `select=`: a column (or `*`), optionally renamed (`alias:column`) and cast (`column::type`), or an
/// embedded resource (`reactions(*)`, `author:members(user_id)`): the rows of a related table, nested.
public struct PostgRESTSelectItem: Sendable, Equatable, ExpressibleByStringLiteral {
    /// The column, `*`, or for an embedding the related table.
    public var column: String
    /// The key the column gets in each row (`alias:column`), nil for the column's own name.
    public var alias: String?
    /// The type the value is cast to (`column::text`), nil for none; a plain type name, never SQL.
    public var cast: String?
    /// For an embedded resource, what to select from the related table; nil for a column.
    public var embedded: [PostgRESTSelectItem]?
    /// For an embedded resource, `!inner`: only rows with at least one related row (after its filters) are kept.
    public var isInner: Bool

    /// Creates an item.
    public init(column: String, alias: String? = nil, cast: String? = nil, embedded: [PostgRESTSelectItem]? = nil,
                isInner: Bool = false) {
        self.column = column
        self.alias = alias
        self.cast = cast
        self.embedded = embedded
        self.isInner = isInner
    }

    /// The key the item's value gets in each row: the alias, else the column or table name.
    public var key: String { alias ?? column }

    /// The dotted key paths of the resources embedded at any depth of `items` (`reactions`, `msg.conversations`):
    /// what `reactions.symbol=eq.x`, `reactions.order=…` and `reactions.limit=…` name.
    public static func embeddedPaths(_ items: [PostgRESTSelectItem]) -> Set<String> {
        Set(embeddings(items, prefix: "").map(\.path))
    }

    /// Every embedded resource at any depth of `items` with its dotted key path.
    private static func embeddings(_ items: [PostgRESTSelectItem], prefix: String) -> [(path: String, item: PostgRESTSelectItem)] {
        items.flatMap { item -> [(path: String, item: PostgRESTSelectItem)] in
            guard let children = item.embedded else { return [] }
            let path = prefix.isEmpty ? item.key : prefix + "." + item.key
            return [(path, item)] + embeddings(children, prefix: path)
        }
    }

    /// A plain column: `"id"` in a literal list.
    public init(stringLiteral column: String) {
        self.init(column: column)
    }

    /// The tables embedded at any depth of `items`.
    public static func embeddedTables(_ items: [PostgRESTSelectItem]) -> Set<String> {
        Set(embeddings(items, prefix: "").map(\.item.column))
    }

    /// Type names a cast may spell with spaces; any other is one word, optionally an array (`text[]`).
    static let multiWordTypes: Set<String> = [
        "double precision", "character varying", "bit varying", "timestamp with time zone",
        "timestamp without time zone", "time with time zone", "time without time zone",
    ]

    /// Parses a whole `select=` list, embedded resources included (`id,reactions(symbol,user_id)`).
    static func parseList(_ text: String, failure: String) throws -> [PostgRESTSelectItem] {
        var items: [PostgRESTSelectItem] = []
        var depth = 0
        var current = ""
        var parts: [String] = []
        for c in text {
            switch c {
            case "(": depth += 1
            case ")":
                depth -= 1
                guard depth >= 0 else { throw PostgRESTError.parse(failure, details: "unexpected ')'") }
            case "," where depth == 0:
                parts.append(current)
                current = ""
                continue
            default: break
            }
            current.append(c)
        }
        guard depth == 0 else { throw PostgRESTError.parse(failure, details: "missing ')'") }
        parts.append(current)
        for part in parts {
            let item = part.trimmingSpaces()
            guard let open = item.firstIndex(of: "(") else {
                items.append(try parse(item, failure: failure))
                continue
            }
            guard item.hasSuffix(")") else { throw PostgRESTError.parse(failure, details: "unexpected text after ')'") }
            var name = Substring(item[..<open]).trimmingSpaces()
            var alias: String?
            if let colon = name.firstIndex(of: ":") {
                alias = String(name[..<colon])
                name = String(name[name.index(after: colon)...])
            }
            var isInner = false
            if name.hasSuffix("!inner") {
                isInner = true
                name = String(name.dropLast("!inner".count))
            } else if name.hasSuffix("!left") {
                name = String(name.dropLast("!left".count))
            }
            if name.hasPrefix("...") || name.contains("!") {
                throw PostgRESTError.parse(failure, details: "spreads ('...') and foreign-key hints ('!fk') "
                                               + "are not supported by this server")
            }
            guard !name.isEmpty, !name.contains(":"), !name.contains("::"), alias.map({ !$0.isEmpty }) ?? true else {
                throw PostgRESTError.parse(failure, details: "expected 'table(...)' or 'alias:table(...)'")
            }
            let inner = String(item[item.index(after: open)..<item.index(before: item.endIndex)])
            let children = inner.trimmingSpaces().isEmpty ? ["*"] : try parseList(inner, failure: failure)
            items.append(PostgRESTSelectItem(column: name, alias: alias, embedded: children, isInner: isInner))
        }
        return items
    }

    /// Parses one trimmed item: `column`, `alias:column`, `column::type`, `alias:column::type` or `*`.
    static func parse(_ text: String, failure: String) throws -> PostgRESTSelectItem {
        guard !text.isEmpty else { throw PostgRESTError.parse(failure, details: "empty column name") }
        guard !text.contains("->"), !text.contains("\""), !text.contains(")") else {
            throw PostgRESTError.parse(failure, details: "JSON paths and quoted names are not supported: "
                                           + "plain columns, 'alias:column', 'column::type', '*' and 'table(...)'")
        }
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
