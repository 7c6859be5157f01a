import Foundation
import SwitchboardCore

/// A Swift value bound as a text parameter; the SQL casts it where the column type cannot be inferred.
protocol PostgresBindable {
    /// The value in PostgreSQL's text input format.
    var postgresText: String { get }
}

extension String: PostgresBindable {
    /// Itself.
    var postgresText: String { self }
}

extension Int: PostgresBindable {
    /// Decimal digits.
    var postgresText: String { String(self) }
}

extension Int64: PostgresBindable {
    /// Decimal digits.
    var postgresText: String { String(self) }
}

extension Double: PostgresBindable {
    /// The shortest text that reads back as the same double.
    var postgresText: String { "\(self)" }
}

extension Bool: PostgresBindable {
    /// `true` or `false`.
    var postgresText: String { self ? "true" : "false" }
}

extension Date: PostgresBindable {
    /// Whole microseconds since 1970, the precision every store keeps.
    var postgresText: String { String(TimelinePosition.micros(self)) }
}

extension Data: PostgresBindable {
    /// Lowercase hex digits; the SQL wraps the parameter in `decode($n, 'hex')`.
    var postgresText: String { PostgresHex.encode(self) }
}

extension StringIdentifier where Self: PostgresBindable {
    /// The identifier's text.
    var postgresText: String { rawValue }
}

extension MessageID: PostgresBindable {}
extension ConversationID: PostgresBindable {}
extension UserID: PostgresBindable {}
extension BackendID: PostgresBindable {}
extension RemoteID: PostgresBindable {}
extension AttachmentID: PostgresBindable {}
extension Cursor: PostgresBindable {}

/// Hex text for `bytea` values (`decode(…, 'hex')` in, `encode(…, 'hex')` out), independent of `bytea_output`.
enum PostgresHex {
    /// Lowercase hex digits of `data`.
    static func encode(_ data: Data) -> String { Digest.hex(data) }

    /// The bytes of hex text (either case), or nil when it is not hex.
    static func decode(_ text: String) -> Data? { Hex.decode(text).map { Data($0) } }
}

/// A text array literal (`{"a","b"}`) for a `$n::text[]` parameter.
enum PostgresArray {
    /// The literal holding `values`, each quoted and escaped.
    static func literal(_ values: [String]) -> String {
        let elements = values.map { value in
            "\"" + value.replacing("\\", with: "\\\\").replacing("\"", with: "\\\"") + "\""
        }
        return "{" + elements.joined(separator: ",") + "}"
    }
}

/// One result row, decoded by column index; unreadable values throw `corruptStore`.
struct PostgresRow {
    /// The row's values; nil is SQL NULL.
    let values: [String?]
    /// Builds the error for an unreadable value.
    let corruption: (String) -> SwitchboardError

    /// A non-null text column.
    func string(_ index: Int) throws -> String {
        guard let value = values[index] else { throw corruption("column \(index) is unexpectedly NULL") }
        return value
    }

    /// A nullable text column.
    func optionalString(_ index: Int) -> String? { values[index] }

    /// A non-null integer column.
    func int64(_ index: Int) throws -> Int64 {
        guard let value = try Int64(string(index)) else { throw corruption("column \(index) is not an integer") }
        return value
    }

    /// A non-null integer column as `Int`.
    func int(_ index: Int) throws -> Int { Int(try int64(index)) }

    /// A nullable double column.
    func optionalDouble(_ index: Int) throws -> Double? {
        guard let text = values[index] else { return nil }
        guard let value = Double(text) else { throw corruption("column \(index) is not a number") }
        return value
    }

    /// A non-null boolean column (`t` / `f`).
    func bool(_ index: Int) throws -> Bool {
        guard let value = try optionalBool(index) else { throw corruption("column \(index) is unexpectedly NULL") }
        return value
    }

    /// A nullable boolean column.
    func optionalBool(_ index: Int) throws -> Bool? {
        switch values[index] {
        case nil: return nil
        case "t", "true": return true
        case "f", "false": return false
        default: throw corruption("column \(index) is not a boolean")
        }
    }

    /// A non-null microsecond timestamp column.
    func date(_ index: Int) throws -> Date { TimelinePosition.date(micros: try int64(index)) }

    /// A nullable microsecond timestamp column.
    func optionalDate(_ index: Int) throws -> Date? {
        guard values[index] != nil else { return nil }
        return try date(index)
    }

    /// A nullable `bytea` column selected with `encode(…, 'hex')`.
    func optionalData(_ index: Int) throws -> Data? {
        guard let text = values[index] else { return nil }
        guard let data = PostgresHex.decode(text) else { throw corruption("column \(index) is not hex") }
        return data
    }

    /// A non-null `bytea` column selected with `encode(…, 'hex')`.
    func data(_ index: Int) throws -> Data {
        guard let data = try optionalData(index) else { throw corruption("column \(index) is unexpectedly NULL") }
        return data
    }
}
