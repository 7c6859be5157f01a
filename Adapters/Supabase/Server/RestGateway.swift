import SwitchboardCore
import Foundation
import SupabaseProtocol
import SwitchboardNet
import SwitchboardPostgres

/// PostgREST-compatible `/rest/v1/<table>`: reads, inserts/upserts, updates and deletes on the tables and views of
/// schema `public`, each run in one transaction as the caller's role so PostgreSQL's row-level security decides.
///
/// Every request is authenticated first (401 `PGRST301` otherwise); SQL comes from `PostgRESTSQLBuilder`
/// (quoted identifiers, bound parameters); database errors are answered like PostgREST (`RestErrorMapping`).
final class RestGateway: Sendable {
    /// The shared server state (pool, authenticator, configuration).
    let context: SupabaseServerContext
    /// The cached description of the exposed tables.
    let catalog: TableCatalog

    /// The path every REST route lives under.
    static let pathPrefix = "/rest/v1"
    /// `Content-Type` of JSON array answers and error bodies.
    static let jsonContentType = "application/json; charset=utf-8"
    /// The media type asking for one JSON object instead of an array.
    static let objectMediaType = "application/vnd.pgrst.object+json"
    /// What `OPTIONS` answers in `Allow` (PUT upserts are not supported).
    static let allowedMethods = "OPTIONS,GET,HEAD,POST,PATCH,DELETE"

    /// A gateway over `context`'s pool; the table catalog loads on the first request.
    init(context: SupabaseServerContext) {
        self.context = context
        self.catalog = TableCatalog(pool: context.pool)
    }

    /// Answers one `/rest/v1/...` request; never throws (every failure becomes a PostgREST error body).
    func handle(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        do {
            return try await respond(to: request)
        } catch let error as PostgRESTError {
            return Self.errorResponse(error)
        } catch let error as PostgresError {
            return Self.errorResponse(logged(RestErrorMapping.postgrestError(for: error, authenticated: true), request))
        } catch {
            context.logger.error("REST \(request.method) \(request.path) failed: \(type(of: error))")
            return Self.errorResponse(PostgRESTError(status: 500, code: "PGRSTX00", message: "Internal server error"))
        }
    }

    // MARK: - Dispatch

    /// Authenticates, checks the request's envelope, then runs the method's handler.
    private func respond(to request: HTTPServerRequest) async throws -> HTTPServerResponse {
        let function = Self.functionName(in: request.path)
        let tableName = try function == nil ? Self.tableName(in: request.path) : ""
        if request.method == .options {
            if function != nil {
                return HTTPServerResponse(status: 200, headers: ["Allow": "OPTIONS,GET,HEAD,POST", "Access-Control-Allow-Origin": "*"])
            }
            return try await options(request, tableName: tableName)
        }
        let identity: RequestIdentity
        do {
            identity = try context.authenticator.identity(headers: request.headers)
        } catch {
            let description = JSONValue.string(error.message).serialized
            return Self.errorResponse(error.postgrestError,
                                      headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\", error_description=\(description)"])
        }
        guard [.get, .head, .post, .patch, .delete].contains(request.method) else {
            throw PostgRESTError(status: 405, code: "PGRST117", message: "Unsupported HTTP method: \(request.method)")
        }
        let limit = context.configuration.maxRESTBodySize
        guard request.body.count <= limit else {
            throw PostgRESTError(status: 413, code: "PGRST102", message: "Request body too large",
                                 details: "The body has \(request.body.count) bytes; the limit is \(limit) bytes.")
        }
        let reading = request.method == .get || request.method == .head
        let profileHeader = reading ? "Accept-Profile" : "Content-Profile"
        if let profile = request.headers[profileHeader], profile != TableCatalog.schema {
            throw PostgRESTError(status: 406, code: "PGRST106", message: "Invalid schema: \(profile)",
                                 hint: "Only the following schemas are exposed: \(TableCatalog.schema)")
        }
        if let function {
            do {
                return try await call(function, request, identity: identity)
            } catch let error as PostgresError {
                throw logged(RestErrorMapping.postgrestError(for: error, authenticated: identity.role != .anon), request)
            }
        }
        guard let table = try await catalog.table(named: tableName) else {
            throw tableNotFound(tableName)
        }
        let items = request.queryItems.filter { $0.name != "apikey" }.map { (name: $0.name, value: $0.value) }
        let query = try PostgRESTQuery.parse(table: tableName, queryItems: items, headers: request.headers.fields)
        // An embedded table the cache does not know may have been created since it was loaded: reload it once.
        if !PostgRESTSelectItem.embeddedTables(query.select ?? []).isSubset(of: catalog.knownTables.keys) {
            try await catalog.reload()
        }
        let operation = RestOperation(request: request, table: table, query: query, identity: identity)
        do {
            switch request.method {
            case .get, .head: return try await read(operation)
            case .post: return try await insert(operation)
            case .patch: return try await update(operation)
            default: return try await delete(operation)
            }
        } catch let error as PostgresError {
            let authenticated = identity.role != .anon
            throw logged(RestErrorMapping.postgrestError(for: error, authenticated: authenticated), request)
        }
    }

    /// Logs server-side (5xx) failures by code and message only, then hands the error back.
    private func logged(_ error: PostgRESTError, _ request: HTTPServerRequest) -> PostgRESTError {
        if error.status >= 500 {
            context.logger.error("REST \(request.method) \(request.path): \(error.status) \(error.code) \(error.message)")
        }
        return error
    }

    /// `OPTIONS /rest/v1/<table>`: the allowed methods and CORS preflight headers (no authentication, as PostgREST).
    private func options(_ request: HTTPServerRequest, tableName: String) async throws -> HTTPServerResponse {
        guard try await catalog.table(named: tableName) != nil else { throw tableNotFound(tableName) }
        var headers: HTTPHeaders = ["Allow": Self.allowedMethods, "Access-Control-Allow-Origin": "*"]
        if request.headers["Access-Control-Request-Method"] != nil {
            headers["Access-Control-Allow-Methods"] = "GET, POST, PATCH, DELETE, OPTIONS, HEAD"
            headers["Access-Control-Allow-Headers"] = request.headers["Access-Control-Request-Headers"]
                ?? "Authorization, apikey, Content-Type, Prefer, Range, Accept-Profile, Content-Profile"
            headers["Access-Control-Max-Age"] = "86400"
        }
        return HTTPServerResponse(status: 200, headers: headers)
    }

    // MARK: - Methods

    /// GET/HEAD: the filtered, ordered, ranged rows with `Content-Range` (and the exact total when asked).
    private func read(_ operation: RestOperation) async throws -> HTTPServerResponse {
        let query = operation.query
        let statement = try PostgRESTSQLBuilder(table: operation.table, tables: catalog.knownTables).select(query)
        let sql = "SELECT _pgrst_q.body, _pgrst_q.total, json_array_length(_pgrst_q.body::json) "
            + "FROM (\(statement.sql)) _pgrst_q"
        let parameters = statement.parameters
        let result = try await context.transaction(as: operation.identity) { try $0.query(sql, parameters) }
        guard let row = result.rows.first, row.count == 3 else {
            throw PostgRESTError(status: 500, code: "PGRSTX00", message: "Internal server error")
        }
        let body = row[0] ?? "[]"
        let total = row[1].flatMap { Int($0) }
        let rowCount = row[2].flatMap { Int($0) } ?? 0
        let contentRange = query.contentRange(rowCount: rowCount, total: total)
        var status = 200
        if let total {
            if query.offset > total {
                var error = PostgRESTError(status: 416, code: "PGRST103", message: "Requested range not satisfiable")
                error.details = "An offset of \(query.offset) was requested, but there are only \(total) rows."
                return Self.errorResponse(error, headers: ["Content-Range": contentRange])
            }
            if rowCount < total { status = 206 }
        }
        var headers: HTTPHeaders = ["Content-Range": contentRange]
        if let applied = Self.preferenceApplied(query.preferences, mutation: nil) {
            headers["Preference-Applied"] = applied
        }
        let payload: String
        if operation.wantsObject {
            guard rowCount == 1 else { throw Self.singularityError(rows: rowCount) }
            payload = Self.singleObject(body)
            headers["Content-Type"] = Self.objectMediaType + "; charset=utf-8"
        } else {
            payload = body
            headers["Content-Type"] = Self.jsonContentType
        }
        let data = operation.request.method == .head ? Data() : Data(payload.utf8)
        return HTTPServerResponse(status: status, headers: headers, body: data)
    }

    /// POST: insert one object or an array (upsert with `Prefer: resolution=`); 201.
    private func insert(_ operation: RestOperation) async throws -> HTTPServerResponse {
        let text = try Self.bodyText(operation.request)
        let table = operation.table
        let location = operation.query.preferences.returnMode == .headersOnly && !table.primaryKey.isEmpty
        var query = operation.executionQuery
        if location, !operation.wantsRows {
            query.preferences.returnMode = .representation
            query.select = table.primaryKey.map { PostgRESTSelectItem(column: $0) }
        }
        let builder = PostgRESTSQLBuilder(table: table, tables: catalog.knownTables)
        // An array of objects (a bulk insert) is read for its member names only: when every row carries every
        // column the text goes to PostgreSQL as it came, so its values are never built here.
        var named: (sql: String, parameters: [String?])?
        if let shape = JSONValue.objectKeys(operation.request.body), shape.isArray {
            try Self.checkColumns(operation.query.insertColumns ?? Self.keys(shape.keys), of: table)
            named = try builder.insert(query, arrayKeys: shape.keys, bodyText: text)
        }
        let statement: (sql: String, parameters: [String?])
        if let named {
            statement = named
        } else {
            let body = try PostgRESTError.parseBody(text)
            try Self.checkColumns(operation.query.insertColumns ?? Self.bodyKeys(body), of: table)
            statement = try builder.insert(query, body: body, bodyText: text)
        }
        let outcome = try await mutate(statement, operation)
        var headers: HTTPHeaders = ["Content-Range": Self.contentRange(lower: 1, upper: 0, total: operation.countedTotal(outcome))]
        if location, let path = Self.location(table: table, rows: outcome.body) {
            headers["Location"] = path
        }
        let upsertTarget = operation.query.onConflict != nil || !table.primaryKey.isEmpty
        if let applied = Self.preferenceApplied(operation.query.preferences, mutation: upsertTarget ? .insert : .other) {
            headers["Preference-Applied"] = applied
        }
        return rowsResponse(operation, outcome, status: 201, emptyStatus: 201, headers: headers)
    }

    /// PATCH: update the filtered rows with the body object's keys; 204, or 200 with the rows.
    private func update(_ operation: RestOperation) async throws -> HTTPServerResponse {
        let body = try Self.jsonBody(operation.request)
        guard case .object = body else { throw PostgRESTError.invalidBody("PATCH expects a JSON object") }
        try Self.checkColumns(Self.bodyKeys(body), of: operation.table)
        let statement = try PostgRESTSQLBuilder(table: operation.table, tables: catalog.knownTables).update(operation.executionQuery, body: body)
        let outcome = try await mutate(statement, operation)
        var headers: HTTPHeaders = [
            "Content-Range": Self.contentRange(lower: 0, upper: outcome.count - 1, total: operation.countedTotal(outcome)),
        ]
        if let applied = Self.preferenceApplied(operation.query.preferences, mutation: .other) {
            headers["Preference-Applied"] = applied
        }
        return rowsResponse(operation, outcome, status: 200, emptyStatus: 204, headers: headers)
    }

    /// DELETE: remove the filtered rows; 204, or 200 with the removed rows.
    private func delete(_ operation: RestOperation) async throws -> HTTPServerResponse {
        let statement = try PostgRESTSQLBuilder(table: operation.table, tables: catalog.knownTables).delete(operation.executionQuery)
        let outcome = try await mutate(statement, operation)
        var headers: HTTPHeaders = ["Content-Range": Self.contentRange(lower: 1, upper: 0, total: operation.countedTotal(outcome))]
        if let applied = Self.preferenceApplied(operation.query.preferences, mutation: .other) {
            headers["Preference-Applied"] = applied
        }
        return rowsResponse(operation, outcome, status: 200, emptyStatus: 204, headers: headers)
    }

    /// Runs a mutation as the caller; a singular request (`Accept: ...object+json`) not hitting one row rolls back.
    private func mutate(_ statement: (sql: String, parameters: [String?]),
                        _ operation: RestOperation) async throws -> RestMutationOutcome {
        let singular = operation.wantsObject
        return try await context.transaction(as: operation.identity) { connection in
            let outcome = RestMutationOutcome(try connection.query(statement.sql, statement.parameters))
            if singular, outcome.count != 1 { throw Self.singularityError(rows: outcome.count) }
            return outcome
        }
    }

    /// The answer to a mutation: the rows (array or single object) with `return=representation`, else no body.
    private func rowsResponse(_ operation: RestOperation, _ outcome: RestMutationOutcome, status: Int, emptyStatus: Int,
                              headers: HTTPHeaders) -> HTTPServerResponse {
        var headers = headers
        guard operation.wantsRows else { return HTTPServerResponse(status: emptyStatus, headers: headers) }
        let rows = outcome.body ?? "[]"
        if operation.wantsObject {
            headers["Content-Type"] = Self.objectMediaType + "; charset=utf-8"
            return HTTPServerResponse(status: status, headers: headers, body: Data(Self.singleObject(rows).utf8))
        }
        headers["Content-Type"] = Self.jsonContentType
        return HTTPServerResponse(status: status, headers: headers, body: Data(rows.utf8))
    }

    // MARK: - Helpers

    /// The table named by `/rest/v1/<table>`; the root and deeper paths (e.g. `/rpc/f`) are not served.
    static func tableName(in path: String) throws -> String {
        guard path.hasPrefix(pathPrefix) else {
            throw PostgRESTError(status: 404, code: "PGRST125", message: "Invalid path specified in request URL")
        }
        var rest = path.dropFirst(pathPrefix.count)
        guard rest.isEmpty || rest.hasPrefix("/") else {
            throw PostgRESTError(status: 404, code: "PGRST125", message: "Invalid path specified in request URL")
        }
        rest = rest.drop { $0 == "/" }
        while rest.hasSuffix("/") { rest = rest.dropLast() }
        if rest.isEmpty {
            throw PostgRESTError(status: 404, code: "PGRST126", message: "Root endpoint metadata is disabled")
        }
        guard !rest.contains("/") else {
            throw PostgRESTError(status: 404, code: "PGRST125", message: "Invalid path specified in request URL")
        }
        return String(rest)
    }

    /// PostgREST's `PGRST205` for a table the (reloaded) schema cache does not have, with a close name as hint.
    private func tableNotFound(_ name: String) -> PostgRESTError {
        let schema = TableCatalog.schema
        let suggestion = catalog.knownTableNames
            .map { (name: $0, distance: Self.editDistance($0, name)) }
            .filter { $0.distance <= max(1, min(3, name.count / 2)) }
            .min { ($0.distance, $0.name) < ($1.distance, $1.name) }
        return PostgRESTError(status: 404, code: "PGRST205",
                              message: "Could not find the table '\(schema).\(name)' in the schema cache",
                              hint: suggestion.map { "Perhaps you meant the table '\(schema).\($0.name)'" })
    }

    /// Levenshtein distance between two names (for the not-found hint).
    static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    /// The request body as JSON (`PGRST102` when empty, not UTF-8 or not JSON).
    static func jsonBody(_ request: HTTPServerRequest) throws -> JSONValue {
        try PostgRESTError.parseBody(try bodyText(request))
    }

    /// The request body as text; a body that is not UTF-8 is refused like invalid JSON.
    static func bodyText(_ request: HTTPServerRequest) throws -> String {
        guard let text = String(data: request.body, encoding: .utf8) else {
            throw PostgRESTError.invalidBody("the body is not valid UTF-8")
        }
        return text
    }

    /// The keys of an object body, or the union of keys of an array of objects, in first-seen order.
    static func bodyKeys(_ body: JSONValue) -> [String] {
        let objects: [JSONValue]
        switch body {
        case .object: objects = [body]
        case let .array(items): objects = items
        default: objects = []
        }
        return keys(objects.map { ($0.members ?? []).map(\.key) })
    }

    /// The union of the rows' member names, in first-seen order.
    static func keys(_ rows: [[String]]) -> [String] {
        var keys: [String] = []
        var seen = Set<String>()
        for row in rows {
            for key in row where seen.insert(key).inserted { keys.append(key) }
        }
        return keys
    }

    /// Refuses a payload key that is not a column with PostgREST's `PGRST204`.
    static func checkColumns(_ keys: [String], of table: PostgRESTTableSchema) throws {
        for key in keys where table.column(named: key) == nil {
            throw PostgRESTError(status: 400, code: "PGRST204",
                                 message: "Could not find the '\(key)' column of '\(table.name)' in the schema cache")
        }
    }

    /// `PGRST116` (406): a singular response was asked for but `rows` rows matched.
    static func singularityError(rows: Int) -> PostgRESTError {
        PostgRESTError(status: 406, code: "PGRST116", message: "Cannot coerce the result to a single JSON object",
                       details: "The result contains \(rows) rows")
    }

    /// The only element of a one-element `json_agg` array, without re-encoding it.
    static func singleObject(_ array: String) -> String {
        var text = Substring(array)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        guard text.first == "[", text.last == "]" else { return array }
        return String(text.dropFirst().dropLast())
    }

    /// PostgREST's `Content-Range`: `lower-upper/total`, `*` for an empty range, `*` total when not counted.
    static func contentRange(lower: Int, upper: Int, total: Int?) -> String {
        let range = total != 0 && lower <= upper ? "\(lower)-\(upper)" : "*"
        return range + "/" + (total.map(String.init) ?? "*")
    }

    /// Which mutation a `Preference-Applied` header is for (resolution is only reported for inserts with a target).
    enum MutationKind {
        /// An insert into a table with a primary key or an explicit `on_conflict`.
        case insert
        /// Any other mutation.
        case other
    }

    /// The `Preference-Applied` header PostgREST sends (resolution, return, count), nil when none applies.
    static func preferenceApplied(_ preferences: PostgRESTPreferences, mutation: MutationKind?) -> String? {
        var values: [String] = []
        if mutation == .insert, let resolution = preferences.resolution { values.append("resolution=\(resolution.rawValue)") }
        if mutation != nil, let mode = preferences.returnMode { values.append("return=\(mode.rawValue)") }
        if let count = preferences.count { values.append("count=\(count.rawValue)") }
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// `Location: /<table>?pk=eq.value` for the first inserted row (from its primary-key columns).
    static func location(table: PostgRESTTableSchema, rows: String?) -> String? {
        guard let rows, let first = JSONValue.parseOrNil(rows)?.arrayValue?.first else { return nil }
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=+#")
        var items: [String] = []
        for column in table.primaryKey {
            guard let value = first[column]?.parameterText,
                  let name = column.addingPercentEncoding(withAllowedCharacters: allowed),
                  let encoded = ("eq." + value).addingPercentEncoding(withAllowedCharacters: allowed) else { return nil }
            items.append("\(name)=\(encoded)")
        }
        guard let name = table.name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) else { return nil }
        return "/\(name)?" + items.joined(separator: "&")
    }

    /// A PostgREST error answer: `{"code","message","details","hint"}` as JSON.
    static func errorResponse(_ error: PostgRESTError, headers: HTTPHeaders = HTTPHeaders()) -> HTTPServerResponse {
        var headers = headers
        headers["Content-Type"] = jsonContentType
        if error.status == 401, headers["WWW-Authenticate"] == nil { headers["WWW-Authenticate"] = "Bearer" }
        return HTTPServerResponse(status: error.status, headers: headers, body: Data(error.jsonBody.utf8))
    }
}

/// One authenticated request bound to its table and parsed query.
struct RestOperation: Sendable {
    /// The HTTP request.
    let request: HTTPServerRequest
    /// The target table's description.
    let table: PostgRESTTableSchema
    /// The parsed query string and `Prefer`/`Range` headers.
    let query: PostgRESTQuery
    /// Who the request acts as.
    let identity: RequestIdentity

    /// Whether `Accept` asks for a single JSON object (`application/vnd.pgrst.object+json`).
    var wantsObject: Bool {
        request.headers.values("Accept").contains { $0.lowercased().contains(RestGateway.objectMediaType) }
    }

    /// Whether the mutation answers with its rows (`Prefer: return=representation`).
    var wantsRows: Bool { query.preferences.returnMode == .representation }

    /// The query the builder runs: `return=representation` kept, every other return mode made plain.
    var executionQuery: PostgRESTQuery {
        var query = query
        if !wantsRows { query.preferences.returnMode = nil }
        return query
    }

    /// The affected-row total for `Content-Range` when `Prefer: count=` was given, else nil.
    func countedTotal(_ outcome: RestMutationOutcome) -> Int? {
        query.preferences.count == nil ? nil : outcome.count
    }
}

/// What a mutation statement produced: the rows as JSON (with RETURNING) and how many rows it touched.
struct RestMutationOutcome: Sendable {
    /// The JSON array of returned rows, nil for a plain statement.
    let body: String?
    /// Rows inserted, updated or deleted.
    let count: Int

    /// Reads either the builder's `(body, total)` row or a plain statement's command-tag count.
    init(_ result: PostgresResult) {
        if result.columns == ["body", "total"], let row = result.rows.first, row.count == 2 {
            body = row[0]
            count = row[1].flatMap { Int($0) } ?? 0
        } else {
            body = nil
            count = result.affectedRows
        }
    }
}
