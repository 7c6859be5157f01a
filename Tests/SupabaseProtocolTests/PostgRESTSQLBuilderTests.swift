import SwitchboardCore
import Testing
@testable import SupabaseProtocol

@Suite struct PostgRESTSQLBuilderTests {
    let builder = PostgRESTSQLBuilder(table: PostgRESTTableSchema(name: "messages", columns: [
        .init(name: "id", type: "bigint", isPrimaryKey: true),
        .init(name: "room_id", type: "integer"),
        .init(name: "body", type: "text"),
        .init(name: "meta", type: "jsonb"),
        .init(name: "sent", type: "boolean"),
        .init(name: "we\"ird", type: "text"),
        .init(name: "tags", type: "text[]"),
        .init(name: "doc", type: "tsvector"),
    ]))
    let base = "SELECT coalesce(json_agg(_pgrst_t), '[]')::text AS body, "

    func q(_ items: [(String, String)], _ headers: [(String, String)] = []) throws -> PostgRESTQuery {
        try pgParse(items, headers: headers, table: "messages")
    }

    @Test func plainSelect() throws {
        let r = try builder.select(q([]))
        #expect(r.sql == base + "NULL::bigint AS total FROM (SELECT * FROM \"public\".\"messages\") _pgrst_t")
        #expect(r.parameters.isEmpty)
    }

    @Test func selectWithEverything() throws {
        let r = try builder.select(q([("select", "id,body"), ("room_id", "eq.42"), ("body", "ilike.*hi*"),
                                      ("order", "id.desc.nullslast,body"), ("limit", "15"), ("offset", "30")],
                                     [("Prefer", "count=exact")]))
        let whereText = " WHERE \"room_id\" = $1::integer AND \"body\" ILIKE $2::text"
        #expect(r.sql == base + "(SELECT count(*) FROM \"public\".\"messages\"\(whereText)) AS total FROM "
            + "(SELECT \"id\", \"body\" FROM \"public\".\"messages\"\(whereText)"
            + " ORDER BY \"id\" DESC NULLS LAST, \"body\" LIMIT $3::bigint OFFSET $4::bigint) _pgrst_t")
        #expect(r.parameters == ["42", "%hi%", "15", "30"])
    }

    @Test("a renamed or cast column is selected AS its key; the cast's type name is checked again when building")
    func aliasesAndCasts() throws {
        let r = try builder.select(q([("select", "*,text:body,at:id::text,tags::text[]")]))
        #expect(r.sql == base + "NULL::bigint AS total FROM (SELECT *, \"body\" AS \"text\", \"id\"::text AS \"at\", "
            + "\"tags\"::text[] AS \"tags\" FROM \"public\".\"messages\") _pgrst_t")
        var forged = try q([])
        forged.select = [PostgRESTSelectItem(column: "body", cast: "text FROM pg_authid --")]
        #expect(pgError { _ = try builder.select(forged) }?.code == "PGRST100")
        let unknown = pgError { _ = try builder.select(q([("select", "nope:missing::text")])) }
        #expect(unknown?.code == "42703")
    }

    @Test("an embedding is a correlated subquery through the foreign key: an array one-to-many, an object many-to-one")
    func embeddings() throws {
        let rooms = PostgRESTTableSchema(name: "rooms", columns: [.init(name: "id", type: "integer", isPrimaryKey: true),
                                                                  .init(name: "title", type: "text")])
        let messages = PostgRESTTableSchema(name: "messages", columns: [
            .init(name: "id", type: "bigint", isPrimaryKey: true), .init(name: "room_id", type: "integer"),
            .init(name: "body", type: "text"),
        ], foreignKeys: [.init(name: "messages_room_fkey", columns: ["room_id"], referencedTable: "rooms", referencedColumns: ["id"])])
        let likes = PostgRESTTableSchema(name: "likes", columns: [.init(name: "message_id", type: "bigint"),
                                                                  .init(name: "who", type: "text")],
                                         foreignKeys: [.init(name: "likes_message_fkey", columns: ["message_id"],
                                                             referencedTable: "messages", referencedColumns: ["id"])])
        let tables = ["rooms": rooms, "messages": messages, "likes": likes]
        let builder = PostgRESTSQLBuilder(table: messages, tables: tables)
        let r = try builder.select(q([("select", "body,likes(who),room:rooms(title)"), ("id", "eq.1")]))
        #expect(r.sql == base + "NULL::bigint AS total FROM (SELECT \"body\", "
            + "(SELECT coalesce(json_agg(_pgrst_e1_row), '[]') FROM (SELECT \"who\" FROM \"public\".\"likes\" AS _pgrst_e1 "
            + "WHERE _pgrst_e1.\"message_id\" = \"public\".\"messages\".\"id\") _pgrst_e1_row) AS \"likes\", "
            + "(SELECT row_to_json(_pgrst_e2_row) FROM (SELECT \"title\" FROM \"public\".\"rooms\" AS _pgrst_e2 "
            + "WHERE _pgrst_e2.\"id\" = \"public\".\"messages\".\"room_id\" LIMIT 1) _pgrst_e2_row) AS \"room\" "
            + "FROM \"public\".\"messages\" WHERE \"id\" = $1::bigint) _pgrst_t")
        // Nested, and on a mutation's returned rows.
        let nested = try PostgRESTSQLBuilder(table: likes, tables: tables)
            .delete(q([("select", "who,messages(body,rooms(*))")], [("Prefer", "return=representation")]))
        #expect(nested.sql.contains("WHERE _pgrst_e1.\"id\" = _pgrst_rows.\"message_id\""))
        #expect(nested.sql.contains("FROM \"public\".\"rooms\" AS _pgrst_e2 WHERE _pgrst_e2.\"id\" = _pgrst_e1.\"room_id\""))
        // Filters, order and paging of the embedded rows; !inner keeps only parents with a matching row.
        let filtered = try builder.select(q([("select", "body,likes!inner(who)"), ("likes.who", "neq.me"),
                                             ("likes.order", "who.desc"), ("likes.limit", "3"), ("id", "gt.0")]))
        #expect(filtered.sql == base + "NULL::bigint AS total FROM (SELECT \"body\", "
            + "(SELECT coalesce(json_agg(_pgrst_e1_row), '[]') FROM (SELECT \"who\" FROM \"public\".\"likes\" AS _pgrst_e1 "
            + "WHERE _pgrst_e1.\"message_id\" = \"public\".\"messages\".\"id\" AND \"who\" <> $1::text ORDER BY \"who\" DESC "
            + "LIMIT $2::bigint) _pgrst_e1_row) AS \"likes\" FROM \"public\".\"messages\" WHERE \"id\" > $3::bigint AND "
            + "EXISTS (SELECT 1 FROM \"public\".\"likes\" AS _pgrst_e1 WHERE _pgrst_e1.\"message_id\" = \"public\".\"messages\".\"id\" "
            + "AND \"who\" <> $1::text)) _pgrst_t")
        #expect(filtered.parameters == ["me", "3", "0"])
        #expect(pgError { _ = try builder.select(q([("select", "likes(who)"), ("likes.nope", "eq.1")])) }?.message
            == "column likes.nope does not exist")
        // No relationship, an unknown table, an unknown column of the embedded table, two relationships.
        #expect(pgError { _ = try PostgRESTSQLBuilder(table: rooms, tables: tables).select(q([("select", "likes(*)")])) }?.code == "PGRST200")
        #expect(pgError { _ = try builder.select(q([("select", "nope(*)")])) }?.code == "PGRST200")
        #expect(pgError { _ = try builder.select(q([("select", "likes(nope)")])) }?.message == "column likes.nope does not exist")
        var twice = likes
        twice.foreignKeys.append(.init(name: "likes_other_fkey", columns: ["who"], referencedTable: "messages", referencedColumns: ["body"]))
        let ambiguous = pgError { _ = try PostgRESTSQLBuilder(table: messages, tables: ["likes": twice]).select(q([("select", "likes(*)")])) }
        #expect(ambiguous?.status == 300)
        #expect(ambiguous?.code == "PGRST201")
    }

    @Test func everyOperator() throws {
        let cases: [(String, String, String, [String?])] = [
            ("room_id", "eq.1", "\"room_id\" = $1::integer", ["1"]),
            ("room_id", "neq.1", "\"room_id\" <> $1::integer", ["1"]),
            ("room_id", "gt.1", "\"room_id\" > $1::integer", ["1"]),
            ("room_id", "gte.1", "\"room_id\" >= $1::integer", ["1"]),
            ("room_id", "lt.1", "\"room_id\" < $1::integer", ["1"]),
            ("room_id", "lte.1", "\"room_id\" <= $1::integer", ["1"]),
            ("body", "like.a*", "\"body\" LIKE $1::text", ["a%"]),
            ("body", "not.like.a*", "NOT (\"body\" LIKE $1::text)", ["a%"]),
            ("room_id", "in.(1,2,3)", "\"room_id\" IN ($1::integer, $2::integer, $3::integer)", ["1", "2", "3"]),
            ("room_id", "in.()", "FALSE", []),
            ("body", "is.null", "\"body\" IS NULL", []),
            ("body", "not.is.null", "NOT (\"body\" IS NULL)", []),
            ("sent", "is.true", "\"sent\" IS TRUE", []),
            ("sent", "is.false", "\"sent\" IS FALSE", []),
            ("sent", "is.unknown", "\"sent\" IS UNKNOWN", []),
            ("body", "is.not_null", "\"body\" IS NOT NULL", []),
            ("body", "isdistinct.a", "\"body\" IS DISTINCT FROM $1::text", ["a"]),
            ("body", "match.^a", "\"body\" ~ $1::text", ["^a"]),
            ("body", "imatch.^a", "\"body\" ~* $1::text", ["^a"]),
            ("meta", #"cs.{"k":1}"#, "\"meta\" @> $1::jsonb", [#"{"k":1}"#]),
            ("meta", #"cd.{"k":1}"#, "\"meta\" <@ $1::jsonb", [#"{"k":1}"#]),
            ("tags", "ov.{a,b}", "\"tags\" && $1::text[]", ["{a,b}"]),
            ("body", "fts.cat", "to_tsvector(\"body\") @@ to_tsquery($1::text)", ["cat"]),
            ("body", "wfts(english).cat", "to_tsvector($1::regconfig, \"body\") @@ websearch_to_tsquery($2::regconfig, $3::text)",
             ["english", "english", "cat"]),
            ("body", "plfts.a b", "to_tsvector(\"body\") @@ plainto_tsquery($1::text)", ["a b"]),
            ("doc", "phfts(simple).a b", "\"doc\" @@ phraseto_tsquery($1::regconfig, $2::text)", ["simple", "a b"]),
        ]
        for (column, value, expected, params) in cases {
            let r = try builder.delete(q([(column, value)]))
            #expect(r.sql == "DELETE FROM \"public\".\"messages\" WHERE " + expected, "\(column)=\(value)")
            #expect(r.parameters == params, "\(column)=\(value)")
        }
    }

    @Test func logicTreeSQL() throws {
        let r = try builder.delete(q([("not.or", "(room_id.eq.1,and(body.eq.\"a,b\",sent.is.null))"), ("id", "gt.5")]))
        #expect(r.sql == "DELETE FROM \"public\".\"messages\" WHERE NOT (\"room_id\" = $1::integer OR "
            + "(\"body\" = $2::text AND \"sent\" IS NULL)) AND \"id\" > $3::bigint")
        #expect(r.parameters == ["1", "a,b", "5"])
    }

    @Test func singleInsert() throws {
        let body = try JSONValue.parse(#"{"room_id": 42, "body": "hi", "meta": {"a": [1, true]}, "sent": null}"#)
        let r = try builder.insert(q([]), body: body)
        #expect(r.sql == "INSERT INTO \"public\".\"messages\" (\"room_id\", \"body\", \"meta\", \"sent\") "
            + "VALUES ($1::integer, $2::text, $3::jsonb, $4::boolean)")
        #expect(r.parameters == ["42", "hi", #"{"a":[1,true]}"#, nil])
    }

    @Test func jsonColumnsKeepStringsAsJSON() throws {
        let body = try JSONValue.parse(#"{"meta": "just text", "body": "plain"}"#)
        let r = try builder.insert(q([]), body: body)
        #expect(r.parameters == [#""just text""#, "plain"])
        let u = try builder.update(q([("id", "eq.1")]), body: try JSONValue.parse(#"{"meta": "x", "room_id": 3}"#))
        #expect(u.parameters == [#""x""#, "3", "1"])
    }

    @Test func bulkInsertUnionOfKeysWithDefaultAndRepresentation() throws {
        let body = try JSONValue.parse(#"[{"id": 1, "body": "a"}, {"body": "b", "sent": false}]"#)
        let r = try builder.insert(q([("select", "id")], [("Prefer", "return=representation")]), body: body)
        #expect(r.sql == "WITH _pgrst_rows AS (INSERT INTO \"public\".\"messages\" (\"id\", \"body\", \"sent\") "
            + "VALUES ($1::bigint, $2::text, DEFAULT), (DEFAULT, $3::text, $4::boolean) RETURNING *) "
            + base + "count(*) AS total FROM (SELECT \"id\" FROM _pgrst_rows) _pgrst_t")
        #expect(r.parameters == ["1", "a", "b", "false"])
    }

    @Test func bulkInsertWithEveryKeyBindsOneJSONRecordset() throws {
        let body = try JSONValue.parse(#"[{"id": 1, "body": "a", "meta": "s"}, {"meta": {"x": 1}, "id": 2, "body": null}]"#)
        let r = try builder.insert(q([("on_conflict", "id"), ("select", "id")],
                                     [("Prefer", "resolution=ignore-duplicates,return=representation")]), body: body)
        #expect(r.sql == "WITH _pgrst_rows AS (INSERT INTO \"public\".\"messages\" (\"id\", \"body\", \"meta\") "
            + "SELECT _pgrst_body.\"id\", _pgrst_body.\"body\", _pgrst_body.\"meta\" FROM json_to_recordset($1::json) "
            + "AS _pgrst_body(\"id\" bigint, \"body\" text, \"meta\" jsonb) ON CONFLICT (\"id\") DO NOTHING RETURNING *) "
            + base + "count(*) AS total FROM (SELECT \"id\" FROM _pgrst_rows) _pgrst_t")
        #expect(r.parameters == [#"[{"id":1,"body":"a","meta":"s"},{"meta":{"x":1},"id":2,"body":null}]"#])
        // The statement text does not depend on the row count.
        let three = try builder.insert(q([]), body: try JSONValue.parse(#"[{"id": 1}, {"id": 2}, {"id": 3}]"#))
        let one = try builder.insert(q([]), body: try JSONValue.parse(#"[{"id": 9}]"#))
        #expect(three.sql == one.sql && three.parameters.count == 1)
        // Hostile text stays inside the one parameter.
        let evil = try builder.insert(q([]), body: .array([.object([("body", .string("'); DROP TABLE x; --"))])]))
        #expect(!evil.sql.contains("DROP") && evil.parameters.count == 1)
    }

    @Test func bulkInsertBindsTheRequestTextAsSent() throws {
        let text = #"[ {"id": 1, "body": "caf\u00e9"}, {"body": "x", "id": 2} ]"#
        let sent = try builder.insert(q([]), body: try JSONValue.parse(text), bodyText: text)
        let rebuilt = try builder.insert(q([]), body: try JSONValue.parse(text))
        #expect(sent.sql == rebuilt.sql)
        #expect(sent.parameters == [text], "no second serialization of the body")
        #expect(rebuilt.parameters == [#"[{"id":1,"body":"café"},{"body":"x","id":2}]"#])
        // A row lacking a key still goes through VALUES (DEFAULT for the missing cell); the text is not used.
        let lackingText = #"[{"id": 1}, {"body": "y"}]"#
        let lacking = try builder.insert(q([]), body: try JSONValue.parse(lackingText), bodyText: lackingText)
        #expect(!lacking.parameters.contains(lackingText) && lacking.sql.contains("DEFAULT"))
    }

    @Test func bulkInsertFromMemberNamesAloneMatchesTheParsedBodyOrDeclines() throws {
        let query = try q([("on_conflict", "id"), ("select", "id")], [("Prefer", "resolution=ignore-duplicates,return=representation")])
        func keys(_ text: String) throws -> [[String]] { try #require(JSONValue.objectKeys(Array(text.utf8))).keys }
        let text = #"[{"id": 1, "body": "a", "meta": {"x": [1]}}, {"meta": null, "body": "b", "id": 2}]"#
        let parsed = try builder.insert(query, body: try JSONValue.parse(text), bodyText: text)
        let named = try #require(try builder.insert(query, arrayKeys: try keys(text), bodyText: text))
        #expect(named.sql == parsed.sql && named.parameters == parsed.parameters && named.parameters == [text])
        let listed = try q([("columns", "id")])
        let extra = #"[{"id": 1, "sent": true}]"#
        let extraNamed = try builder.insert(listed, arrayKeys: try keys(extra), bodyText: extra)
        let extraParsed = try builder.insert(listed, body: try JSONValue.parse(extra), bodyText: extra)
        #expect(extraNamed?.sql == extraParsed.sql)
        // A row lacking a column, a repeated key or no column at all needs the values (VALUES/DEFAULT): declined.
        for declined in [#"[{"id": 1}, {"body": "y"}]"#, #"[{"id": 1, "id": 2}]"#, "[{}, {}]", "[]"] {
            let statement = try builder.insert(q([]), arrayKeys: try keys(declined), bodyText: declined)
            #expect(statement == nil, "\(declined)")
        }
        #expect(throws: PostgRESTError.self) { try builder.insert(q([]), arrayKeys: [["nope"]], bodyText: #"[{"nope":1}]"#) }
    }

    @Test func bulkInsertKeepsValuesWhenARowLacksAKeyOrRepeatsOne() throws {
        let repeated = try builder.insert(q([]), body: .array([.object([("id", .number("1")), ("id", .number("2"))])]))
        #expect(repeated.sql == "INSERT INTO \"public\".\"messages\" (\"id\") VALUES ($1::bigint)")
        #expect(repeated.parameters == ["2"])
        let lacking = try builder.insert(q([("columns", "id,body")]), body: try JSONValue.parse(#"[{"id": 1, "sent": true}]"#))
        #expect(lacking.sql == "INSERT INTO \"public\".\"messages\" (\"id\", \"body\") VALUES ($1::bigint, DEFAULT)")
        // columns= with every listed key present: extra keys are ignored by the recordset as by VALUES.
        let extra = try builder.insert(q([("columns", "id")]), body: try JSONValue.parse(#"[{"id": 1, "sent": true}]"#))
        #expect(extra.sql == "INSERT INTO \"public\".\"messages\" (\"id\") SELECT _pgrst_body.\"id\" "
            + "FROM json_to_recordset($1::json) AS _pgrst_body(\"id\" bigint)")
    }

    @Test func emptyObjectsInsertDefaults() throws {
        let r = try builder.insert(q([]), body: try JSONValue.parse("[{},{}]"))
        #expect(r.sql == "INSERT INTO \"public\".\"messages\" SELECT FROM generate_series(1, $1::integer)")
        #expect(r.parameters == ["2"])
    }

    @Test func upserts() throws {
        let body = try JSONValue.parse(#"{"id": 7, "body": "x"}"#)
        let ignore = try builder.insert(q([], [("Prefer", "resolution=ignore-duplicates")]), body: body)
        #expect(ignore.sql == "INSERT INTO \"public\".\"messages\" (\"id\", \"body\") VALUES ($1::bigint, $2::text) "
            + "ON CONFLICT (\"id\") DO NOTHING")
        let merge = try builder.insert(q([("on_conflict", "room_id,body")], [("Prefer", "resolution=merge-duplicates")]), body: body)
        #expect(merge.sql == "INSERT INTO \"public\".\"messages\" (\"id\", \"body\") VALUES ($1::bigint, $2::text) "
            + "ON CONFLICT (\"room_id\", \"body\") DO UPDATE SET \"id\" = EXCLUDED.\"id\", \"body\" = EXCLUDED.\"body\"")
        #expect(merge.parameters == ["7", "x"])
        let noKey = PostgRESTSQLBuilder(table: PostgRESTTableSchema(name: "k", columns: [.init(name: "a", type: "text")]))
        let e = pgError { _ = try noKey.insert(try pgParse([], headers: [("Prefer", "resolution=merge-duplicates")], table: "k"),
                                               body: .object([("a", .string("1"))])) }
        #expect(e?.code == "42P10")
    }

    @Test func updateAndDelete() throws {
        let r = try builder.update(q([("id", "eq.3")], [("Prefer", "return=representation")]),
                                   body: try JSONValue.parse(#"{"body": "new", "sent": true}"#))
        #expect(r.sql == "WITH _pgrst_rows AS (UPDATE \"public\".\"messages\" SET \"body\" = $1::text, \"sent\" = $2::boolean "
            + "WHERE \"id\" = $3::bigint RETURNING *) " + base + "count(*) AS total FROM (SELECT * FROM _pgrst_rows) _pgrst_t")
        #expect(r.parameters == ["new", "true", "3"])
        let d = try builder.delete(q([("room_id", "in.(1,2)")]))
        #expect(d.sql == "DELETE FROM \"public\".\"messages\" WHERE \"room_id\" IN ($1::integer, $2::integer)")
        #expect(d.parameters == ["1", "2"])
        let all = try builder.delete(q([]))
        #expect(all.sql == "DELETE FROM \"public\".\"messages\"")
    }

    @Test func unknownColumnsAreRejected() throws {
        let expected = PostgRESTError(status: 400, code: "42703", message: "column messages.nope does not exist")
        #expect(pgError { _ = try builder.select(q([("nope", "eq.1")])) } == expected)
        #expect(pgError { _ = try builder.select(q([("select", "id,nope")])) } == expected)
        #expect(pgError { _ = try builder.select(q([("order", "nope.desc")])) } == expected)
        #expect(pgError { _ = try builder.select(q([("or", "(id.eq.1,nope.eq.2)")])) } == expected)
        #expect(pgError { _ = try builder.insert(q([]), body: .object([("nope", .number("1"))])) } == expected)
        #expect(pgError { _ = try builder.update(q([]), body: .object([("nope", .null)])) } == expected)
        #expect(pgError { _ = try builder.insert(q([]), body: .string("x")) }?.code == "PGRST102")
    }

    @Test func injectionEndsUpInParametersOrIsRejected() throws {
        let evil = "'; DROP TABLE x; --"
        let r = try builder.select(q([("body", "eq." + evil), ("or", "(body.like.\"\(evil)\",room_id.in.(\"1);DROP\"))")]))
        #expect(!r.sql.contains("DROP") && !r.sql.contains("'; "))
        #expect(r.parameters == [evil, evil, "1);DROP"])
        let ins = try builder.insert(q([]), body: .object([("body", .string(evil))]))
        #expect(!ins.sql.contains("DROP") && ins.parameters == [evil])
        // A quoted column that exists is doubled-quoted; one that does not is rejected.
        let weird = try builder.select(q([("we\"ird", "eq.1")]))
        #expect(weird.sql.contains(" WHERE \"we\"\"ird\" = $1::text"))
        let weirdSelect = try builder.select(PostgRESTQuery(table: "messages", select: ["we\"ird"]))
        #expect(weirdSelect.sql.contains("(SELECT \"we\"\"ird\" FROM"))
        #expect(pgError { _ = try q([("select", "id\",body")]) }?.code == "PGRST100")
        let e = pgError { _ = try builder.select(q([("id\" = 1; DROP TABLE x; --", "eq.1")])) }
        #expect(e?.code == "42703")
        let e2 = pgError { _ = try builder.insert(q([]), body: .object([("body\") VALUES (1); DROP TABLE x; --", .null)])) }
        #expect(e2?.code == "42703")
        #expect(PostgRESTSQLBuilder.quoteIdentifier("a\"b") == "\"a\"\"b\"")
        let badType = PostgRESTSQLBuilder(table: PostgRESTTableSchema(name: "t", columns: [.init(name: "a", type: "int; DROP")]))
        #expect(pgError { _ = try badType.delete(try pgParse([("a", "eq.1")])) }?.status == 500)
    }

    @Test func jsonRoundTrip() throws {
        let text = #"{"a":[1,-2.5e3,true,false,null],"b":"q\"\\\n\u0001é😀","c":{}}"#
        let v = try JSONValue.parse(text)
        #expect(v.serialized == #"{"a":[1,-2.5e3,true,false,null],"b":"q\"\\\n\u0001é😀","c":{}}"#)
        #expect(try JSONValue.parse(#""\ud83d\ude00""#) == .string("😀"))
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01x", "\"abc", "tru", "1 2"] {
            #expect(pgError { _ = try PostgRESTError.parseBody(bad) }?.code == "PGRST102", "\(bad)")
        }
    }
}
