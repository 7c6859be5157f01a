import Testing
@testable import SupabaseProtocol

/// Parses with the given query items and headers.
func pgParse(_ items: [(String, String)], headers: [(String, String)] = [], table: String = "t") throws -> PostgRESTQuery {
    try PostgRESTQuery.parse(table: table, queryItems: items.map { (name: $0.0, value: $0.1) },
                             headers: headers.map { (name: $0.0, value: $0.1) })
}

/// The PostgRESTError thrown by `body`, or nil.
func pgError(_ body: () throws -> Void) -> PostgRESTError? {
    do { try body(); return nil } catch let error as PostgRESTError { return error } catch { return nil }
}

/// The single top-level filter of a query.
func pgFilter(_ key: String, _ value: String) throws -> PostgRESTFilter {
    let q = try pgParse([(key, value)])
    guard q.conditions.count == 1, case let .filter(f) = q.conditions[0] else {
        Issue.record("expected one filter")
        return PostgRESTFilter(column: "", operation: .eq(""))
    }
    return f
}

@Suite struct PostgRESTQueryTests {
    @Test(arguments: [
        ("eq.5", PostgRESTFilter.Operation.eq("5")), ("neq.5", .neq("5")), ("gt.5", .gt("5")),
        ("gte.5", .gte("5")), ("lt.5", .lt("5")), ("lte.5", .lte("5")),
        ("like.*ab*", .like("%ab%")), ("ilike.A*", .ilike("A%")),
        ("eq.a.b.c", .eq("a.b.c")), ("eq.", .eq("")), ("eq.\"q\"", .eq("\"q\"")),
    ])
    func scalarOperators(value: String, expected: PostgRESTFilter.Operation) throws {
        let f = try pgFilter("age", value)
        #expect(f == PostgRESTFilter(column: "age", negated: false, operation: expected))
    }

    @Test func notPrefixOnEveryOperator() throws {
        for op in ["eq.1", "neq.1", "gt.1", "gte.1", "lt.1", "lte.1", "like.a", "ilike.a", "in.(1)", "is.null"] {
            let f = try pgFilter("c", "not." + op)
            #expect(f.negated, "not.\(op)")
        }
        #expect(try pgFilter("c", "not.eq.1").operation == .eq("1"))
    }

    @Test func inLists() throws {
        #expect(try pgFilter("id", "in.(1,2,3)").operation == .in(["1", "2", "3"]))
        #expect(try pgFilter("n", "in.(a,\"c,d\",\"x)y\")").operation == .in(["a", "c,d", "x)y"]))
        #expect(try pgFilter("n", "in.(\"say \\\"hi\\\"\",\"back\\\\slash\")").operation == .in(["say \"hi\"", "back\\slash"]))
        #expect(try pgFilter("n", "in.()").operation == .in([]))
        #expect(try pgFilter("n", "in.(,)").operation == .in(["", ""]))
    }

    @Test func isValues() throws {
        #expect(try pgFilter("c", "is.null").operation == .is(.null))
        #expect(try pgFilter("c", "is.NULL").operation == .is(.null))
        #expect(try pgFilter("c", "is.true").operation == .is(.true))
        #expect(try pgFilter("c", "is.false").operation == .is(.false))
        #expect(try pgFilter("c", "is.unknown").operation == .is(.unknown))
        #expect(try pgFilter("c", "is.not_null").operation == .is(.notNull))
    }

    @Test func repeatedKeysAreAllKept() throws {
        let q = try pgParse([("age", "gte.18"), ("age", "lt.65")])
        #expect(q.conditions == [.filter(.init(column: "age", operation: .gte("18"))),
                                 .filter(.init(column: "age", operation: .lt("65")))])
    }

    @Test func logicTrees() throws {
        let q = try pgParse([("or", "(a.eq.1,and(b.gt.2,c.is.null))")])
        #expect(q.conditions == [.group(.or, negated: false, [
            .filter(.init(column: "a", operation: .eq("1"))),
            .group(.and, negated: false, [
                .filter(.init(column: "b", operation: .gt("2"))),
                .filter(.init(column: "c", operation: .is(.null))),
            ]),
        ])])
        let n = try pgParse([("not.or", "(a.not.eq.1,not.and(b.in.(1,\"2,3\"),c.like.*x*))")])
        #expect(n.conditions == [.group(.or, negated: true, [
            .filter(.init(column: "a", negated: true, operation: .eq("1"))),
            .group(.and, negated: true, [
                .filter(.init(column: "b", operation: .in(["1", "2,3"]))),
                .filter(.init(column: "c", operation: .like("%x%"))),
            ]),
        ])])
        let quoted = try pgParse([("and", "(name.eq.\"a,b(c)\",x.neq.y)")])
        #expect(quoted.conditions == [.group(.and, negated: false, [
            .filter(.init(column: "name", operation: .eq("a,b(c)"))),
            .filter(.init(column: "x", operation: .neq("y"))),
        ])])
        let deep = try pgParse([("or", "(and(or(a.eq.1,b.eq.2),c.eq.3),d.eq.4)")])
        #expect(deep.conditions.first?.columns == ["a", "b", "c", "d"])
        #expect(try pgParse([("not.and", "(a.eq.1)")]).conditions == [.group(.and, negated: true, [.filter(.init(column: "a", operation: .eq("1")))])])
    }

    @Test("select renames (alias:column) and casts (column::type) as PostgREST does; '*' mixes with both")
    func selectAliasesAndCasts() throws {
        #expect(try pgParse([("select", "text:body, at:created_at::text,id::bigint")]).select == [
            PostgRESTSelectItem(column: "body", alias: "text"),
            PostgRESTSelectItem(column: "created_at", alias: "at", cast: "text"),
            PostgRESTSelectItem(column: "id", cast: "bigint"),
        ])
        #expect(try pgParse([("select", "*,text:body")]).select == ["*", PostgRESTSelectItem(column: "body", alias: "text")])
        #expect(try pgParse([("select", "tags::text[],at::timestamp with time zone")]).select == [
            PostgRESTSelectItem(column: "tags", cast: "text[]"),
            PostgRESTSelectItem(column: "at", cast: "timestamp with time zone"),
        ])
        #expect(try pgParse([("select", "a,b")]).referencedColumns == ["a", "b"])
        #expect(try pgParse([("select", "*,x:b::text")]).referencedColumns == ["b"])
    }

    @Test("select embeds related tables: table(columns), alias:table(...), nested, '*' or nothing for every column")
    func selectEmbeddings() throws {
        let q = try pgParse([("select", "id, reactions(symbol,user_id), msg:messages(body, conversations()), x:body::text")])
        #expect(q.select == [
            "id",
            PostgRESTSelectItem(column: "reactions", embedded: ["symbol", "user_id"]),
            PostgRESTSelectItem(column: "messages", alias: "msg",
                                embedded: ["body", PostgRESTSelectItem(column: "conversations", embedded: ["*"])]),
            PostgRESTSelectItem(column: "body", alias: "x", cast: "text"),
        ])
        #expect(q.referencedColumns == ["id", "body"], "an embedding's columns are checked against its own table")
        #expect(try pgParse([("select", "*,reactions(*)")]).select == ["*", PostgRESTSelectItem(column: "reactions", embedded: ["*"])])
    }

    @Test("dotted keys filter, order and page an embedded resource; !inner marks it; a dotted key naming no embedding stays a column")
    func embeddedOptions() throws {
        let q = try pgParse([("msg.rooms.title", "eq.x"), ("reactions.symbol", "in.(a,b)"), ("reactions.order", "at.desc"),
                             ("reactions.limit", "2"), ("reactions.offset", "1"), ("reactions.or", "(a.eq.1,b.eq.2)"),
                             ("select", "id,reactions!inner(symbol),msg:messages(body,rooms(title))"), ("id", "eq.1"),
                             ("other.x", "eq.1")])
        #expect(q.select?[1] == PostgRESTSelectItem(column: "reactions", embedded: ["symbol"], isInner: true))
        let reactions = try #require(q.embeddedOptions["reactions"])
        #expect(reactions.conditions.count == 2)
        #expect(reactions.order == [PostgRESTOrder(column: "at", direction: .desc)])
        #expect(reactions.limit == 2 && reactions.offset == 1)
        #expect(q.embeddedOptions["msg.rooms"]?.conditions == [.filter(PostgRESTFilter(column: "title", operation: .eq("x")))])
        #expect(q.conditions.flatMap(\.columns) == ["id", "other.x"], "not embedded: an ordinary (unknown) column")
        #expect(pgError { _ = try pgParse([("select", "reactions(*)"), ("reactions.limit", "x")]) }?.code == "PGRST100")
    }

    @Test("the containment, regex, distinctness and full-text operators parse, at the top and inside logic trees")
    func moreOperators() throws {
        #expect(try pgFilter("tags", "cs.{a,b}").operation == .contains("{a,b}"))
        #expect(try pgFilter("meta", #"cd.{"k":1}"#).operation == .containedBy(#"{"k":1}"#))
        #expect(try pgFilter("tags", "ov.{a}").operation == .overlaps("{a}"))
        #expect(try pgFilter("body", "match.^a.*$").operation == .match("^a.*$"))
        #expect(try pgFilter("body", "imatch.^A").operation == .imatch("^A"))
        #expect(try pgFilter("body", "isdistinct.x").operation == .isDistinct("x"))
        #expect(try pgFilter("body", "fts.cat & dog").operation == .fullText(.fts, configuration: nil, query: "cat & dog"))
        #expect(try pgFilter("body", "not.wfts(english).\"fat cat\" -rat")
            == PostgRESTFilter(column: "body", negated: true,
                               operation: .fullText(.wfts, configuration: "english", query: "\"fat cat\" -rat")))
        #expect(try pgFilter("body", "plfts(simple).a b").operation == .fullText(.plfts, configuration: "simple", query: "a b"))
        #expect(try pgFilter("body", "phfts.a b").operation == .fullText(.phfts, configuration: nil, query: "a b"))
        let tree = try pgParse([("or", #"(meta.cs.{"kind":"note","n":[1,2]},tags.ov.{a,b},body.fts(english).cat)"#)])
        #expect(tree.conditions == [.group(.or, negated: false, [
            .filter(PostgRESTFilter(column: "meta", operation: .contains(#"{"kind":"note","n":[1,2]}"#))),
            .filter(PostgRESTFilter(column: "tags", operation: .overlaps("{a,b}"))),
            .filter(PostgRESTFilter(column: "body", operation: .fullText(.fts, configuration: "english", query: "cat"))),
        ])])
    }

    @Test func selectAndOrder() throws {
        #expect(try pgParse([("select", "id, name")]).select == ["id", "name"])
        #expect(try pgParse([("select", "*")]).select == nil)
        #expect(try pgParse([]).select == nil)
        let q = try pgParse([("order", "a.desc.nullslast,b,c.asc,d.nullsfirst")])
        #expect(q.order == [PostgRESTOrder(column: "a", direction: .desc, nulls: .last), PostgRESTOrder(column: "b"),
                            PostgRESTOrder(column: "c", direction: .asc), PostgRESTOrder(column: "d", nulls: .first)])
    }

    @Test func limitOffsetAndRange() throws {
        let a = try pgParse([("limit", "10"), ("offset", "20")])
        #expect(a.limit == 10 && a.offset == 20)
        let r = try pgParse([], headers: [("Range", "0-14"), ("Range-Unit", "items")])
        #expect(r.limit == 15 && r.offset == 0)
        let open = try pgParse([], headers: [("range", "5-")])
        #expect(open.limit == nil && open.offset == 5)
        let both = try pgParse([("limit", "100")], headers: [("Range", "10-19")])
        #expect(both.limit == 10 && both.offset == 10)
        let ignored = try pgParse([], headers: [("Range", "bytes=0-1")])
        #expect(ignored.limit == nil && ignored.offset == 0)
        let none = try pgParse([("limit", "0")])
        #expect(none.limit == 0)
        let e = pgError { _ = try pgParse([], headers: [("Range", "5-1")]) }
        #expect(e?.status == 416 && e?.code == "PGRST103")
    }

    @Test func contentRange() throws {
        let q = try pgParse([], headers: [("Range", "0-14")])
        #expect(q.contentRange(rowCount: 15) == "0-14/*")
        #expect(q.contentRange(rowCount: 15, total: 57) == "0-14/57")
        #expect(q.contentRange(rowCount: 0) == "*/*")
        #expect(try pgParse([("offset", "10")]).contentRange(rowCount: 0, total: 0) == "*/0")
        #expect(try pgParse([("offset", "10")]).contentRange(rowCount: 2, total: 12) == "10-11/12")
    }

    @Test func onConflictAndColumns() throws {
        let q = try pgParse([("on_conflict", "a,b"), ("columns", "x,y")])
        #expect(q.onConflict == ["a", "b"] && q.insertColumns == ["x", "y"])
        let quoted = try pgParse([("columns", #""body", "we,ird","q\"t" , plain"#)])
        #expect(quoted.insertColumns == ["body", "we,ird", "q\"t", "plain"])
        #expect(pgError { _ = try pgParse([("columns", #""a"b"#)]) }?.code == "PGRST100")
        #expect(pgError { _ = try pgParse([("columns", #""a"#)]) }?.code == "PGRST100")
        #expect(pgError { _ = try pgParse([("columns", #""""#)]) }?.code == "PGRST100")
    }

    @Test func preferHeader() throws {
        let q = try pgParse([], headers: [("Prefer", "return=representation, count=exact"),
                                          ("prefer", "resolution=merge-duplicates,handling=lenient")])
        #expect(q.preferences == PostgRESTPreferences(returnMode: .representation, count: .exact, resolution: .mergeDuplicates))
        #expect(try pgParse([], headers: [("Prefer", "return=minimal")]).preferences.returnMode == .minimal)
        #expect(try pgParse([], headers: [("Prefer", "return=headers-only")]).preferences.returnMode == .headersOnly)
        #expect(try pgParse([], headers: [("Prefer", "resolution=ignore-duplicates")]).preferences.resolution == .ignoreDuplicates)
        #expect(try pgParse([]).preferences == PostgRESTPreferences())
        #expect(try pgParse([], headers: [("Prefer", "return=bogus")]).preferences.returnMode == nil)
    }

    @Test(arguments: [
        ("or", "(a.eq.1"), ("or", "(a.eq.1))"), ("and", "a.eq.1"), ("or", "(a.eq.\"x)"),
        ("or", "(a.foo.1)"), ("or", "(a)"), ("or", "(a.eq)"), ("or", "()"), ("or", "(a.eq.x(y)"),
        ("id", "eq1"), ("id", "foo.1"), ("id", ""), ("id", "not.eq"), ("id", "in.(1,2"), ("id", "in.1,2"),
        ("id", "is.maybe"), ("id", "in.(1,2)x"),
        ("limit", "abc"), ("limit", "-1"), ("offset", "1.5"),
        ("order", "a.up"), ("order", "a.desc.asc"), ("order", ""), ("order", "a,"),
        ("select", "a,"), ("select", "id,author(name"), ("select", "id,author(name))"), ("select", "a(b)c"),
        ("select", "author!fk(name)"), ("select", "...author(name)"), ("select", ":author(name)"), ("select", "x:"), ("select", ":id"), ("select", "a:b:c"),
        ("select", "id::"), ("select", "id::text from t"), ("select", "id::text;select"), ("select", "id::int)"),
        ("select", "id::1int"), ("select", "*::text"), ("select", "all:*"), ("select", "meta->a"),
        ("id", "fts(english.cat"), ("id", "fts().cat"), ("id", "xfts(english).cat"), ("or", "(a.cs.{1,2)"),
        ("on_conflict", "a,,b"),
    ])
    func parseErrors(key: String, value: String) {
        let e = pgError { _ = try pgParse([(key, value)]) }
        #expect(e?.status == 400, "\(key)=\(value)")
        #expect(e?.code == "PGRST100", "\(key)=\(value)")
    }

    @Test func errorMessagesAndBody() {
        let e = pgError { _ = try pgParse([("or", "(a.eq.1")]) }
        #expect(e?.message == "failed to parse logic tree ((a.eq.1)")
        let f = pgError { _ = try pgParse([("id", "foo.1")]) }
        #expect(f?.message == "failed to parse filter (foo.1)")
        #expect(f?.details == "unknown operator 'foo'")
        let s = pgError { _ = try pgParse([("select", "id,author!author_fkey(name)")]) }
        #expect(s?.details == "spreads ('...') and foreign-key hints ('!fk') are not supported by this server")
        let body = PostgRESTError(status: 400, code: "42703", message: "column t.\"x does not exist", hint: "a\nb").jsonBody
        #expect(body == #"{"code":"42703","message":"column t.\"x does not exist","details":null,"hint":"a\nb"}"#)
        #expect(PostgRESTError.undefinedColumn(table: "posts", column: "foo")
            == PostgRESTError(status: 400, code: "42703", message: "column posts.foo does not exist"))
    }
}
