/// One `order=` term: column, direction and null placement.
public struct PostgRESTOrder: Sendable, Equatable {
    /// Sort direction.
    public enum Direction: String, Sendable, Equatable {
        /// `ASC`.
        case asc
        /// `DESC`.
        case desc
    }

    /// Placement of NULLs.
    public enum Nulls: String, Sendable, Equatable {
        /// `NULLS FIRST`.
        case first = "nullsfirst"
        /// `NULLS LAST`.
        case last = "nullslast"
    }

    /// Column to sort by.
    public var column: String
    /// Explicit direction, nil for the database default (ascending).
    public var direction: Direction?
    /// Explicit null placement, nil for the database default.
    public var nulls: Nulls?

    /// Creates an order term.
    public init(column: String, direction: Direction? = nil, nulls: Nulls? = nil) {
        self.column = column
        self.direction = direction
        self.nulls = nulls
    }

    /// Parses an `order=` value such as `col.desc.nullslast,col2`.
    public static func parseList(_ value: String) throws -> [PostgRESTOrder] {
        let failure = PostgRESTError.parse("failed to parse order (\(value))")
        return try value.split(separator: ",", omittingEmptySubsequences: false).map { term in
            let parts = term.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard let column = parts.first, !column.isEmpty, parts.count <= 3 else {
                throw PostgRESTError.parse(failure.message, details: "invalid order term '\(term)'")
            }
            var order = PostgRESTOrder(column: column)
            for modifier in parts.dropFirst() {
                if let d = Direction(rawValue: modifier), order.direction == nil, order.nulls == nil {
                    order.direction = d
                } else if let n = Nulls(rawValue: modifier), order.nulls == nil {
                    order.nulls = n
                } else {
                    throw PostgRESTError.parse(failure.message, details: "unexpected order modifier '\(modifier)'")
                }
            }
            return order
        }
    }
}
