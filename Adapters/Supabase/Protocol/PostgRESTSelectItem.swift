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

    /// The deepest nesting of embedded resources accepted (`a(b(c(…)))`): each level is a correlated subquery in
    /// the statement and a stack frame here, so hostile input thousands deep is refused at once.
    public static let maximumDepth = 16

    /// Parses a whole `select=` list, embedded resources included (`id,reactions(symbol,user_id)`), in one pass over
    /// the text: no part is copied out and scanned again, so the cost is linear in its length.
    static func parseList(_ text: String, failure: String) throws -> [PostgRESTSelectItem] {
        var parser = SelectParser(chars: Array(text), failure: failure)
        let items = try parser.list(depth: 0)
        // `list` at depth 0 stops only at the end or at a `)` with no `(` open.
        guard parser.index == parser.chars.count else { throw PostgRESTError.parse(failure, details: "unexpected ')'") }
        return items
    }

    /// A recursive-descent reader of `select=` over the text's characters.
    private struct SelectParser {
        /// The whole `select=` value.
        let chars: [Character]
        /// The message of every parse error.
        let failure: String
        /// The next character to read.
        var index = 0

        /// Reads items separated by `,` up to the end (`depth` 0) or up to the `)` closing an embedding (left unread).
        mutating func list(depth: Int) throws -> [PostgRESTSelectItem] {
            var items: [PostgRESTSelectItem] = []
            while true {
                let start = index
                while index < chars.count, !",()".contains(chars[index]) { index += 1 }
                let text = String(chars[start..<index])
                if index < chars.count, chars[index] == "(" {
                    items.append(try embedding(name: text, depth: depth + 1))
                } else {
                    items.append(try PostgRESTSelectItem.parse(text.trimmingSpaces(), failure: failure))
                }
                guard index < chars.count else {
                    guard depth == 0 else { throw PostgRESTError.parse(failure, details: "missing ')'") }
                    return items
                }
                if chars[index] == "," {
                    index += 1
                    continue
                }
                return items  // a `)`: the caller checks that it closes something
            }
        }

        /// Reads `name(...)` with the cursor on its `(`: an embedded resource at nesting level `depth`.
        mutating func embedding(name text: String, depth: Int) throws -> PostgRESTSelectItem {
            guard depth <= PostgRESTSelectItem.maximumDepth else {
                throw PostgRESTError.parse(failure, details: "embedded resources nested deeper than "
                                               + "\(PostgRESTSelectItem.maximumDepth) levels")
            }
            var name = text.trimmingSpaces()
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
            guard !name.isEmpty, !name.contains(":"), alias.map({ !$0.isEmpty }) ?? true else {
                throw PostgRESTError.parse(failure, details: "expected 'table(...)' or 'alias:table(...)'")
            }
            index += 1  // the `(`
            var ahead = index
            while ahead < chars.count, chars[ahead] == " " || chars[ahead] == "\t" { ahead += 1 }
            let children: [PostgRESTSelectItem]
            if ahead < chars.count, chars[ahead] == ")" {  // `table()`: every column
                index = ahead
                children = ["*"]
            } else {
                children = try list(depth: depth)
            }
            guard index < chars.count, chars[index] == ")" else { throw PostgRESTError.parse(failure, details: "missing ')'") }
            index += 1
            while index < chars.count, chars[index] == " " || chars[index] == "\t" { index += 1 }
            guard index == chars.count || chars[index] == "," || chars[index] == ")" else {
                throw PostgRESTError.parse(failure, details: "unexpected text after ')'")
            }
            return PostgRESTSelectItem(column: name, alias: alias, embedded: children, isInner: isInner)
        }
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
