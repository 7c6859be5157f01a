import Foundation
import SwitchboardCore

/// A Swift value that can be bound to a statement parameter.
public protocol SQLiteBindable {
    /// The value as SQLite stores it.
    var sqliteValue: SQLiteValue { get }
}

extension SQLiteValue: SQLiteBindable {
    /// The value itself.
    public var sqliteValue: SQLiteValue { self }
}

extension String: SQLiteBindable {
    /// Text.
    public var sqliteValue: SQLiteValue { .text(self) }
}

extension Int64: SQLiteBindable {
    /// An integer.
    public var sqliteValue: SQLiteValue { .integer(self) }
}

extension Int: SQLiteBindable {
    /// An integer.
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}

extension Double: SQLiteBindable {
    /// A real.
    public var sqliteValue: SQLiteValue { .real(self) }
}

extension Bool: SQLiteBindable {
    /// 1 or 0.
    public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}

extension Data: SQLiteBindable {
    /// A blob.
    public var sqliteValue: SQLiteValue { .blob(self) }
}

extension Date: SQLiteBindable {
    /// Whole microseconds since 1970, the precision every store keeps.
    public var sqliteValue: SQLiteValue { .integer(TimelinePosition.micros(self)) }
}

extension StringIdentifier where Self: SQLiteBindable {
    /// The identifier's text.
    public var sqliteValue: SQLiteValue { .text(rawValue) }
}

extension MessageID: SQLiteBindable {}
extension ConversationID: SQLiteBindable {}
extension UserID: SQLiteBindable {}
extension BackendID: SQLiteBindable {}
extension RemoteID: SQLiteBindable {}
extension AttachmentID: SQLiteBindable {}
extension Cursor: SQLiteBindable {}
