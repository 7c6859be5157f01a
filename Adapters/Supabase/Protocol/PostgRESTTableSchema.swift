/// The shape of one table as the SQL builder needs it (filled by introspection later).
public struct PostgRESTTableSchema: Sendable, Equatable {
    /// One column of the table.
    public struct ColumnInfo: Sendable, Equatable {
        /// Column name.
        public var name: String
        /// PostgreSQL type name as `format_type` prints it (`integer`, `text`, `timestamp with time zone`, ...).
        public var type: String
        /// Whether the column is part of the primary key.
        public var isPrimaryKey: Bool

        /// Creates a column description.
        public init(name: String, type: String, isPrimaryKey: Bool = false) {
            self.name = name
            self.type = type
            self.isPrimaryKey = isPrimaryKey
        }
    }

    /// Schema (namespace) the table lives in.
    public var schema: String
    /// Table name.
    public var name: String
    /// Columns in table order.
    public var columns: [ColumnInfo]

    /// Creates a table description.
    public init(schema: String = "public", name: String, columns: [ColumnInfo]) {
        self.schema = schema
        self.name = name
        self.columns = columns
    }

    /// The column named `name`, or nil.
    public func column(named name: String) -> ColumnInfo? {
        columns.first { $0.name == name }
    }

    /// Names of the primary-key columns, in table order.
    public var primaryKey: [String] {
        columns.filter(\.isPrimaryKey).map(\.name)
    }
}
