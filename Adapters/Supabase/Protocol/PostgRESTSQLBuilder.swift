import SwitchboardCore
/// Turns a parsed `PostgRESTQuery` into parameterised SQL for one table.
///
/// Every statement answers one row `(body text, total bigint)` when rows are wanted:
/// `body` is the JSON array of rows (`coalesce(json_agg(..), '[]')`), `total` is the exact
/// count for `Prefer: count=exact` on reads (a scalar `count(*)` subquery reusing the same
/// WHERE text and parameter numbers) and the affected-row count for mutations.
/// Mutations without `return=representation` are plain statements with no RETURNING
/// (use the command tag's row count). Identifiers are always double-quoted; every value
/// is a bound text parameter cast with `$n::<column type>`, except that an array insert whose rows all carry
/// every column binds the whole body as one `json` parameter read with `json_to_recordset` (as PostgREST does).
public struct PostgRESTSQLBuilder: Sendable {
    /// The table statements are built for.
    public let table: PostgRESTTableSchema
    /// Every table of the schema by name: where embedded resources (`select=id,reactions(*)`) are looked up.
    public let tables: [String: PostgRESTTableSchema]

    /// Creates a builder for `table`; `tables` are the schema's tables, for resource embedding.
    public init(table: PostgRESTTableSchema, tables: [String: PostgRESTTableSchema] = [:]) {
        self.table = table
        self.tables = tables
    }

    /// Quotes an identifier: wrapped in double quotes, embedded quotes doubled.
    public static func quoteIdentifier(_ name: String) -> String {
        "\"" + String(name.flatMap { $0 == "\"" ? ["\"", "\""] : [$0] }) + "\""
    }

    /// `SELECT` with filters, projection, order, limit/offset and optional exact count.
    public func select(_ query: PostgRESTQuery) throws -> (sql: String, parameters: [String?]) {
        try validate(query)
        var binder = Binder()
        let projected = try projection(query, parent: qualifiedName, &binder)
        let whereClause = try whereSQL(query.conditions, &binder, extra: projected.inner)
        var inner = "SELECT \(projected.sql) FROM \(qualifiedName)\(whereClause)"
        if !query.order.isEmpty {
            inner += " ORDER BY " + query.order.map(orderSQL).joined(separator: ", ")
        }
        if let limit = query.limit { inner += " LIMIT " + binder.bind(String(limit), type: "bigint") }
        if query.offset > 0 { inner += " OFFSET " + binder.bind(String(query.offset), type: "bigint") }
        let total = query.preferences.count == nil
            ? "NULL::bigint"
            : "(SELECT count(*) FROM \(qualifiedName)\(whereClause))"
        let sql = "SELECT coalesce(json_agg(_pgrst_t), '[]')::text AS body, \(total) AS total FROM (\(inner)) _pgrst_t"
        return (sql, binder.parameters)
    }

    /// `INSERT` (single object or array of objects), upsert via `Prefer: resolution=` + `on_conflict`.
    ///
    /// `bodyText` is the request's JSON text that `body` was parsed from, when the caller has it: an array bound as
    /// one json parameter is then bound as sent instead of being serialized again (PostgreSQL reads the same values).
    public func insert(_ query: PostgRESTQuery, body: JSONValue, bodyText: String? = nil) throws -> (sql: String, parameters: [String?]) {
        try validate(query)
        let rows = try Self.rows(from: body)
        let isArray = if case .array = body { true } else { false }
        // With the rows at hand the statement always exists (VALUES when the recordset does not apply).
        return try insertStatement(query, isArray: isArray, keys: rows.map { $0.map(\.key) }, rows: rows,
                                   bodyText: { bodyText ?? body.serialized })!
    }

    /// The `INSERT` of an array of objects known only by its member names (`JSONValue.objectKeys` of `bodyText`), so
    /// the body need not be parsed: the statement when every row carries every column (the text is bound as one json
    /// parameter), else nil — the caller then parses the body for `insert(_:body:bodyText:)`, which writes DEFAULT
    /// where a row lacks a column.
    public func insert(_ query: PostgRESTQuery, arrayKeys keys: [[String]],
                       bodyText: String) throws -> (sql: String, parameters: [String?])? {
        try validate(query)
        return try insertStatement(query, isArray: true, keys: keys, rows: nil, bodyText: { bodyText })
    }

    /// The `INSERT` for rows with member names `keys` (values in `rows`, when parsed): the whole body as one json
    /// recordset when it is an array whose rows all carry every column, else VALUES (nil without `rows`).
    private func insertStatement(_ query: PostgRESTQuery, isArray: Bool, keys: [[String]],
                                 rows: [[(key: String, value: JSONValue)]]?,
                                 bodyText: () -> String) throws -> (sql: String, parameters: [String?])? {
        var columns: [String] = query.insertColumns ?? []
        if query.insertColumns == nil {
            for row in keys { for key in row where !columns.contains(key) { columns.append(key) } }
        }
        let types = try columns.map { try castType(for: $0) }
        var binder = Binder()
        var sql = "INSERT INTO \(qualifiedName)"
        if isArray, !columns.isEmpty, Self.everyRow(keys, hasEach: columns) {
            // One json parameter for the whole body: the same statement text for any row count, parsed once by
            // PostgreSQL, instead of one parameter per cell. Only when no row lacks a column (a lacking key means DEFAULT).
            let quoted = columns.map(Self.quoteIdentifier)
            let body = binder.bind(bodyText(), type: "json")
            sql += " (" + quoted.joined(separator: ", ") + ") SELECT "
                + quoted.map { "_pgrst_body." + $0 }.joined(separator: ", ")
                + " FROM json_to_recordset(\(body)) AS _pgrst_body("
                + zip(quoted, types).map { "\($0) \($1)" }.joined(separator: ", ") + ")"
        } else if let rows, columns.isEmpty {
            sql += " SELECT FROM generate_series(1, \(binder.bind(String(rows.count), type: "integer")))"
        } else if let rows {
            sql += " (" + columns.map(Self.quoteIdentifier).joined(separator: ", ") + ") VALUES "
            sql += rows.map { row in
                let values = Dictionary(row, uniquingKeysWith: { _, last in last })
                return "(" + zip(columns, types).map { column, type in
                    guard let value = values[column] else { return "DEFAULT" }
                    return binder.bind(Self.parameterText(value, type: type), type: type)
                }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
        } else {
            return nil
        }
        if let resolution = query.preferences.resolution {
            let target = query.onConflict ?? table.primaryKey
            guard !target.isEmpty else {
                throw PostgRESTError(status: 400, code: "42P10",
                                     message: "there is no unique or exclusion constraint matching the ON CONFLICT specification")
            }
            sql += " ON CONFLICT (" + target.map(Self.quoteIdentifier).joined(separator: ", ") + ")"
            if resolution == .mergeDuplicates, !columns.isEmpty {
                sql += " DO UPDATE SET " + columns.map {
                    "\(Self.quoteIdentifier($0)) = EXCLUDED.\(Self.quoteIdentifier($0))"
                }.joined(separator: ", ")
            } else {
                sql += " DO NOTHING"
            }
        }
        let statement = try wrapMutation(sql, query, &binder)
        return (statement, binder.parameters)
    }

    /// `UPDATE` (PATCH) of the filtered rows with the body object's keys.
    public func update(_ query: PostgRESTQuery, body: JSONValue) throws -> (sql: String, parameters: [String?]) {
        try validate(query)
        guard case let .object(pairs) = body else { throw PostgRESTError.invalidBody("PATCH expects a JSON object") }
        guard !pairs.isEmpty else { return ("SELECT '[]'::text AS body, 0::bigint AS total", []) }
        var binder = Binder()
        var assignments: [String] = []
        var seen: [String: Int] = [:]
        for (key, value) in pairs {
            let type = try castType(for: key)
            let assignment = "\(Self.quoteIdentifier(key)) = \(binder.bind(Self.parameterText(value, type: type), type: type))"
            if let at = seen[key] { assignments[at] = assignment } else {
                seen[key] = assignments.count
                assignments.append(assignment)
            }
        }
        let sql = "UPDATE \(qualifiedName) SET " + assignments.joined(separator: ", ")
            + (try whereSQL(query.conditions, &binder))
        let statement = try wrapMutation(sql, query, &binder)
        return (statement, binder.parameters)
    }

    /// `DELETE` of the filtered rows.
    public func delete(_ query: PostgRESTQuery) throws -> (sql: String, parameters: [String?]) {
        try validate(query)
        var binder = Binder()
        let sql = "DELETE FROM \(qualifiedName)" + (try whereSQL(query.conditions, &binder))
        let statement = try wrapMutation(sql, query, &binder)
        return (statement, binder.parameters)
    }

    // MARK: - Pieces

    private struct Binder {
        var parameters: [String?] = []

        mutating func bind(_ value: String?, type: String) -> String {
            parameters.append(value)
            return "$\(parameters.count)::\(type)"
        }
    }

    private var qualifiedName: String {
        Self.quoteIdentifier(table.schema) + "." + Self.quoteIdentifier(table.name)
    }

    /// The select list: `*`, or each column quoted, cast (`::type`, a checked type name) and renamed as asked, and
    /// each embedded resource as a correlated subquery on `parent` (how the statement names the table's rows); with
    /// the conditions `!inner` embeddings put on the table's own rows.
    private func projection(_ query: PostgRESTQuery, parent: String, _ binder: inout Binder) throws -> (sql: String, inner: [String]) {
        guard let items = query.select else { return ("*", []) }
        var embeddings = 0
        return try projection(items, of: table, parent: parent, path: "", options: query.embeddedOptions,
                              binder: &binder, embeddings: &embeddings)
    }

    private func projection(_ items: [PostgRESTSelectItem], of table: PostgRESTTableSchema, parent: String, path: String,
                            options: [String: PostgRESTEmbeddedOptions], binder: inout Binder,
                            embeddings: inout Int) throws -> (sql: String, inner: [String]) {
        var columns: [String] = []
        var inner: [String] = []
        for item in items {
            guard item.column != "*" else {
                columns.append("*")
                continue
            }
            if let children = item.embedded {
                let embedded = try embedding(item, children, of: table, parent: parent,
                                             path: path.isEmpty ? item.key : path + "." + item.key, options: options,
                                             binder: &binder, embeddings: &embeddings)
                columns.append(embedded.value)
                if let exists = embedded.exists { inner.append(exists) }
                continue
            }
            guard table.column(named: item.column) != nil else {
                throw PostgRESTError.undefinedColumn(table: table.name, column: item.column)
            }
            // Unqualified: a column resolves in the innermost FROM, the embedded table's own in its subquery.
            var sql = Self.quoteIdentifier(item.column)
            if let cast = item.cast {
                // The type name goes into the statement as it is: checked here too, whoever built the query.
                guard PostgRESTSelectItem.isTypeName(cast) else {
                    throw PostgRESTError.parse("failed to parse select parameter", details: "'\(cast)' is not a type name")
                }
                sql += "::" + cast
            }
            if item.alias != nil || item.cast != nil { sql += " AS " + Self.quoteIdentifier(item.key) }
            columns.append(sql)
        }
        return (columns.joined(separator: ", "), inner)
    }

    /// One embedded resource: the related table's rows as a JSON array (it references `table`: one-to-many) or
    /// its one row as a JSON object or null (`table` references it: many-to-one), found through the foreign key
    /// between the two, filtered, ordered and paged as `options[path]` asks; row-level security applies to them as
    /// to any read. For `!inner`, also the `EXISTS` condition that keeps only parent rows with a related row.
    private func embedding(_ item: PostgRESTSelectItem, _ children: [PostgRESTSelectItem], of table: PostgRESTTableSchema,
                           parent: String, path: String, options: [String: PostgRESTEmbeddedOptions], binder: inout Binder,
                           embeddings: inout Int) throws -> (value: String, exists: String?) {
        guard let related = tables[item.column] else {
            throw PostgRESTError(status: 400, code: "PGRST200",
                                 message: "Could not find a relationship between '\(table.name)' and '\(item.column)' in the schema cache",
                                 hint: "Perhaps the table '\(item.column)' does not exist")
        }
        let toMany = related.foreignKeys.filter { $0.referencedTable == table.name }
        let toOne = table.foreignKeys.filter { $0.referencedTable == related.name }
        guard toMany.count + toOne.count == 1, related.name != table.name else {
            if toMany.isEmpty && toOne.isEmpty {
                throw PostgRESTError(status: 400, code: "PGRST200",
                                     message: "Could not find a relationship between '\(table.name)' and '\(related.name)' in the schema cache")
            }
            throw PostgRESTError(status: 300, code: "PGRST201",
                                 message: "Could not embed because more than one relationship was found for '\(table.name)' and '\(related.name)'",
                                 details: "embedding hints ('\(related.name)!fk(...)') are not supported by this server")
        }
        embeddings += 1
        let alias = "_pgrst_e\(embeddings)"
        let pairs: [(child: String, parent: String)] = if let key = toMany.first {
            Array(zip(key.columns, key.referencedColumns))
        } else {
            zip(toOne[0].referencedColumns, toOne[0].columns).map { ($0, $1) }
        }
        var conditions = pairs.map { "\(alias).\(Self.quoteIdentifier($0.child)) = \(parent).\(Self.quoteIdentifier($0.parent))" }
        let own = options[path] ?? PostgRESTEmbeddedOptions()
        let child = PostgRESTSQLBuilder(table: related, tables: tables)
        for column in own.conditions.flatMap(\.columns) + own.order.map(\.column) where related.column(named: column) == nil {
            throw PostgRESTError.undefinedColumn(table: related.name, column: column)
        }
        conditions += try own.conditions.map { try child.treeSQL($0, &binder) }
        let (columns, nestedInner) = try child.projection(children, of: related, parent: alias, path: path, options: options,
                                                          binder: &binder, embeddings: &embeddings)
        let from = "FROM \(Self.quoteIdentifier(related.schema)).\(Self.quoteIdentifier(related.name)) AS \(alias) WHERE "
            + (conditions + nestedInner).joined(separator: " AND ")
        var rows = "SELECT \(columns) \(from)"
        if !own.order.isEmpty { rows += " ORDER BY " + own.order.map(orderSQL).joined(separator: ", ") }
        if toMany.isEmpty {
            rows += " LIMIT 1"
        } else {
            if let limit = own.limit { rows += " LIMIT " + binder.bind(String(limit), type: "bigint") }
            if own.offset > 0 { rows += " OFFSET " + binder.bind(String(own.offset), type: "bigint") }
        }
        let value = toMany.isEmpty
            ? "(SELECT row_to_json(\(alias)_row) FROM (\(rows)) \(alias)_row)"
            : "(SELECT coalesce(json_agg(\(alias)_row), '[]') FROM (\(rows)) \(alias)_row)"
        return (value + " AS " + Self.quoteIdentifier(item.key), item.isInner ? "EXISTS (SELECT 1 \(from))" : nil)
    }

    private func validate(_ query: PostgRESTQuery) throws {
        for column in query.referencedColumns where table.column(named: column) == nil {
            throw PostgRESTError.undefinedColumn(table: table.name, column: column)
        }
    }

    /// The column's type for a `::` cast; rejects unknown columns and type names that are not plain type syntax.
    private func castType(for column: String) throws -> String {
        guard let info = table.column(named: column) else {
            throw PostgRESTError.undefinedColumn(table: table.name, column: column)
        }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ .,()[]\"")
        guard !info.type.isEmpty, info.type.allSatisfy(allowed.contains) else {
            throw PostgRESTError(status: 500, code: "XX000", message: "unsupported column type name for \(column)")
        }
        return info.type
    }

    private func orderSQL(_ order: PostgRESTOrder) -> String {
        var sql = Self.quoteIdentifier(order.column)
        if let direction = order.direction { sql += direction == .asc ? " ASC" : " DESC" }
        if let nulls = order.nulls { sql += nulls == .first ? " NULLS FIRST" : " NULLS LAST" }
        return sql
    }

    private func whereSQL(_ conditions: [PostgRESTLogicTree], _ binder: inout Binder, extra: [String] = []) throws -> String {
        let all = try conditions.map { try treeSQL($0, &binder) } + extra
        return all.isEmpty ? "" : " WHERE " + all.joined(separator: " AND ")
    }

    private func treeSQL(_ tree: PostgRESTLogicTree, _ binder: inout Binder) throws -> String {
        switch tree {
        case let .filter(filter):
            let sql = try filterSQL(filter, &binder)
            return filter.negated ? "NOT (\(sql))" : sql
        case let .group(connective, negated, children):
            let separator = connective == .and ? " AND " : " OR "
            let sql = "(" + (try children.map { try treeSQL($0, &binder) }.joined(separator: separator)) + ")"
            return negated ? "NOT \(sql)" : sql
        }
    }

    private func filterSQL(_ filter: PostgRESTFilter, _ binder: inout Binder) throws -> String {
        let column = Self.quoteIdentifier(filter.column)
        let type = try castType(for: filter.column)
        func compare(_ op: String, _ value: String) -> String { "\(column) \(op) \(binder.bind(value, type: type))" }
        switch filter.operation {
        case let .eq(v): return compare("=", v)
        case let .neq(v): return compare("<>", v)
        case let .gt(v): return compare(">", v)
        case let .gte(v): return compare(">=", v)
        case let .lt(v): return compare("<", v)
        case let .lte(v): return compare("<=", v)
        case let .like(p): return "\(column) LIKE \(binder.bind(p, type: "text"))"
        case let .ilike(p): return "\(column) ILIKE \(binder.bind(p, type: "text"))"
        case let .in(values):
            guard !values.isEmpty else { return "FALSE" }
            return "\(column) IN (" + values.map { binder.bind($0, type: type) }.joined(separator: ", ") + ")"
        case let .is(value):
            switch value {
            case .null: return "\(column) IS NULL"
            case .notNull: return "\(column) IS NOT NULL"
            case .true: return "\(column) IS TRUE"
            case .false: return "\(column) IS FALSE"
            case .unknown: return "\(column) IS UNKNOWN"
            }
        case let .isDistinct(v): return compare("IS DISTINCT FROM", v)
        case let .match(p): return "\(column) ~ \(binder.bind(p, type: "text"))"
        case let .imatch(p): return "\(column) ~* \(binder.bind(p, type: "text"))"
        case let .contains(v): return compare("@>", v)
        case let .containedBy(v): return compare("<@", v)
        case let .overlaps(v): return compare("&&", v)
        case let .fullText(search, configuration, query):
            // As PostgREST: a tsvector column is searched as it is, any other through to_tsvector.
            var vector = column
            if type != "tsvector" {
                vector = "to_tsvector(" + (configuration.map { binder.bind($0, type: "regconfig") + ", " } ?? "") + column + ")"
            }
            let queryConfiguration = configuration.map { binder.bind($0, type: "regconfig") + ", " } ?? ""
            return "\(vector) @@ \(search.function)(\(queryConfiguration)\(binder.bind(query, type: "text")))"
        }
    }

    /// With `return=representation`, runs the mutation in a CTE with `RETURNING *` and aggregates the rows.
    private func wrapMutation(_ sql: String, _ query: PostgRESTQuery, _ binder: inout Binder) throws -> String {
        guard query.preferences.returnMode == .representation else { return sql }
        let projected = try projection(query, parent: "_pgrst_rows", &binder)
        let filter = projected.inner.isEmpty ? "" : " WHERE " + projected.inner.joined(separator: " AND ")
        return "WITH _pgrst_rows AS (\(sql) RETURNING *) SELECT coalesce(json_agg(_pgrst_t), '[]')::text AS body, "
            + "count(*) AS total FROM (SELECT \(projected.sql) FROM _pgrst_rows\(filter)) _pgrst_t"
    }

    /// The text bound for a body value: like `parameterText`, but a JSON string stays JSON for `json`/`jsonb` columns.
    static func parameterText(_ value: JSONValue, type: String) -> String? {
        if case .string = value, type == "json" || type == "jsonb" { return value.serialized }
        return value.parameterText
    }

    /// Whether every row has each of `columns` exactly once (so a JSON recordset reads the same values as VALUES would).
    private static func everyRow(_ rows: [[String]], hasEach columns: [String]) -> Bool {
        let position = Dictionary(columns.enumerated().map { ($0.element, $0.offset) }, uniquingKeysWith: { first, _ in first })
        guard position.count == columns.count else { return false }
        var lastRow = [Int](repeating: -1, count: columns.count)
        for (index, row) in rows.enumerated() {
            var found = 0
            for key in row {
                guard let at = position[key] else { continue }
                guard lastRow[at] != index else { return false }
                lastRow[at] = index
                found += 1
            }
            guard found == columns.count else { return false }
        }
        return true
    }

    private static func rows(from body: JSONValue) throws -> [[(key: String, value: JSONValue)]] {
        switch body {
        case let .object(pairs): return [pairs]
        case let .array(items):
            return try items.map {
                guard case let .object(pairs) = $0 else { throw PostgRESTError.invalidBody("expected an array of objects") }
                return pairs
            }
        default: throw PostgRESTError.invalidBody("expected a JSON object or array")
        }
    }
}
