import Foundation

/// One SQLite value, as bound to a statement parameter.
public enum SQLiteValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes (an empty `Data` is an empty blob, not NULL).
    case blob(Data)
}
