/// A character cursor shared by the PostgREST query-string grammars (lists, logic trees).
struct PostgRESTCursor {
    let chars: [Character]
    var index = 0

    init(_ text: String) { chars = Array(text) }

    var atEnd: Bool { index >= chars.count }
    var current: Character? { atEnd ? nil : chars[index] }

    mutating func consume(_ c: Character) -> Bool {
        guard current == c else { return false }
        index += 1
        return true
    }

    mutating func consume(prefix: String) -> Bool {
        let p = Array(prefix)
        guard index + p.count <= chars.count, Array(chars[index..<index + p.count]) == p else { return false }
        index += p.count
        return true
    }

    /// Reads a `"..."` value with `\"` / `\\` escapes; the cursor must be on the opening quote.
    mutating func quoted(failure: PostgRESTError) throws -> String {
        index += 1
        var out = ""
        while let c = current {
            index += 1
            if c == "\"" { return out }
            if c == "\\" {
                guard let next = current else { break }
                index += 1
                out.append(next)
            } else {
                out.append(c)
            }
        }
        throw PostgRESTError.parse(failure.message, details: "unterminated quoted value")
    }

    /// Reads a value: quoted, or raw text up to one of `stops` (reserved characters rejected inside); a `{...}`
    /// part (an array or JSON literal, as in `tags.cs.{a,b}`) is read whole, stops included.
    mutating func value(stops: Set<Character>, failure: PostgRESTError) throws -> String {
        if current == "\"" { return try quoted(failure: failure) }
        var out = ""
        var depth = 0
        while let c = current, depth > 0 || !stops.contains(c) {
            if c == "{" { depth += 1 } else if c == "}", depth > 0 { depth -= 1 }
            if depth > 0 {
                out.append(c)
                index += 1
                continue
            }
            if c == "(" || c == "\"" {
                throw PostgRESTError.parse(failure.message, details: "unexpected '\(c)'; quote values containing reserved characters")
            }
            out.append(c)
            index += 1
        }
        return out
    }

    /// Reads `(a,b,"c,d")`; `()` is the empty list.
    mutating func parenthesizedList(failure: PostgRESTError) throws -> [String] {
        guard consume("(") else { throw PostgRESTError.parse(failure.message, details: "expected '('") }
        if consume(")") { return [] }
        var items: [String] = []
        while true {
            items.append(try value(stops: [",", ")"], failure: failure))
            if consume(",") { continue }
            if consume(")") { return items }
            throw PostgRESTError.parse(failure.message, details: "expected ',' or ')'")
        }
    }
}
