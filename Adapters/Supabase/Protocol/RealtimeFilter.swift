import SwitchboardCore
/// An operator of a Realtime `postgres_changes` filter (`col=op.value`).
public enum RealtimeFilterOperator: String, Sendable, Hashable, CaseIterable {
    /// Equal.
    case eq
    /// Not equal.
    case neq
    /// Less than.
    case lt
    /// Less than or equal.
    case lte
    /// Greater than.
    case gt
    /// Greater than or equal.
    case gte
    /// One of a parenthesised list: `in.(a,b)`.
    case `in`
}

/// One condition of a filter: `column=[not.]op.value`.
public struct RealtimeFilterCondition: Sendable, Hashable {
    /// The column the condition tests.
    public var column: String
    /// The comparison.
    public var op: RealtimeFilterOperator
    /// The operand values (one, or the list of `in`).
    public var values: [String]
    /// Whether the condition is negated with `not.`.
    public var negated: Bool

    /// A condition with every field given.
    public init(column: String, op: RealtimeFilterOperator, values: [String], negated: Bool = false) {
        self.column = column
        self.op = op
        self.values = values
        self.negated = negated
    }
}

/// Why a filter string was refused; `message` follows the real server's wording.
public struct RealtimeFilterError: Error, Sendable, Hashable, CustomStringConvertible {
    /// E.g. `Error parsing `filter` params: ["foo", "hey"]`.
    public let message: String
    /// The message.
    public var description: String { message }
}

/// A parsed `postgres_changes` filter: conditions joined with AND (comma-separated, as supabase/realtime does).
public struct RealtimeFilter: Sendable, Hashable {
    /// The conditions, all of which must hold.
    public var conditions: [RealtimeFilterCondition]

    /// A filter of `conditions`.
    public init(conditions: [RealtimeFilterCondition]) {
        self.conditions = conditions
    }

    /// Parses `col=op.value[,col2=op.value]`; an empty or blank string is no filter.
    public static func parse(_ text: String) throws(RealtimeFilterError) -> RealtimeFilter {
        let trimmed = text.trimmingWhitespace
        guard !trimmed.isEmpty else { return RealtimeFilter(conditions: []) }
        var conditions: [RealtimeFilterCondition] = []
        for segment in splitTopLevel(trimmed) {
            conditions.append(try parseSegment(segment))
        }
        return RealtimeFilter(conditions: conditions)
    }

    /// Whether `record` passes every condition; with `ignoringMissingColumns`, conditions on absent columns pass.
    public func matches(_ record: [String: JSONValue], ignoringMissingColumns: Bool = false) -> Bool {
        conditions.allSatisfy { condition in
            guard let value = record[condition.column] else { return ignoringMissingColumns }
            return Self.evaluate(condition, value)
        }
    }

    /// One condition against one non-missing value (SQL NULL never matches).
    private static func evaluate(_ condition: RealtimeFilterCondition, _ value: JSONValue) -> Bool {
        // SQL semantics: a NULL column satisfies no comparison, negated or not.
        if value.isNull { return false }
        let result: Bool
        switch condition.op {
        case .in:
            result = condition.values.contains { compare(value, $0) == 0 }
        default:
            guard let operand = condition.values.first, let order = compare(value, operand) else { return false }
            switch condition.op {
            case .eq: result = order == 0
            case .neq: result = order != 0
            case .lt: result = order < 0
            case .lte: result = order <= 0
            case .gt: result = order > 0
            case .gte: result = order >= 0
            case .in: result = false
            }
        }
        return condition.negated ? !result : result
    }

    /// -1, 0 or 1 comparing a record value with filter text: numbers numerically, booleans and text as text.
    static func compare(_ value: JSONValue, _ text: String) -> Int? {
        let lhs: String
        switch value {
        case .null: return nil
        case .number(let number):
            if let a = Double(number), let b = Double(text) { return a < b ? -1 : (a > b ? 1 : 0) }
            lhs = number
        case .bool(let flag):
            switch text.lowercased() {
            case "true", "t": return flag ? 0 : -1
            case "false", "f": return flag ? 1 : 0
            default: return nil
            }
        case .string(let string): lhs = string
        case .array, .object: lhs = value.serialized
        }
        if lhs == text { return 0 }
        // UUIDs compare case-insensitively, as PostgreSQL's uuid type does.
        if lhs.count == 36, text.count == 36, lhs.lowercased() == text.lowercased() { return 0 }
        return lhs.unicodeScalars.lexicographicallyPrecedes(text.unicodeScalars) ? -1 : 1
    }

    /// Parses one `col=[not.]op.value` segment.
    private static func parseSegment(_ raw: String) throws(RealtimeFilterError) -> RealtimeFilterCondition {
        let segment = raw.trimmingWhitespace
        guard !segment.isEmpty else {
            throw RealtimeFilterError(message: "filter must not contain empty segments (check for extra commas)")
        }
        guard let equals = segment.firstIndex(of: "=") else { throw failure([segment]) }
        let column = String(segment[..<equals])
        var rest = String(segment[segment.index(after: equals)...])
        var negated = false
        if rest.hasPrefix("not.") {
            negated = true
            rest.removeFirst(4)
        }
        guard let dot = rest.firstIndex(of: ".") else { throw failure([column, rest]) }
        let name = String(rest[..<dot]), value = String(rest[rest.index(after: dot)...])
        guard !column.isEmpty, let op = RealtimeFilterOperator(rawValue: name) else { throw failure([name, value]) }
        if op == .in {
            guard value.count >= 2, value.hasPrefix("("), value.hasSuffix(")") else {
                throw RealtimeFilterError(message: "Error parsing `filter` params: `in` filter value must be wrapped by parentheses")
            }
            let inner = String(value.dropFirst().dropLast())
            let items = inner.isEmpty ? [] : splitTopLevel(inner).map { unquote($0.trimmingWhitespace) }
            return RealtimeFilterCondition(column: column, op: op, values: items, negated: negated)
        }
        return RealtimeFilterCondition(column: column, op: op, values: [unquote(value)], negated: negated)
    }

    /// The real server's "Error parsing `filter` params: [..]" error.
    private static func failure(_ parts: [String]) -> RealtimeFilterError {
        let list = parts.map { JSONValue.string($0).serialized }.joined(separator: ", ")
        return RealtimeFilterError(message: "Error parsing `filter` params: [\(list)]")
    }

    /// Splits on commas outside parentheses and double quotes.
    private static func splitTopLevel(_ text: String) -> [String] {
        var parts: [String] = [], current = "", depth = 0, quoted = false, escaped = false
        for character in text {
            if quoted {
                current.append(character)
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { quoted = false }
                continue
            }
            switch character {
            case "\"": quoted = true; current.append(character)
            case "(": depth += 1; current.append(character)
            case ")": depth = max(0, depth - 1); current.append(character)
            case "," where depth == 0: parts.append(current); current = ""
            default: current.append(character)
            }
        }
        parts.append(current)
        return parts
    }

    /// `"a\"b"` → `a"b`; anything not fully quoted is kept as is.
    private static func unquote(_ value: String) -> String {
        guard value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") else { return value }
        var out = "", escaped = false
        for character in value.dropFirst().dropLast() {
            if escaped { out.append(character); escaped = false } else if character == "\\" { escaped = true } else {
                out.append(character)
            }
        }
        return out
    }
}

extension String {
    /// The string without leading and trailing spaces, tabs and newlines (Foundation-free).
    var trimmingWhitespace: String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(self[first...last])
    }
}
