/// A boolean expression over filters: a leaf filter or an (optionally negated) `and(...)` / `or(...)` group.
public indirect enum PostgRESTLogicTree: Sendable, Equatable {
    /// How a group combines its children.
    public enum Connective: String, Sendable, Equatable {
        /// All children must hold.
        case and
        /// At least one child must hold.
        case or
    }

    /// A single column condition.
    case filter(PostgRESTFilter)
    /// A group of conditions, `not.` applied when `negated`.
    case group(Connective, negated: Bool, [PostgRESTLogicTree])

    /// The deepest nesting of groups accepted, the outer group included: each level costs a stack frame here and in
    /// the SQL builder, so hostile input (`and(and(…))` thousands deep) is refused before it can exhaust the stack.
    public static let maximumDepth = 32

    /// Parses a logic-tree query item such as key `not.or`, value `(a.eq.1,and(b.gt.2,c.is.null))`.
    public static func parse(key: String, value: String) throws -> PostgRESTLogicTree {
        let negated = key.hasPrefix("not.")
        let name = negated ? String(key.dropFirst(4)) : key
        guard let connective = Connective(rawValue: name) else {
            throw PostgRESTError.parse("failed to parse logic tree (\(value))", details: "unknown connective '\(name)'")
        }
        let failure = PostgRESTError.parse("failed to parse logic tree (\(value))")
        var cursor = PostgRESTCursor(value)
        let children = try groupBody(&cursor, depth: 1, failure: failure)
        guard cursor.atEnd else {
            throw PostgRESTError.parse(failure.message, details: "unexpected text after the closing ')'")
        }
        return .group(connective, negated: negated, children)
    }

    /// Reads `(item,item,…)`, the group at nesting level `depth` (1 for the outer one).
    private static func groupBody(_ cursor: inout PostgRESTCursor, depth: Int,
                                  failure: PostgRESTError) throws -> [PostgRESTLogicTree] {
        guard depth <= maximumDepth else {
            throw PostgRESTError.parse(failure.message, details: "and/or groups nested deeper than \(maximumDepth) levels")
        }
        guard cursor.consume("(") else { throw PostgRESTError.parse(failure.message, details: "expected '('") }
        var children: [PostgRESTLogicTree] = []
        while true {
            children.append(try item(&cursor, depth: depth, failure: failure))
            if cursor.consume(",") { continue }
            if cursor.consume(")") { return children }
            throw PostgRESTError.parse(failure.message, details: cursor.atEnd ? "missing ')'" : "expected ',' or ')'")
        }
    }

    /// Reads one child of a group at level `depth`: a nested group or a `column.operator.value` filter.
    private static func item(_ cursor: inout PostgRESTCursor, depth: Int, failure: PostgRESTError) throws -> PostgRESTLogicTree {
        let start = cursor.index
        let negated = cursor.consume(prefix: "not.")
        for connective in [Connective.and, .or] where cursor.consume(prefix: connective.rawValue + "(") {
            cursor.index -= 1
            return .group(connective, negated: negated, try groupBody(&cursor, depth: depth + 1, failure: failure))
        }
        cursor.index = start
        var column = ""
        while let c = cursor.current, c != "." {
            guard !",()\"".contains(c) else {
                throw PostgRESTError.parse(failure.message, details: "expected '.' after column name")
            }
            column.append(c)
            cursor.index += 1
        }
        guard !column.isEmpty, cursor.consume(".") else {
            throw PostgRESTError.parse(failure.message, details: "expected 'column.operator.value'")
        }
        let filterNegated = cursor.consume(prefix: "not.")
        var name = ""
        while let c = cursor.current, c != "." {
            if c == "(", !name.isEmpty {  // a full-text operator's configuration: `fts(english)`
                while let inner = cursor.current, inner != ")" {
                    name.append(inner)
                    cursor.index += 1
                }
                guard cursor.consume(")") else { throw PostgRESTError.parse(failure.message, details: "missing ')'") }
                name.append(")")
                continue
            }
            guard !",()\"".contains(c) else {
                throw PostgRESTError.parse(failure.message, details: "expected '.' after operator")
            }
            name.append(c)
            cursor.index += 1
        }
        guard cursor.consume(".") else {
            throw PostgRESTError.parse(failure.message, details: "expected '.' after operator")
        }
        let operation: PostgRESTFilter.Operation
        if name == "in" {
            operation = .in(try cursor.parenthesizedList(failure: failure))
        } else {
            let operand = try cursor.value(stops: [",", ")"], failure: failure)
            operation = try PostgRESTFilter.makeOperation(name: name, operand: operand, failure: failure)
        }
        return .filter(PostgRESTFilter(column: column, negated: filterNegated, operation: operation))
    }

    /// Every column the tree mentions, in order of appearance.
    public var columns: [String] {
        switch self {
        case let .filter(f): return [f.column]
        case let .group(_, _, children): return children.flatMap(\.columns)
        }
    }
}
