import Synchronization
import SupabaseProtocol
import SwitchboardPostgres

/// The tables and views of schema `public` as the REST gateway sees them, read from `pg_catalog`.
///
/// Loaded on first use with the pool's own (superuser) connection and cached; a request naming a table the cache
/// does not know reloads it once (a `--sql` file or a test may have created one since), like PostgREST's schema
/// cache reload, before the request is refused with `PGRST205`.
final class TableCatalog: Sendable {
    /// The schema every REST table lives in.
    static let schema = "public"

    /// One catalog query: every column of every table, view, materialized view and partitioned table in `public`.
    static let introspectionSQL = """
        SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod),
               coalesce(a.attnum = ANY (i.indkey), false)::text
        FROM pg_catalog.pg_class c
        JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        LEFT JOIN pg_catalog.pg_index i ON i.indrelid = c.oid AND i.indisprimary
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
        ORDER BY c.relname, a.attnum
        """

    private let pool: PostgresPool
    private let tables = Mutex<[String: PostgRESTTableSchema]?>(nil)

    /// A catalog reading through `pool`; nothing is loaded until the first lookup.
    init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The table or view named `name`, reloading the cache once when it is unknown; nil when it does not exist.
    func table(named name: String) async throws -> PostgRESTTableSchema? {
        if let cached = tables.withLock({ $0 }) {
            if let table = cached[name] { return table }
        }
        return try await reload()[name]
    }

    /// The names of every known table (for "Perhaps you meant" hints); empty before the first load.
    var knownTableNames: [String] {
        tables.withLock { $0.map { Array($0.keys) } ?? [] }
    }

    /// Reads the catalog again and replaces the cache.
    @discardableResult
    func reload() async throws -> [String: PostgRESTTableSchema] {
        let result = try await pool.withConnection { connection in
            try connection.query(Self.introspectionSQL, [Self.schema])
        }
        let loaded = Self.tables(from: result)
        tables.withLock { $0 = loaded }
        return loaded
    }

    /// Groups the introspection rows `(table, column, type, is_pk)` into table descriptions.
    static func tables(from result: PostgresResult) -> [String: PostgRESTTableSchema] {
        var loaded: [String: PostgRESTTableSchema] = [:]
        for row in result.rows {
            guard row.count == 4, let table = row[0], let column = row[1], let type = row[2] else { continue }
            let info = PostgRESTTableSchema.ColumnInfo(name: column, type: type, isPrimaryKey: row[3] == "true")
            loaded[table, default: PostgRESTTableSchema(schema: schema, name: table, columns: [])].columns.append(info)
        }
        return loaded
    }
}
