import SwitchboardCore
import SupabaseProtocol
import Testing

private let messages = RealtimeTableName(schema: "public", table: "messages")
private let reactions = RealtimeTableName(schema: "public", table: "reactions")
private let logs = RealtimeTableName(schema: "public", table: "logs")

private let alice = JWTClaims(object: ["role": "authenticated", "sub": "alice"])
private let bob = JWTClaims(object: ["role": "authenticated", "sub": "bob"])
private let service = JWTClaims(object: ["role": "service_role"])

/// A change of `messages` keyed by a uuid `id`.
private func message(_ id: String, type: String = "INSERT") -> RealtimeChange {
    let record: JSONValue = ["id": .string(id), "body": "x"]
    return RealtimeChange(table: messages, type: type, commitTimestamp: "t",
                          columns: [RealtimeColumn(name: "id", type: "uuid"), RealtimeColumn(name: "body", type: "text")],
                          record: type == "DELETE" ? nil : record, oldRecord: type == "INSERT" ? nil : ["id": .string(id)],
                          primaryKey: [(column: "id", value: .string(id))])
}

/// A change of `reactions` keyed by (message_id, user_id, symbol).
private func reaction(_ messageID: String, _ user: String, _ symbol: String) -> RealtimeChange {
    RealtimeChange(table: reactions, type: "INSERT", commitTimestamp: "t",
                   columns: [RealtimeColumn(name: "message_id", type: "uuid"), RealtimeColumn(name: "user_id", type: "text"),
                             RealtimeColumn(name: "symbol", type: "text")],
                   record: ["message_id": .string(messageID), "user_id": .string(user), "symbol": .string(symbol)],
                   oldRecord: nil,
                   primaryKey: [(column: "message_id", value: .string(messageID)), (column: "user_id", value: .string(user)),
                                (column: "symbol", value: .string(symbol))])
}

/// A change of a table without a primary key.
private func logLine(_ text: String) -> RealtimeChange {
    RealtimeChange(table: logs, type: "INSERT", commitTimestamp: "t", columns: [RealtimeColumn(name: "line", type: "text")],
                   record: ["line": .string(text)], oldRecord: nil, primaryKey: [])
}

/// A target on `socket` with `claims`.
private func target(_ socket: Int, _ claims: JWTClaims) -> RealtimeChangeTarget {
    RealtimeChangeTarget(socket: socket, topic: "realtime:t\(socket)", ids: [1], claims: claims, version: .v2)
}

@Suite("Realtime visibility planning")
struct RealtimeVisibilityTests {
    @Test("groups: per identity in first-seen order; DELETEs and the service role need no check")
    func grouping() {
        let changes = [message("m1"), message("m2", type: "DELETE"), message("m3", type: "UPDATE"), message("m4")]
        let targets = [
            [target(1, alice), target(2, service)],
            [target(1, alice), target(3, bob)],
            [target(3, bob), target(1, alice), target(4, alice)],
            [target(2, service)],
        ]
        let groups = RealtimeVisibility.groups(changes, targets: targets)
        #expect(groups == [RealtimeVisibility.Group(claims: alice, changes: [0, 2]),
                           RealtimeVisibility.Group(claims: bob, changes: [2])])
        #expect(!RealtimeVisibility.needsCheck(changes[1], claims: alice))
        #expect(!RealtimeVisibility.needsCheck(changes[0], claims: service))
        #expect(RealtimeVisibility.needsCheck(changes[2], claims: JWTClaims(object: [:])))
    }

    @Test("one table: one query, parameters cast to the key's type, result rows map back to batch indices")
    func singleKeyBatch() {
        let changes = [message("a"), message("b"), message("c")]
        let queries = RealtimeVisibility.queries(for: [0, 2], of: changes)
        #expect(queries.count == 1)
        let query = queries[0]
        #expect(query.sql == "SELECT v.i FROM (VALUES (0, $1::\"uuid\"), (1, $2::\"uuid\")) AS v(i, k0) CROSS JOIN LATERAL "
            + "(SELECT 1 FROM \"public\".\"messages\" AS \"row\" WHERE \"row\".\"id\" = v.k0 LIMIT 1) AS found")
        #expect(query.parameters == ["a", "c"])
        #expect(query.changes == [0, 2])
        #expect(query.visibleChanges(in: [["1"]]) == [2])
        #expect(query.visibleChanges(in: [["0"], ["1"], ["7"], [nil], ["x"]]) == [0, 2])
    }

    @Test("a composite key compares every key column")
    func compositeKeyBatch() {
        let changes = [reaction("m1", "alice", "+1"), reaction("m2", "bob", "<3")]
        let queries = RealtimeVisibility.queries(for: [0, 1], of: changes)
        #expect(queries.count == 1)
        #expect(queries[0].sql == "SELECT v.i FROM (VALUES (0, $1::\"uuid\", $2::\"text\", $3::\"text\"), "
            + "(1, $4::\"uuid\", $5::\"text\", $6::\"text\")) AS v(i, k0, k1, k2) CROSS JOIN LATERAL (SELECT 1 FROM "
            + "\"public\".\"reactions\" AS \"row\" WHERE \"row\".\"message_id\" = v.k0 AND \"row\".\"user_id\" = v.k1 "
            + "AND \"row\".\"symbol\" = v.k2 LIMIT 1) AS found")
        #expect(queries[0].parameters == ["m1", "alice", "+1", "m2", "bob", "<3"])
    }

    @Test("tables without a primary key (or with unknown key types) keep one query per change")
    func keylessChanges() {
        var untyped = message("u")
        untyped.columns = []
        let changes = [logLine("one"), message("a"), untyped, logLine("two")]
        let queries = RealtimeVisibility.queries(for: [0, 1, 2, 3], of: changes)
        #expect(queries.map(\.changes) == [[0], [1], [2], [3]])
        #expect(queries[0].sql == "SELECT 0 FROM \"public\".\"logs\" AS \"row\" WHERE to_jsonb(\"row\".*) = $1::jsonb LIMIT 1")
        #expect(queries[0].parameters == ["{\"line\":\"one\"}"])
        #expect(queries[2].sql == "SELECT 0 FROM \"public\".\"messages\" AS \"row\" WHERE \"row\".\"id\" = $1 LIMIT 1")
        #expect(queries[2].parameters == ["u"])
        #expect(queries[2].visibleChanges(in: [["0"]]) == [2])
    }

    @Test("groups of several tables come in order of first change; large groups are chunked")
    func orderingAndChunks() {
        let changes = [reaction("m", "u", "s"), message("a"), message("b"), reaction("m", "v", "s"), message("c"),
                       message("d"), message("e")]
        let queries = RealtimeVisibility.queries(for: Array(changes.indices), of: changes, chunkSize: 2)
        #expect(queries.map(\.changes) == [[0, 3], [1, 2], [4, 5], [6]])
        #expect(queries[3].sql.hasPrefix("SELECT v.i FROM (VALUES (0, $1::\"uuid\")) AS v(i, k0)"))
        #expect(queries[3].parameters == ["e"])
    }

    @Test("identifiers and type names are quoted, values only bound, SQL NULL for a null key")
    func quoting() {
        let table = RealtimeTableName(schema: "public", table: "we\"ird")
        let change = RealtimeChange(table: table, type: "UPDATE", commitTimestamp: "t",
                                    columns: [RealtimeColumn(name: "k\"ey", type: "my\"type")],
                                    record: ["k\"ey": .null], oldRecord: nil, primaryKey: [(column: "k\"ey", value: .null)])
        let query = RealtimeVisibility.queries(for: [0], of: [change])[0]
        #expect(query.sql == "SELECT v.i FROM (VALUES (0, $1::\"my\"\"type\")) AS v(i, k0) CROSS JOIN LATERAL (SELECT 1 FROM "
            + "\"public\".\"we\"\"ird\" AS \"row\" WHERE \"row\".\"k\"\"ey\" = v.k0 LIMIT 1) AS found")
        #expect(query.parameters == [nil])
    }
}
