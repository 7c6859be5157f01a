import SupabaseProtocol
import SwitchboardPostgres
import SwitchboardCore

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

    /// One catalog query: every plain function of `public` (no trigger, aggregate or procedure) with its input
    /// arguments, one row per argument (one row with NULLs for none), in argument order.
    static let functionSQL = """
        SELECT p.oid::text, p.proname, p.proretset::text, t.typtype::text, format_type(p.prorettype, NULL),
               p.provolatile::text, p.pronargs::text, p.pronargdefaults::text, a.name, format_type(a.type, NULL)
        FROM pg_catalog.pg_proc p
        JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
        JOIN pg_catalog.pg_type t ON t.oid = p.prorettype
        LEFT JOIN LATERAL (
            SELECT k.type, k.name, k.position
            FROM unnest(coalesce(p.proallargtypes, p.proargtypes::oid[]), p.proargnames,
                        coalesce(p.proargmodes, array_fill('i'::"char", ARRAY[p.pronargs::int])))
                 WITH ORDINALITY AS k(type, name, mode, position)
            WHERE k.mode IN ('i', 'b', 'v')
        ) a ON true
        WHERE n.nspname = $1 AND p.prokind = 'f' AND p.prorettype <> 'pg_catalog.trigger'::regtype
        ORDER BY p.oid, a.position
        """

    private let pool: PostgresPool
    private let tables = Locked<[String: PostgRESTTableSchema]?>(nil)
    private let functions = Locked<[String: [PostgRESTFunction]]>([:])

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

    /// The functions named `name` (overloads), reloading the cache once when there is none; empty when none exists.
    func functions(named name: String) async throws -> [PostgRESTFunction] {
        if tables.withLock({ $0 != nil }), let known = functions.withLock({ $0[name] }) { return known }
        try await reload()
        return functions.withLock { $0[name] ?? [] }
    }

    /// Every known table by name (what embedded resources are looked up in); empty before the first load.
    var knownTables: [String: PostgRESTTableSchema] {
        tables.withLock { $0 ?? [:] }
    }

    /// Reads the catalog again and replaces the cache.
    @discardableResult
    func reload() async throws -> [String: PostgRESTTableSchema] {
        let (result, keys, routines) = try await pool.withConnection { connection in
            (try connection.query(Self.introspectionSQL, [Self.schema]), try connection.query(Self.foreignKeySQL, [Self.schema]),
             try connection.query(Self.functionSQL, [Self.schema]))
        }
        var loaded = Self.tables(from: result)
        Self.addForeignKeys(from: keys, to: &loaded)
        let callable = Self.functions(from: routines)
        functions.withLock { $0 = callable }
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

    /// Groups the function rows of `functionSQL` into descriptions by name; functions with an unnamed input
    /// argument are left out (they cannot be called with named arguments).
    static func functions(from result: PostgresResult) -> [String: [PostgRESTFunction]] {
        var byOID: [(oid: String, function: PostgRESTFunction?, defaults: Int)] = []
        for row in result.rows {
            guard row.count == 10, let oid = row[0], let name = row[1], let typtype = row[3], let returnType = row[4] else { continue }
            if byOID.last?.oid != oid {
                let returns: PostgRESTFunction.Returns = if row[2] == "true" { .set } else if returnType == "void" { .void }
                    else if typtype == "c" || returnType == "record" { .row } else { .scalar }
                byOID.append((oid, PostgRESTFunction(schema: schema, name: name, arguments: [], returns: returns,
                                                     isVolatile: row[5] == "v"), Int(row[7] ?? "") ?? 0))
            }
            guard row[9] != nil else { continue }  // no arguments
            guard let argumentName = row[8], !argumentName.isEmpty, let type = row[9] else {
                byOID[byOID.count - 1].function = nil
                continue
            }
            byOID[byOID.count - 1].function?.arguments.append(.init(name: argumentName, type: type))
        }
        var functions: [String: [PostgRESTFunction]] = [:]
        for (_, candidate, defaults) in byOID {
            guard var function = candidate else { continue }
            // The last `pronargdefaults` input arguments have defaults.
            for index in function.arguments.indices where index >= function.arguments.count - defaults {
                function.arguments[index].hasDefault = true
            }
            functions[function.name, default: []].append(function)
        }
        return functions
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
