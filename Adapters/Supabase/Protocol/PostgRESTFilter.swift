/// One column condition such as `age=not.gte.18`, as PostgREST parses it.
public struct PostgRESTFilter: Sendable, Equatable {
    /// The operator and its operand(s).
    public enum Operation: Sendable, Equatable {
        /// `eq` — equal.
        case eq(String)
        /// `neq` — not equal (`<>`).
        case neq(String)
        /// `gt` — greater than.
        case gt(String)
        /// `gte` — greater than or equal.
        case gte(String)
        /// `lt` — less than.
        case lt(String)
        /// `lte` — less than or equal.
        case lte(String)
        /// `like` — pattern with `*` already turned into `%`.
        case like(String)
        /// `ilike` — case-insensitive pattern with `*` already turned into `%`.
        case ilike(String)
        /// `in.(a,b,"c,d")` — membership in a list.
        case `in`([String])
        /// `is.null|not_null|true|false|unknown`.
        case `is`(IsValue)
        /// `isdistinct` — `IS DISTINCT FROM` (equality where NULL is a value).
        case isDistinct(String)
        /// `match` — POSIX regular expression (`~`).
        case match(String)
        /// `imatch` — case-insensitive POSIX regular expression (`~*`).
        case imatch(String)
        /// `cs` — contains (`@>`): an array literal such as `{a,b}`, a jsonb value, a range.
        case contains(String)
        /// `cd` — is contained by (`<@`).
        case containedBy(String)
        /// `ov` — overlaps (`&&`), for arrays and ranges.
        case overlaps(String)
        /// `fts`, `plfts`, `phfts`, `wfts` — full-text search, with an optional text search configuration
        /// (`fts(english).cat`).
        case fullText(FullTextSearch, configuration: String?, query: String)
    }

    /// The full-text operators and the PostgreSQL function each turns its query into a `tsquery` with.
    public enum FullTextSearch: String, Sendable, Equatable, CaseIterable {
        /// `fts` — `to_tsquery` (operators `&`, `|`, `!` in the query).
        case fts
        /// `plfts` — `plainto_tsquery` (plain words, all required).
        case plfts
        /// `phfts` — `phraseto_tsquery` (the words as a phrase).
        case phfts
        /// `wfts` — `websearch_to_tsquery` (web-search syntax: quotes, `or`, `-`).
        case wfts

        /// The PostgreSQL function that parses the query.
        public var function: String {
            switch self {
            case .fts: "to_tsquery"
            case .plfts: "plainto_tsquery"
            case .phfts: "phraseto_tsquery"
            case .wfts: "websearch_to_tsquery"
            }
        }
    }

    /// Operand of the `is` operator.
    public enum IsValue: String, Sendable, Equatable {
        /// `IS NULL`.
        case null
        /// `IS NOT NULL`.
        case notNull = "not_null"
        /// `IS TRUE`.
        case `true`
        /// `IS FALSE`.
        case `false`
        /// `IS UNKNOWN`.
        case unknown
    }

    /// Column the condition applies to.
    public var column: String
    /// Whether the condition carried a `not.` prefix.
    public var negated: Bool
    /// Operator and operand.
    public var operation: Operation

    /// Creates a filter.
    public init(column: String, negated: Bool = false, operation: Operation) {
        self.column = column
        self.negated = negated
        self.operation = operation
    }

    /// Parses a top-level filter value such as `not.in.(1,2)` for `column` (operand text kept verbatim).
    public static func parse(column: String, value: String) throws -> PostgRESTFilter {
        let failure = PostgRESTError.parse("failed to parse filter (\(value))")
        var rest = Substring(value)
        var negated = false
        if rest.hasPrefix("not.") {
            negated = true
            rest = rest.dropFirst(4)
        }
        guard let dot = rest.firstIndex(of: ".") else {
            throw PostgRESTError.parse(failure.message, details: "expected an operator followed by '.'")
        }
        let name = String(rest[..<dot])
        let operand = String(rest[rest.index(after: dot)...])
        let operation: Operation
        if name == "in" {
            var cursor = PostgRESTCursor(operand)
            let items = try cursor.parenthesizedList(failure: failure)
            guard cursor.atEnd else { throw PostgRESTError.parse(failure.message, details: "unexpected text after ')'") }
            operation = .in(items)
        } else {
            operation = try makeOperation(name: name, operand: operand, failure: failure)
        }
        return PostgRESTFilter(column: column, negated: negated, operation: operation)
    }

    /// Builds a scalar (non-`in`) operation from its name and operand.
    static func makeOperation(name: String, operand: String, failure: PostgRESTError) throws -> Operation {
        switch name {
        case "eq": return .eq(operand)
        case "neq": return .neq(operand)
        case "gt": return .gt(operand)
        case "gte": return .gte(operand)
        case "lt": return .lt(operand)
        case "lte": return .lte(operand)
        case "like": return .like(operand.replacingStars())
        case "ilike": return .ilike(operand.replacingStars())
        case "is":
            guard let v = IsValue(rawValue: operand.lowercased()) else {
                throw PostgRESTError.parse(failure.message, details: "'is' expects null, not_null, true, false or unknown")
            }
            return .is(v)
        case "isdistinct": return .isDistinct(operand)
        case "match": return .match(operand)
        case "imatch": return .imatch(operand)
        case "cs": return .contains(operand)
        case "cd": return .containedBy(operand)
        case "ov": return .overlaps(operand)
        default:
            if let (search, configuration) = try fullTextOperator(name, failure: failure) {
                return .fullText(search, configuration: configuration, query: operand)
            }
            throw PostgRESTError.parse(failure.message, details: "unknown operator '\(name)'")
        }
    }

    /// Reads `fts`, `plfts`, `phfts` or `wfts`, optionally with a configuration: `wfts(english)`; nil for other names.
    private static func fullTextOperator(_ name: String, failure: PostgRESTError) throws -> (FullTextSearch, String?)? {
        guard let open = name.firstIndex(of: "(") else { return FullTextSearch(rawValue: name).map { ($0, nil) } }
        guard let search = FullTextSearch(rawValue: String(name[..<open])) else { return nil }
        let configuration = name[name.index(after: open)...]
        guard configuration.hasSuffix(")"), configuration.count > 1 else {
            throw PostgRESTError.parse(failure.message, details: "expected '\(search.rawValue)(configuration)'")
        }
        return (search, String(configuration.dropLast()))
    }
}

extension String {
    /// PostgREST's `*` wildcard turned into SQL's `%`.
    func replacingStars() -> String {
        String(map { $0 == "*" ? "%" : $0 })
    }
}
