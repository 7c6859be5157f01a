/// A parsed PostgREST request: target table, filters, projection, ordering, paging and preferences.
public struct PostgRESTQuery: Sendable, Equatable {
    /// Target table (from the `/rest/v1/<table>` path).
    public var table: String
    /// Selected columns (renamed and cast as asked), nil for `*`.
    public var select: [PostgRESTSelectItem]?
    /// Top-level conditions, combined with AND (each query item is one tree).
    public var conditions: [PostgRESTLogicTree]
    /// Ordering terms, in priority order.
    public var order: [PostgRESTOrder]
    /// Row limit, nil for none.
    public var limit: Int?
    /// Rows to skip.
    public var offset: Int
    /// `on_conflict=` columns for upserts, nil when absent.
    public var onConflict: [String]?
    /// `columns=` list restricting which payload keys an insert uses, nil when absent.
    public var insertColumns: [String]?
    /// Parsed `Prefer` header.
    public var preferences: PostgRESTPreferences
    /// Filters, order and paging of embedded resources by dotted key path (`reactions.symbol=eq.x`,
    /// `reactions.order=at.desc`, `reactions.limit=2`).
    public var embeddedOptions: [String: PostgRESTEmbeddedOptions] = [:]

    /// Creates a query directly.
    public init(table: String, select: [PostgRESTSelectItem]? = nil, conditions: [PostgRESTLogicTree] = [],
                order: [PostgRESTOrder] = [], limit: Int? = nil, offset: Int = 0, onConflict: [String]? = nil,
                insertColumns: [String]? = nil, preferences: PostgRESTPreferences = PostgRESTPreferences()) {
        self.table = table
        self.select = select
        self.conditions = conditions
        self.order = order
        self.limit = limit
        self.offset = offset
        self.onConflict = onConflict
        self.insertColumns = insertColumns
        self.preferences = preferences
    }

    /// Parses a request from its table name, percent-decoded query items (repeats kept) and headers.
    public static func parse(table: String, queryItems: [(name: String, value: String)],
                             headers: [(name: String, value: String)] = []) throws -> PostgRESTQuery {
        var query = PostgRESTQuery(table: table)
        var limit: Int?
        var offset: Int?
        // A dotted key names an embedded resource's filter or option when its path is one the select embeds; the
        // select may come later in the query string, so these wait until it is known.
        var dotted: [(name: String, value: String)] = []
        for (name, value) in queryItems {
            // PostgreSQL text cannot hold NUL and libpq's parameters end at the first one: refuse it rather than
            // let `a%00b` silently become `a`.
            guard !name.unicodeScalars.contains("\0"), !value.unicodeScalars.contains("\0") else {
                throw PostgRESTError.parse("failed to parse the query string", details: "NUL (%00) is not allowed")
            }
            if name.contains("."), !["not.and", "not.or"].contains(name) {
                dotted.append((name, value))
                continue
            }
            switch name {
            case "select": query.select = try parseSelect(value)
            case "order": query.order += try PostgRESTOrder.parseList(value)
            case "limit": limit = try parseCount(value, parameter: "limit")
            case "offset": offset = try parseCount(value, parameter: "offset")
            case "on_conflict": query.onConflict = try parseColumnList(value, parameter: "on_conflict")
            case "columns": query.insertColumns = try parseColumnList(value, parameter: "columns")
            case "and", "or", "not.and", "not.or":
                query.conditions.append(try PostgRESTLogicTree.parse(key: name, value: value))
            default:
                query.conditions.append(.filter(try PostgRESTFilter.parse(column: name, value: value)))
            }
        }
        let paths = PostgRESTSelectItem.embeddedPaths(query.select ?? [])
        for (name, value) in dotted {
            let dot = name.lastIndex(of: ".")!
            let path = String(name[..<dot]), last = String(name[name.index(after: dot)...])
            guard paths.contains(path) else {
                query.conditions.append(.filter(try PostgRESTFilter.parse(column: name, value: value)))
                continue
            }
            var options = query.embeddedOptions[path] ?? PostgRESTEmbeddedOptions()
            switch last {
            case "order": options.order += try PostgRESTOrder.parseList(value)
            case "limit": options.limit = try parseCount(value, parameter: name)
            case "offset": options.offset = try parseCount(value, parameter: name)
            case "and", "or": options.conditions.append(try PostgRESTLogicTree.parse(key: last, value: value))
            default: options.conditions.append(.filter(try PostgRESTFilter.parse(column: last, value: value)))
            }
            query.embeddedOptions[path] = options
        }
        func header(_ key: String) -> [String] {
            headers.filter { $0.name.lowercased() == key }.map(\.value)
        }
        query.preferences = PostgRESTPreferences.parse(headerValues: header("prefer"))

        // Intersect the query-string range with the Range header (PostgREST semantics).
        var lower = offset ?? 0
        var upper: Int? = limit.map { lower + $0 - 1 }
        let unitIsItems = header("range-unit").allSatisfy { $0.trimmingSpaces().lowercased() == "items" }
        if unitIsItems, let range = header("range").first, let (from, to) = try parseRangeHeader(range) {
            lower = max(lower, from)
            if let to { upper = upper.map { min($0, to) } ?? to }
        }
        query.offset = lower
        query.limit = upper.map { max(0, $0 - lower + 1) }
        return query
    }

    /// The `Content-Range` header value for a read that returned `rowCount` rows (`0-14/*`, `*/0`, `0-14/57`).
    public func contentRange(rowCount: Int, total: Int? = nil) -> String {
        let totalText = total.map(String.init) ?? "*"
        guard rowCount > 0 else { return "*/" + totalText }
        return "\(offset)-\(offset + rowCount - 1)/" + totalText
    }

    /// Every column of the table the query mentions (an embedded resource's columns are its table's).
    public var referencedColumns: [String] {
        (select ?? []).compactMap { $0.column == "*" || $0.embedded != nil ? nil : $0.column } + conditions.flatMap(\.columns) + order.map(\.column) + (onConflict ?? []) + (insertColumns ?? [])
    }

    private static func parseSelect(_ value: String) throws -> [PostgRESTSelectItem]? {
        let items = try PostgRESTSelectItem.parseList(value, failure: "failed to parse select parameter (\(value))")
        return items == ["*"] ? nil : items
    }

    /// Parses `a,b` or `"a","b"` (postgrest-js/py quote `columns=`; `\"` and `\\` escapes inside quotes).
    private static func parseColumnList(_ value: String, parameter: String) throws -> [String] {
        let failure = PostgRESTError.parse("failed to parse \(parameter) parameter (\(value))")
        var cursor = PostgRESTCursor(value)
        var columns: [String] = []
        while true {
            while cursor.consume(" ") || cursor.consume("\t") {}
            let column = cursor.current == "\""
                ? try cursor.quoted(failure: failure)
                : try cursor.value(stops: [","], failure: failure).trimmingSpaces()
            while cursor.consume(" ") || cursor.consume("\t") {}
            guard !column.isEmpty else { throw PostgRESTError.parse(failure.message, details: "empty column name") }
            columns.append(column)
            if cursor.atEnd { return columns }
            guard cursor.consume(",") else {
                throw PostgRESTError.parse(failure.message, details: "expected ',' after a quoted column name")
            }
        }
    }

    private static func parseCount(_ value: String, parameter: String) throws -> Int {
        guard let n = Int(value), n >= 0 else {
            throw PostgRESTError.parse("failed to parse \(parameter) parameter (\(value))",
                                       details: "expected a non-negative integer")
        }
        return n
    }

    /// Parses `Range: a-b` or `a-`; nil when malformed (ignored, like PostgREST), 416 when a > b.
    private static func parseRangeHeader(_ value: String) throws -> (Int, Int?)? {
        let parts = value.trimmingSpaces().split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let from = Int(parts[0]), from >= 0 else { return nil }
        if parts[1].isEmpty { return (from, nil) }
        guard let to = Int(parts[1]), to >= 0 else { return nil }
        guard from <= to else {
            throw PostgRESTError(status: 416, code: "PGRST103", message: "Requested range not satisfiable",
                                 details: "The lower boundary must be lower than or equal to the upper boundary in the Range header.")
        }
        return (from, to)
    }
}

/// What a query asks of one embedded resource besides its columns: filters, order and paging of its rows.
public struct PostgRESTEmbeddedOptions: Sendable, Equatable {
    /// Conditions on the embedded rows, combined with AND.
    public var conditions: [PostgRESTLogicTree] = []
    /// Ordering of the embedded rows.
    public var order: [PostgRESTOrder] = []
    /// Most embedded rows per parent row, nil for all.
    public var limit: Int?
    /// Embedded rows to skip per parent row.
    public var offset = 0

    /// No filters, order or paging.
    public init() {}
}
