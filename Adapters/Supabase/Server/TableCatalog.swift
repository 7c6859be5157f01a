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

    /// One catalog query: every foreign key between two tables of `public`, one row per column pair, in key order.
    static let foreignKeySQL = """
        SELECT c.conname, src.relname, a.attname, dst.relname, fa.attname
        FROM pg_catalog.pg_constraint c
        JOIN pg_catalog.pg_class src ON src.oid = c.conrelid
        JOIN pg_catalog.pg_namespace sn ON sn.oid = src.relnamespace
        JOIN pg_catalog.pg_class dst ON dst.oid = c.confrelid
        JOIN pg_catalog.pg_namespace dn ON dn.oid = dst.relnamespace
        CROSS JOIN LATERAL unnest(c.conkey, c.confkey) WITH ORDINALITY AS k(attnum, fattnum, position)
        JOIN pg_catalog.pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.attnum
        JOIN pg_catalog.pg_attribute fa ON fa.attrelid = c.confrelid AND fa.attnum = k.fattnum
        WHERE c.contype = 'f' AND sn.nspname = $1 AND dn.nspname = $1
        ORDER BY src.relname, c.conname, k.position
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

    /// Every known table by name (what embedded resources are looked up in); empty before the first load.
    var knownTables: [String: PostgRESTTableSchema] {
        tables.withLock { $0 ?? [:] }
    }

    /// Reads the catalog again and replaces the cache.
    @discardableResult
    func reload() async throws -> [String: PostgRESTTableSchema] {
        let (result, keys) = try await pool.withConnection { connection in
            (try connection.query(Self.introspectionSQL, [Self.schema]), try connection.query(Self.foreignKeySQL, [Self.schema]))
        }
        var loaded = Self.tables(from: result)
        Self.addForeignKeys(from: keys, to: &loaded)
        tables.withLock { $0 = loaded }
        return loaded
    }

    /// Adds the foreign-key rows `(constraint, table, column, referenced table, referenced column)` to `tables`.
    static func addForeignKeys(from result: PostgresResult, to tables: inout [String: PostgRESTTableSchema]) {
        for row in result.rows {
            guard row.count == 5, let name = row[0], let table = row[1], let column = row[2], let target = row[3],
                  let targetColumn = row[4], tables[table] != nil else { continue }
            if let last = tables[table]!.foreignKeys.indices.last, tables[table]!.foreignKeys[last].name == name {
                tables[table]!.foreignKeys[last].columns.append(column)
                tables[table]!.foreignKeys[last].referencedColumns.append(targetColumn)
            } else {
                tables[table]!.foreignKeys.append(.init(name: name, columns: [column], referencedTable: target,
                                                        referencedColumns: [targetColumn]))
            }
        }
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
