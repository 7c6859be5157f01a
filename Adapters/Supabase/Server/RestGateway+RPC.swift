import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// `/rest/v1/rpc/<function>`: PostgREST's function calls. POST takes the arguments as a JSON object, GET (and HEAD)
/// as query parameters and runs read-only, as PostgREST does; the call runs as the caller's role, so PostgreSQL's
/// `EXECUTE` privileges and the row-level security of whatever the function reads decide.
extension RestGateway {
    /// The path prefix of function calls.
    static let rpcPrefix = pathPrefix + "/rpc/"

    /// The function a `/rest/v1/rpc/<name>` path names, nil for any other path.
    static func functionName(in path: String) -> String? {
        guard path.hasPrefix(rpcPrefix) else { return nil }
        var name = path.dropFirst(rpcPrefix.count)
        while name.hasSuffix("/") { name = name.dropLast() }
        return String(name)
    }

    /// Calls `name` with the request's arguments and answers its result as JSON (204 for a `void` function).
    func call(_ name: String, _ request: HTTPServerRequest, identity: RequestIdentity) async throws -> HTTPServerResponse {
        guard [.get, .head, .post].contains(request.method) else {
            throw PostgRESTError(status: 405, code: "PGRST117", message: "Unsupported HTTP method: \(request.method)")
        }
        guard !name.isEmpty, !name.contains("/") else {
            throw PostgRESTError(status: 404, code: "PGRST125", message: "Invalid path specified in request URL")
        }
        let readOnly = request.method != .post
        let arguments = try Self.callArguments(request, readOnly: readOnly)
        let candidates = try await catalog.functions(named: name)
        let function = try PostgRESTFunction.resolve(candidates, name: name, schema: TableCatalog.schema,
                                                     keys: Set(arguments.map(\.name)))
        let statement = try function.call(arguments)
        let result = try await context.transaction(as: identity) { connection in
            // GET calls run read-only, as PostgREST runs them: a function that writes fails with 25006 (405).
            if readOnly { try connection.execute("SET TRANSACTION READ ONLY") }
            return try connection.query(statement.sql, statement.parameters)
        }
        guard function.returns != .void else { return HTTPServerResponse(status: 204) }
        let body = result.rows.first?.first.flatMap { $0 } ?? "null"
        let data = request.method == .head ? Data() : Data(body.utf8)
        return HTTPServerResponse(status: 200, headers: ["Content-Type": Self.jsonContentType], body: data)
    }

    /// The call's named arguments: the JSON object of a POST body (empty body: none), or a GET's query parameters
    /// as text (each named once).
    static func callArguments(_ request: HTTPServerRequest, readOnly: Bool) throws -> [(name: String, value: JSONValue)] {
        if readOnly {
            var seen = Set<String>()
            return try request.queryItems.filter { $0.name != "apikey" }.map { item in
                guard seen.insert(item.name).inserted else {
                    throw PostgRESTError.parse("failed to parse the arguments of the function call",
                                               details: "the argument \(item.name) is given twice")
                }
                return (item.name, JSONValue.string(item.value))
            }
        }
        guard !request.body.isEmpty else { return [] }
        guard case let .object(pairs)? = JSONValue.parseOrNil(request.body) else {
            throw PostgRESTError(status: 400, code: "PGRST102", message: "Empty or invalid json",
                                 details: "a function call's body is one JSON object of named arguments")
        }
        var seen = Set<String>()
        for (key, _) in pairs where !seen.insert(key).inserted {
            throw PostgRESTError(status: 400, code: "PGRST102", message: "Empty or invalid json",
                                 details: "the argument \(key) is given twice")
        }
        return pairs.map { (name: $0.key, value: $0.value) }
    }
}
