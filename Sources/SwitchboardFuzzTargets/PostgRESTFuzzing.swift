import Foundation
import SupabaseProtocol
import SwitchboardCore
import SwitchboardNet

/// The PostgREST query parser (filters, `or=`/`and=` trees, `select=` with embeddings, `order=`, paging, `Prefer`)
/// and the SQL builder behind it.
///
/// Input: the first line is the query string, as a client would send it (percent-decoded like the server does);
/// each further line is a `Name: value` request header. Every statement built must keep its values in bound
/// parameters: quotes balanced, and the `$n` placeholders outside quoted text exactly `$1…$count`.
enum PostgRESTFuzzing {
    static let name = "postgrest-query"

    /// The schema the builder runs against: a message table with a column of each kind, and two related tables.
    static let tables: [String: PostgRESTTableSchema] = {
        let rooms = PostgRESTTableSchema(name: "rooms", columns: [.init(name: "id", type: "integer", isPrimaryKey: true),
                                                                  .init(name: "title", type: "text")])
        let messages = PostgRESTTableSchema(name: "messages", columns: [
            .init(name: "id", type: "bigint", isPrimaryKey: true), .init(name: "room_id", type: "integer"),
            .init(name: "body", type: "text"), .init(name: "meta", type: "jsonb"), .init(name: "sent", type: "boolean"),
            .init(name: "tags", type: "text[]"), .init(name: "doc", type: "tsvector"), .init(name: "at", type: "timestamptz"),
            .init(name: "we\"ird", type: "text"),
        ], foreignKeys: [.init(name: "messages_room_fkey", columns: ["room_id"], referencedTable: "rooms", referencedColumns: ["id"])])
        let likes = PostgRESTTableSchema(name: "likes", columns: [.init(name: "message_id", type: "bigint"),
                                                                  .init(name: "who", type: "text")],
                                         foreignKeys: [.init(name: "likes_message_fkey", columns: ["message_id"],
                                                             referencedTable: "messages", referencedColumns: ["id"])])
        return ["rooms": rooms, "messages": messages, "likes": likes]
    }()

    static let bodies: [JSONValue] = [
        ["id": 1, "body": "x", "meta": ["a": [1, 2]]],
        [["id": 1, "room_id": 2], ["id": 2, "body": nil]],
    ]

    static func run(_ bytes: [UInt8]) throws {
        let text = String(decoding: bytes, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let rawQuery = String(lines.first ?? "")
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((name: String(line[..<colon]),
                            value: String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)))
        }
        let items = HTTPServerRequest(method: .get, path: "/rest/v1/messages", rawQuery: rawQuery)
            .queryItems.map { (name: $0.name, value: $0.value) }
        let query: PostgRESTQuery
        do {
            query = try PostgRESTQuery.parse(table: "messages", queryItems: items, headers: headers)
        } catch {
            try expect(error is PostgRESTError, name, "parse threw \(type(of: error)), not a PostgRESTError")
            return
        }
        try expect(query.offset >= 0 && (query.limit ?? 0) >= 0, name, "negative paging: offset \(query.offset), limit \(String(describing: query.limit))")
        _ = query.contentRange(rowCount: 3, total: 10)
        let builder = PostgRESTSQLBuilder(table: tables["messages"]!, tables: tables)
        try check(statement: { try builder.select(query) })
        try check(statement: { try builder.delete(query) })
        for body in bodies {
            try check(statement: { try builder.insert(query, body: body) })
            try check(statement: { try builder.update(query, body: body) })
        }
        try check(statement: { try builder.insert(query, arrayKeys: [["id", "body"], ["id", "body"]],
                                                   bodyText: #"[{"id":1,"body":"a"},{"id":2,"body":"b"}]"#) })
    }

    /// Builds one statement (a `PostgRESTError` is a clean refusal) and checks that every value stayed a parameter.
    private static func check(statement build: () throws -> (sql: String, parameters: [String?])?) throws {
        let built: (sql: String, parameters: [String?])?
        do {
            built = try build()
        } catch {
            try expect(error is PostgRESTError, name, "the builder threw \(type(of: error)), not a PostgRESTError")
            return
        }
        guard let built else { return }
        let placeholders = try placeholderNumbers(built.sql)
        try expect(placeholders == Set(built.parameters.indices.map { $0 + 1 }), name,
                   "placeholders \(placeholders.sorted()) for \(built.parameters.count) parameters in \(built.sql)")
    }

    /// The `$n` numbers outside quoted identifiers and string literals; throws when a quote is left open.
    private static func placeholderNumbers(_ sql: String) throws -> Set<Int> {
        let scalars = Array(sql.unicodeScalars)
        var numbers = Set<Int>()
        var index = 0
        while index < scalars.count {
            let scalar = scalars[index]
            if scalar == "\"" || scalar == "'" {
                // A quoted run ends at the next lone quote of the same kind (a doubled one is an escaped quote).
                var end = index + 1
                while true {
                    guard end < scalars.count else {
                        throw FuzzFailure(target: name, message: "unbalanced \(scalar) quote in \(sql)")
                    }
                    if scalars[end] == scalar {
                        if end + 1 < scalars.count, scalars[end + 1] == scalar { end += 2; continue }
                        break
                    }
                    end += 1
                }
                index = end + 1
            } else if scalar == "$" {
                var end = index + 1
                var digits = ""
                while end < scalars.count, ("0"..."9").contains(scalars[end]) {
                    digits.unicodeScalars.append(scalars[end])
                    end += 1
                }
                if let number = Int(digits) { numbers.insert(number) }
                index = end
            } else {
                index += 1
            }
        }
        return numbers
    }
}
