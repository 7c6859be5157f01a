/// The rows and status of one executed statement, every value in text form.
public struct PostgresResult: Sendable, Hashable {
    /// The column names, in result order.
    public let columns: [String]
    /// The rows; `nil` stands for SQL NULL.
    public let rows: [[String?]]
    /// The number of rows inserted, updated, deleted, selected or copied (PQcmdTuples), 0 when not applicable.
    public let affectedRows: Int

    /// Creates a result from its parts.
    public init(columns: [String], rows: [[String?]], affectedRows: Int) {
        self.columns = columns
        self.rows = rows
        self.affectedRows = affectedRows
    }

    /// The value of the named column in the given row, `nil` for NULL or an unknown column.
    public func value(row: Int, column name: String) -> String? {
        guard rows.indices.contains(row), let index = columns.firstIndex(of: name) else { return nil }
        return rows[row][index]
    }
}

/// A message delivered by NOTIFY on a channel this connection listens to.
public struct PostgresNotification: Sendable, Hashable {
    /// The channel name.
    public let channel: String
    /// The payload text, empty when none was sent.
    public let payload: String
    /// The process id of the notifying server backend.
    public let processID: Int32

    /// Creates a notification from its parts.
    public init(channel: String, payload: String, processID: Int32) {
        self.channel = channel
        self.payload = payload
        self.processID = processID
    }
}
