import SwitchboardCore
/// A schema-qualified table name.
public struct RealtimeTableName: Sendable, Hashable, CustomStringConvertible {
    /// The schema, e.g. `public`.
    public var schema: String
    /// The table, e.g. `messages`.
    public var table: String

    /// A name from its parts.
    public init(schema: String, table: String) {
        self.schema = schema
        self.table = table
    }

    /// `schema.table`.
    public var description: String { "\(schema).\(table)" }
}

/// One column of a changed table as `postgres_changes` lists it.
public struct RealtimeColumn: Sendable, Hashable {
    /// The column name.
    public var name: String
    /// The PostgreSQL type name (`pg_type.typname`, e.g. `uuid`, `text`, `int8`).
    public var type: String

    /// A column from its parts.
    public init(name: String, type: String) {
        self.name = name
        self.type = type
    }
}

/// One row change read from the change log, ready to be matched and delivered.
public struct RealtimeChange: Sendable, Hashable {
    /// The changed table.
    public var table: RealtimeTableName
    /// `INSERT`, `UPDATE` or `DELETE`.
    public var type: String
    /// ISO-8601 commit time, e.g. `2024-05-01T12:00:00.123Z`.
    public var commitTimestamp: String
    /// The table's columns in order.
    public var columns: [RealtimeColumn]
    /// The new row (INSERT/UPDATE), nil for DELETE.
    public var record: JSONValue?
    /// The old row's primary key (UPDATE/DELETE, like REPLICA IDENTITY DEFAULT), nil for INSERT.
    public var oldRecord: JSONValue?
    /// The primary-key values of the row (column → value).
    public var primaryKey: [(column: String, value: JSONValue)]

    /// A change with every field given.
    public init(table: RealtimeTableName, type: String, commitTimestamp: String, columns: [RealtimeColumn],
                record: JSONValue?, oldRecord: JSONValue?, primaryKey: [(column: String, value: JSONValue)]) {
        self.table = table
        self.type = type
        self.commitTimestamp = commitTimestamp
        self.columns = columns
        self.record = record
        self.oldRecord = oldRecord
        self.primaryKey = primaryKey
    }

    /// Structural equality (primary keys compared in order).
    public static func == (lhs: RealtimeChange, rhs: RealtimeChange) -> Bool {
        lhs.table == rhs.table && lhs.type == rhs.type && lhs.commitTimestamp == rhs.commitTimestamp
            && lhs.columns == rhs.columns && lhs.record == rhs.record && lhs.oldRecord == rhs.oldRecord
            && lhs.primaryKey.map(\.column) == rhs.primaryKey.map(\.column)
            && lhs.primaryKey.map(\.value) == rhs.primaryKey.map(\.value)
    }

    /// Hashes the identifying fields.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        hasher.combine(type)
        hasher.combine(commitTimestamp)
        hasher.combine(record)
        hasher.combine(oldRecord)
    }

    /// The `postgres_changes` payload `{"ids":[..],"data":{..}}` for the subscriptions `ids`.
    public func payload(ids: [Int64]) -> JSONValue {
        var data: [(key: String, value: JSONValue)] = [
            (key: "schema", value: .string(table.schema)),
            (key: "table", value: .string(table.table)),
            (key: "commit_timestamp", value: .string(commitTimestamp)),
            (key: "type", value: .string(type)),
            (key: "columns", value: .array(columns.map { ["name": .string($0.name), "type": .string($0.type)] })),
        ]
        if let record { data.append((key: "record", value: record)) }
        if let oldRecord { data.append((key: "old_record", value: oldRecord)) }
        data.append((key: "errors", value: .null))
        return .object([(key: "ids", value: .array(ids.map(JSONValue.int))), (key: "data", value: .object(data))])
    }
}

/// One `postgres_changes` binding of a joined channel.
public struct RealtimeSubscription: Sendable, Hashable {
    /// The id sent back in the join reply and in every matching change (`ids`).
    public var id: Int64
    /// `INSERT`, `UPDATE`, `DELETE` or `*`.
    public var event: String
    /// The schema (`*` for all).
    public var schema: String
    /// The table (`*` for all tables of the schema).
    public var table: String
    /// The parsed filter.
    public var filter: RealtimeFilter
    /// The binding exactly as the client sent it (echoed with `id` in the join reply).
    public var params: JSONValue

    /// Parses one binding object as supabase/realtime's `parse_subscription_params` does.
    public init(params: JSONValue) throws(RealtimeFilterError) {
        guard let object = params.objectValue else {
            throw RealtimeFilterError(message: "No subscription params provided. Please provide at least a `schema` or `table` to subscribe to: \(params.serialized)")
        }
        self.params = params
        self.id = Self.id(of: params)
        switch object["event"]?.stringValue?.uppercased() {
        case "INSERT"?: event = "INSERT"
        case "UPDATE"?: event = "UPDATE"
        case "DELETE"?: event = "DELETE"
        default: event = "*"
        }
        let schema = object["schema"]?.stringValue, table = object["table"]?.stringValue
        let filterText = object["filter"].flatMap { $0.isNull ? nil : $0 }
        if let filterText, filterText.stringValue == nil {
            throw RealtimeFilterError(message: "Error parsing `filter` params: filter must be a string")
        }
        switch (schema, table) {
        case let (schema?, table?):
            self.schema = schema
            self.table = table
        case let (schema?, nil) where filterText == nil:
            self.schema = schema
            self.table = "*"
        case let (nil, table?) where filterText == nil:
            self.schema = "public"
            self.table = table
        default:
            throw RealtimeFilterError(message: "No subscription params provided. Please provide at least a `schema` or `table` to subscribe to: \(params.serialized)")
        }
        filter = try RealtimeFilter.parse(filterText?.stringValue ?? "")
    }

    /// The id for a binding: a stable 27-bit hash of its parameters (like `:erlang.phash2`), never 0.
    public static func id(of params: JSONValue) -> Int64 {
        let canonical: JSONValue = params.objectValue.map { JSONValue.object($0) } ?? params
        var hash: UInt32 = 2_166_136_261
        for byte in canonical.serialized.utf8 {
            hash ^= UInt32(byte)
            hash = hash &* 16_777_619
        }
        let id = Int64(hash & 0x07FF_FFFF)
        return id == 0 ? 1 : id
    }

    /// Whether this binding names `table` (wildcards allowed).
    public func covers(_ table: RealtimeTableName) -> Bool {
        (schema == "*" || schema == table.schema) && (self.table == "*" || self.table == table.table)
    }

    /// Whether `change` should reach this binding (event, table and filter; DELETE filters ignore absent columns).
    public func matches(_ change: RealtimeChange) -> Bool {
        guard event == "*" || event == change.type, covers(change.table) else { return false }
        if change.type == "DELETE" {
            return filter.matches(change.oldRecord?.objectValue ?? [:], ignoringMissingColumns: true)
        }
        return filter.matches(change.record?.objectValue ?? [:])
    }

    /// The text the real server logs for a binding it cannot subscribe.
    public var logDescription: String {
        let filters = filter.conditions.map { "{\"\($0.column)\", \"\($0.op.rawValue)\", \"\($0.values.joined(separator: ","))\", \($0.negated)}" }
        return "event: \(event), schema: \(schema), table: \(table), filters: [\(filters.joined(separator: ", "))], select: nil"
    }
}
