/// The shape of one table as the SQL builder needs it: columns, primary key and foreign keys (from introspection).
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

    /// A foreign key of the table: its columns and the columns of the table they reference, pair by pair.
    public struct ForeignKey: Sendable, Equatable {
        /// Constraint name.
        public var name: String
        /// The referencing columns, in key order.
        public var columns: [String]
        /// The referenced table (same schema).
        public var referencedTable: String
        /// The referenced columns, in key order.
        public var referencedColumns: [String]

        /// Creates a foreign key description.
        public init(name: String, columns: [String], referencedTable: String, referencedColumns: [String]) {
            self.name = name
            self.columns = columns
            self.referencedTable = referencedTable
            self.referencedColumns = referencedColumns
        }
    }

    /// Schema (namespace) the table lives in.
    public var schema: String
    /// Table name.
    public var name: String
    /// Columns in table order.
    public var columns: [ColumnInfo]
    /// The table's foreign keys to tables of the same schema (what resource embedding follows).
    public var foreignKeys: [ForeignKey]

    /// Creates a table description.
    public init(schema: String = "public", name: String, columns: [ColumnInfo], foreignKeys: [ForeignKey] = []) {
        self.schema = schema
        self.name = name
        self.columns = columns
        self.foreignKeys = foreignKeys
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
