import Testing
@testable import SupabaseProtocol

/// Depth limits of the recursive query-string grammars (`or=`/`and=` trees, `select=` embeddings) and the refusal
/// of NUL: hostile input gets a PGRST100 400, never a stack overflow, seconds of CPU or a value cut short.
@Suite struct PostgRESTLimitsTests {
    /// `and(` `depth - 1` times inside the outer group, around one filter.
    private func nestedTree(_ depth: Int) -> String {
        "(" + String(repeating: "and(", count: depth - 1) + "id.eq.1" + String(repeating: ")", count: depth - 1) + ")"
    }

    /// `a(` `depth` times around one column.
    private func nestedSelect(_ depth: Int) -> String {
        String(repeating: "a(", count: depth) + "id" + String(repeating: ")", count: depth)
    }

    @Test("the issue's or=(and(×10,000 …)) is a PGRST100 400, not a stack overflow")
    func logicTreeTooDeep() {
        let value = "(" + String(repeating: "and(", count: 10_000) + "id.eq.1" + String(repeating: ")", count: 10_000) + ")"
        for key in ["or", "and", "not.or"] {
            let error = pgError { _ = try pgParse([(key, value)]) }
            #expect(error?.status == 400)
            #expect(error?.code == "PGRST100")
            #expect(error?.details == "and/or groups nested deeper than \(PostgRESTLogicTree.maximumDepth) levels")
        }
        let embedded = pgError { _ = try pgParse([("select", "id,reactions(*)"), ("reactions.or", value)]) }
        #expect(embedded?.code == "PGRST100", "an embedded resource's tree has the same limit")
    }

    @Test("trees up to the depth limit parse; one level more is refused")
    func logicTreeAtTheLimit() throws {
        let limit = PostgRESTLogicTree.maximumDepth
        let deepest = try pgParse([("or", nestedTree(limit))])
        #expect(deepest.conditions.first?.columns == ["id"])
        #expect(pgError { _ = try pgParse([("or", nestedTree(limit + 1))]) }?.code == "PGRST100")
        // Width is not depth: many siblings at one level are fine.
        let wide = "(" + Array(repeating: "and(a.eq.1,b.eq.2)", count: 500).joined(separator: ",") + ")"
        #expect(try pgParse([("or", wide)]).conditions.first?.columns.count == 1_000)
    }

    @Test("select=a(a(…)) 5,200 deep (the issue's 15.6 KB URL) is a PGRST100 400")
    func selectTooDeep() {
        let value = nestedSelect(5_200)
        let error = pgError { _ = try pgParse([("select", value)]) }
        #expect(error?.status == 400)
        #expect(error?.code == "PGRST100")
        #expect(error?.details == "embedded resources nested deeper than \(PostgRESTSelectItem.maximumDepth) levels")
        // Unbalanced at that depth is refused too, whichever problem is met first.
        #expect(pgError { _ = try pgParse([("select", String(repeating: "a(", count: 5_200))]) }?.code == "PGRST100")
        #expect(pgError { _ = try pgParse([("select", "id" + String(repeating: ")", count: 5_200))]) }?.code == "PGRST100")
    }

    @Test("embeddings up to the depth limit parse into the nested items")
    func selectAtTheLimit() throws {
        let limit = PostgRESTSelectItem.maximumDepth
        var item = try #require(try pgParse([("select", nestedSelect(limit))]).select?.first)
        var depth = 1
        while let child = item.embedded?.first, child.embedded != nil {
            item = child
            depth += 1
        }
        #expect(depth == limit)
        #expect(item.embedded == ["id"])
        #expect(pgError { _ = try pgParse([("select", nestedSelect(limit + 1))]) }?.code == "PGRST100")
    }

    @Test("a long flat select (thousands of columns and embeddings) still parses")
    func selectWide() throws {
        let columns = (0..<2_000).map { "c\($0)" }
        let select = try pgParse([("select", columns.joined(separator: ",") + ",r(x,y),s:t!inner( )")]).select
        #expect(select?.count == 2_002)
        #expect(select?[2_000] == PostgRESTSelectItem(column: "r", embedded: ["x", "y"]))
        #expect(select?[2_001] == PostgRESTSelectItem(column: "t", alias: "s", embedded: ["*"], isInner: true))
    }

    /// Ordinary selects and what they parse to.
    static let ordinarySelects: [(String, [PostgRESTSelectItem])] = [
        ("id,reactions(symbol,user_id)", ["id", PostgRESTSelectItem(column: "reactions", embedded: ["symbol", "user_id"])]),
        (" id , r ( a , b ) , c ", ["id", PostgRESTSelectItem(column: "r", embedded: ["a", "b"]), "c"]),
        ("m:messages(body,rooms(title)),x:y::text", [
            PostgRESTSelectItem(column: "messages", alias: "m", embedded: ["body", PostgRESTSelectItem(column: "rooms", embedded: ["title"])]),
            PostgRESTSelectItem(column: "y", alias: "x", cast: "text"),
        ]),
        ("a(b(c())),d!left(*)", [
            PostgRESTSelectItem(column: "a", embedded: [PostgRESTSelectItem(column: "b", embedded: [PostgRESTSelectItem(column: "c", embedded: ["*"])])]),
            PostgRESTSelectItem(column: "d", embedded: ["*"]),
        ]),
    ]

    @Test("ordinary embedded selects keep parsing as before", arguments: ordinarySelects)
    func selectOrdinary(value: String, expected: [PostgRESTSelectItem]) throws {
        #expect(try pgParse([("select", value)]).select == expected)
    }

    @Test("malformed embeddings are still refused", arguments: [
        "a(", "a)", "a(b", "a(b))", "a(b)c", "a(b)(c)", "(b)", "x:(b)", "a(,)", "a(b,)", "a:b:c(d)", "a!fk(b)",
        "...a(b)", "a((b))", "a(b),",
    ])
    func selectMalformed(value: String) {
        #expect(pgError { _ = try pgParse([("select", value)]) }?.code == "PGRST100", "\(value)")
    }

    @Test("NUL in a query item's name or value is refused instead of cut short by libpq")
    func nulRefused() {
        for item in [("id", "eq.a\u{0}b"), ("select", "id,\u{0}x"), ("i\u{0}d", "eq.1"), ("or", "(a.eq.\u{0})")] {
            let error = pgError { _ = try pgParse([item]) }
            #expect(error?.code == "PGRST100")
            #expect(error?.details == "NUL (%00) is not allowed")
        }
    }
}
