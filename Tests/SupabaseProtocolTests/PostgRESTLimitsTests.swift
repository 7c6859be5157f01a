import Testing
@testable import SupabaseProtocol

/// Depth limits of the recursive query-string grammars: hostile input gets a PGRST100 400, never a stack overflow.
@Suite struct PostgRESTLimitsTests {
    /// `and(` `depth - 1` times inside the outer group, around one filter.
    private func nestedTree(_ depth: Int) -> String {
        "(" + String(repeating: "and(", count: depth - 1) + "id.eq.1" + String(repeating: ")", count: depth - 1) + ")"
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
}
