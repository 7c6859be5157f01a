import SwitchboardCore
import Foundation
import Synchronization
import SupabaseProtocol
import SwitchboardPostgres

/// The PostgreSQL side of realtime: a change-log table filled by row triggers, and a listener thread reading it.
///
/// Every table of schema `public` gets an AFTER INSERT/UPDATE/DELETE row trigger that writes the change to
/// `realtime.change_log` and notifies with an empty payload (a wake-up: one notification per transaction, and rows
/// larger than a NOTIFY payload still arrive whole).
/// The listener (its own connection) wakes on a notification or every second, reads every row after the last
/// one seen (plus recent gaps, for transactions that committed out of id order) and hands each batch read (up to
/// `batchLimit` new changes and the gaps found, in id order) to `dispatch`.
final class RealtimeChangeFeed: Sendable {
    /// The NOTIFY channel the trigger signals.
    static let channel = "switchboard_realtime"
    /// Log rows older than this are pruned.
    static let retention = "10 minutes"
    /// The most new log rows one read takes (gaps come on top).
    static let batchLimit = 200

    /// What the listener has seen: last id, recent gaps, column cache.
    private struct Progress {
        var lastSeen: Int64 = 0
        /// The newest id of the last batch `dispatch` returned from (`position`).
        var dispatched: Int64 = 0
        var gaps: [Int64: Date] = [:]
        var columns: [RealtimeTableName: [RealtimeColumn]] = [:] {
            didSet { positions = [:] }
        }
        /// Each table's column name → position, for `ordered` (built once per table, not per change).
        var positions: [RealtimeTableName: [String: Int]] = [:]
        var lastPrune = Date()
    }

    private let databaseURL: String
    private let logger: Logger
    private let dispatch: @Sendable ([RealtimeChange]) -> Void
    private let isWatched: @Sendable (RealtimeTableName) -> Bool
    /// Whether a read may leave out the records of a table (asked before each read; by default: nobody watches it).
    private let omitsRecords: @Sendable (RealtimeTableName) -> Bool
    private let stopped = Atomic<Bool>(false)
    private let finished = Atomic<Bool>(false)
    private let progress = Locked(Progress())

    /// A feed reading `databaseURL`, handing each batch of changes (in id order) to `dispatch` on the listener thread.
    ///
    /// Rows of a table for which `isWatched` is false when they are read are passed over (marked seen, never built
    /// or dispatched): a subscriber only receives changes read after its binding is in place, as with the real
    /// service, and catches up on earlier ones through REST.
    ///
    /// PostgreSQL does not even turn the records of such a table into text: each read leaves out the records of
    /// the tables `omitsRecords` names just before it (by default those `isWatched` is false for). A table watched
    /// by the time its rows are looked at (a binding added while the read ran) has its records read then.
    init(databaseURL: String, logger: Logger,
         isWatched: @escaping @Sendable (RealtimeTableName) -> Bool = { _ in true },
         omitsRecords: (@Sendable (RealtimeTableName) -> Bool)? = nil,
         dispatch: @escaping @Sendable ([RealtimeChange]) -> Void) {
        self.databaseURL = databaseURL
        self.logger = logger
        self.isWatched = isWatched
        self.omitsRecords = omitsRecords ?? { !isWatched($0) }
        self.dispatch = dispatch
    }

    /// Installs the schema and triggers (idempotent), reads the catalog and returns the subscribable tables.
    func install() throws -> Set<RealtimeTableName> {
        let connection = try PostgresConnection(url: databaseURL)
        defer { connection.close() }
        try connection.transaction { connection in
            try connection.execute("SET LOCAL client_min_messages = warning")
            try connection.execute("SELECT pg_advisory_xact_lock(7031843571)")
            try connection.execute(Self.setupSQL)
            try connection.execute("SELECT realtime.install_capture_triggers()")
        }
        let columns = try Self.loadColumns(connection)
        let last = try connection.query("SELECT coalesce(max(\"id\"), 0)::text FROM \"realtime\".\"change_log\"")
        progress.withLock { state in
            state.columns = columns
            state.lastSeen = last.rows.first?.first.flatMap { $0.flatMap { Int64($0) } } ?? 0
            state.dispatched = state.lastSeen
        }
        return Set(columns.keys)
    }

    /// The id of the newest change-log row whose batch `dispatch` has finished with.
    var position: Int64 { progress.withLock { $0.dispatched } }

    /// Starts the listener thread.
    func start() {
        let thread = Thread { [self] in
            self.run()
            self.finished.store(true, ordering: .sequentiallyConsistent)
        }
        thread.name = "switchboard.realtime-listener"
        thread.start()
    }

    /// Asks the listener to stop and waits (up to 5 s) until it has.
    func stop() async {
        stopped.store(true, ordering: .sequentiallyConsistent)
        for _ in 0..<100 where !finished.load(ordering: .sequentiallyConsistent) {
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    private var isStopped: Bool { stopped.load(ordering: .sequentiallyConsistent) }

    /// The listener loop: connect, LISTEN, catch up, wait; reconnect after any failure.
    private func run() {
        while !isStopped {
            var connection: PostgresConnection?
            do {
                let open = try PostgresConnection(url: databaseURL)
                connection = open
                try open.listen(channel: Self.channel)
                while !isStopped {
                    try catchUp(open)
                    _ = try open.notifications(timeout: .seconds(1))
                }
            } catch {
                logger.warning("realtime: change listener failed, reconnecting: \(error)")
                for _ in 0..<10 where !isStopped { Thread.sleep(forTimeInterval: 0.1) }
            }
            connection?.close()
        }
    }

    /// Reads and dispatches every change after the last one seen (and recent gaps), in id order, one batch per read.
    private func catchUp(_ connection: PostgresConnection) throws {
        while !isStopped {
            let (lastSeen, gaps, tables) = progress.withLock { state -> (Int64, [Int64], [RealtimeTableName]) in
                let now = Date()
                state.gaps = state.gaps.filter { now.timeIntervalSince($0.value) < 10 }
                return (state.lastSeen, state.gaps.keys.sorted(), Array(state.columns.keys))
            }
            let omitted = Set(tables.filter(omitsRecords))
            // The next `batchLimit` ids by the primary key (an index range scan, whatever the backlog) plus the
            // gaps, ordered by the bigint id. (Ordering by the output column `"id"::text` sorted as text, so a
            // batch crossing 99…9 → 100…0 was delivered out of order, and every read sorted the whole backlog.)
            // A row whose records are left out is not turned into text at all: only its id and table are read
            // (the test is made once per row, in the fenced subquery).
            let result = try connection.query("""
                SELECT "id"::text, "schema_name", "table_name", "change_type",
                       CASE WHEN "omitted" THEN NULL ELSE "record"::text END,
                       CASE WHEN "omitted" THEN NULL ELSE "old_record"::text END,
                       CASE WHEN "omitted" THEN NULL ELSE array_to_json("pk_columns")::text END,
                       CASE WHEN "omitted" THEN NULL ELSE \(Self.committedAtText) END
                FROM (SELECT *, \(Self.omittedTest) AS "omitted"
                      FROM ((SELECT * FROM "realtime"."change_log" WHERE "id" > $1::bigint ORDER BY "id" LIMIT \(Self.batchLimit))
                            UNION ALL
                            (SELECT * FROM "realtime"."change_log" WHERE "id" = ANY($2::bigint[]) AND "id" <= $1::bigint)) AS "read"
                      OFFSET 0) AS "batch"
                ORDER BY "batch"."id"
                """, [String(lastSeen), "{" + gaps.map(String.init).joined(separator: ",") + "}",
                      Self.arrayLiteral(omitted.map(\.schema)), Self.arrayLiteral(omitted.map(\.table))])
            var rows = result.rows
            var watched: [RealtimeTableName: Bool] = [:]  // asked once per table and read
            // Rows whose records were left out but whose table is watched now: their records are read after all.
            var missing: [Int64: Int] = [:]
            for (index, row) in rows.enumerated() where !omitted.isEmpty {
                guard row.count == 8, let schema = row[1], let tableName = row[2] else { continue }
                let table = RealtimeTableName(schema: schema, table: tableName)
                guard omitted.contains(table) else { continue }
                if watched[table] == nil { watched[table] = isWatched(table) }
                if watched[table] == true, let id = row[0].flatMap({ Int64($0) }) { missing[id] = index }
            }
            if !missing.isEmpty {
                let records = try connection.query("""
                    SELECT "id"::text, "record"::text, "old_record"::text, array_to_json("pk_columns")::text,
                           \(Self.committedAtText)
                    FROM "realtime"."change_log" WHERE "id" = ANY($1::bigint[])
                    """, ["{" + missing.keys.map(String.init).joined(separator: ",") + "}"])
                for record in records.rows where record.count == 5 {
                    guard let id = record[0].flatMap({ Int64($0) }), let index = missing[id] else { continue }
                    rows[index].replaceSubrange(4..<8, with: record[1..<5])
                }
            }
            var batch: [RealtimeChange] = []
            batch.reserveCapacity(rows.count)
            for row in rows {
                guard let id = row[0].flatMap({ Int64($0) }) else { continue }
                progress.withLock { state in
                    state.gaps[id] = nil
                    if id > state.lastSeen {
                        let now = Date()
                        var missing = state.lastSeen + 1
                        while missing < id && state.gaps.count < 1000 {
                            state.gaps[missing] = now
                            missing += 1
                        }
                        state.lastSeen = id
                    }
                }
                guard row.count == 8, let schema = row[1], let tableName = row[2] else { continue }
                let table = RealtimeTableName(schema: schema, table: tableName)
                if watched[table] == nil { watched[table] = isWatched(table) }
                guard watched[table] == true else { continue }
                do {
                    if let change = try change(from: row, table: table, connection: connection) { batch.append(change) }
                } catch {
                    // The rows before this one are already marked seen: hand them on before giving up.
                    if !batch.isEmpty { dispatch(batch) }
                    throw error
                }
            }
            if !batch.isEmpty { dispatch(batch) }
            progress.withLock { $0.dispatched = $0.lastSeen }
            try pruneIfDue(connection)
            if rows.count < Self.batchLimit { return }
        }
    }

    /// A log row's commit time as the text realtime sends (`YYYY-MM-DDTHH:MM:SS.mmmZ`).
    private static let committedAtText =
        "to_char(\"committed_at\" AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

    /// The read's test for a row whose records are left out: its (schema, table) pair is among parameters $3/$4.
    private static let omittedTest =
        "(\"schema_name\", \"table_name\") IN (SELECT * FROM unnest($3::text[], $4::text[]))"

    /// A PostgreSQL text-array literal of `values` (each quoted, `\\` and `"` escaped).
    static func arrayLiteral(_ values: [String]) -> String {
        "{" + values.map { value in
            var quoted = "\""
            for character in value {
                if character == "\\" || character == "\"" { quoted.append("\\") }
                quoted.append(character)
            }
            return quoted + "\""
        }.joined(separator: ",") + "}"
    }

    /// Builds a change from one log row (columns from the cache, reloaded on a miss).
    private func change(from row: [String?], table: RealtimeTableName, connection: PostgresConnection) throws -> RealtimeChange? {
        guard row.count == 8, let type = row[3] else { return nil }
        let cached = progress.withLock { state -> (columns: [RealtimeColumn], positions: [String: Int])? in
            guard let columns = state.columns[table] else { return nil }
            if let positions = state.positions[table] { return (columns, positions) }
            let positions = Self.positions(of: columns)
            state.positions[table] = positions
            return (columns, positions)
        }
        let tableColumns: [RealtimeColumn], positions: [String: Int]
        if let cached {
            (tableColumns, positions) = cached
        } else {
            let loaded = try Self.loadColumns(connection)
            progress.withLock { $0.columns = loaded }
            tableColumns = loaded[table] ?? []
            positions = Self.positions(of: tableColumns)
        }
        let record = row[4].flatMap { JSONValue.parseOrNil($0) }.map { Self.ordered($0, by: positions) }
        let old = row[5].flatMap { JSONValue.parseOrNil($0) }.map { Self.ordered($0, by: positions) }
        let keyColumns = row[6].flatMap { JSONValue.parseOrNil($0)?.arrayValue }?.compactMap(\.stringValue) ?? []
        let image = (record ?? old)?.objectValue ?? [:]
        let primaryKey = keyColumns.map { (column: $0, value: image[$0] ?? .null) }
        return RealtimeChange(table: table, type: type, commitTimestamp: row[7] ?? "", columns: tableColumns,
                              record: record, oldRecord: type == "INSERT" ? nil : old, primaryKey: primaryKey)
    }

    /// Deletes log rows past retention, at most every 30 s.
    private func pruneIfDue(_ connection: PostgresConnection) throws {
        let due = progress.withLock { state -> Bool in
            guard Date().timeIntervalSince(state.lastPrune) > 30 else { return false }
            state.lastPrune = Date()
            return true
        }
        if due {
            try connection.query("DELETE FROM \"realtime\".\"change_log\" WHERE \"committed_at\" < now() - $1::interval",
                                 [Self.retention])
        }
    }

    /// Each column's position by name (the first, should a name repeat).
    private static func positions(of columns: [RealtimeColumn]) -> [String: Int] {
        Dictionary(columns.enumerated().map { ($0.element.name, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }

    /// Object members reordered to the table's column order (jsonb sorts keys by length).
    private static func ordered(_ value: JSONValue, by position: [String: Int]) -> JSONValue {
        guard let members = value.members, !position.isEmpty else { return value }
        let keyed = members.enumerated().map { (rank: position[$0.element.key] ?? Int.max, offset: $0.offset, member: $0.element) }
        return .object(keyed.sorted { ($0.rank, $0.offset) < ($1.rank, $1.offset) }.map(\.member))
    }

    /// Columns (name, `pg_type.typname`) of every ordinary or partitioned table of schema `public`.
    static func loadColumns(_ connection: PostgresConnection) throws -> [RealtimeTableName: [RealtimeColumn]] {
        let result = try connection.query("""
            SELECT n.nspname, c.relname, a.attname, t.typname
            FROM pg_catalog.pg_class c
            JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
            JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
            WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
            ORDER BY c.relname, a.attnum
            """, ["public"])
        var out: [RealtimeTableName: [RealtimeColumn]] = [:]
        for row in result.rows {
            guard row.count == 4, let schema = row[0], let table = row[1], let name = row[2], let type = row[3] else { continue }
            out[RealtimeTableName(schema: schema, table: table), default: []].append(RealtimeColumn(name: name, type: type))
        }
        return out
    }

    /// The change log, the capture trigger function and the installer (all idempotent).
    static let setupSQL = """
        CREATE SCHEMA IF NOT EXISTS realtime;

        CREATE TABLE IF NOT EXISTS realtime.change_log (
          id bigserial PRIMARY KEY,
          schema_name text NOT NULL,
          table_name text NOT NULL,
          change_type text NOT NULL,
          record jsonb,
          old_record jsonb,
          pk_columns text[] NOT NULL DEFAULT '{}',
          committed_at timestamptz NOT NULL DEFAULT clock_timestamp()
        );
        CREATE INDEX IF NOT EXISTS change_log_committed_idx ON realtime.change_log (committed_at);
        REVOKE ALL ON realtime.change_log FROM PUBLIC;

        -- SECURITY DEFINER: writers (anon, authenticated) need no privilege on the log.
        -- TG_ARGV holds the primary-key columns; old_record keeps only them (REPLICA IDENTITY DEFAULT),
        -- or the whole old row when the table has no primary key.
        CREATE OR REPLACE FUNCTION realtime.capture_change() RETURNS trigger
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
        DECLARE
          new_row jsonb := CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE to_jsonb(NEW) END;
          old_row jsonb := CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE to_jsonb(OLD) END;
          old_key jsonb := NULL;
          key_columns text[] := coalesce(TG_ARGV, '{}'::text[]);
          key_column text;
        BEGIN
          IF old_row IS NOT NULL THEN
            IF cardinality(key_columns) = 0 THEN
              old_key := old_row;
            ELSE
              old_key := '{}'::jsonb;
              FOREACH key_column IN ARRAY key_columns LOOP
                old_key := old_key || jsonb_build_object(key_column, old_row -> key_column);
              END LOOP;
            END IF;
          END IF;
          INSERT INTO realtime.change_log (schema_name, table_name, change_type, record, old_record, pk_columns)
          VALUES (TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP, new_row, old_key, key_columns);
          -- A wake-up only (the listener reads the log after the last id it saw): one payload for every row, so
          -- PostgreSQL sends one notification per transaction, not one per row.
          PERFORM pg_notify('switchboard_realtime', '');
          RETURN NULL;
        END
        $$;

        CREATE OR REPLACE FUNCTION realtime.install_capture_triggers() RETURNS integer
        LANGUAGE plpgsql AS $$
        DECLARE
          target record;
          installed integer := 0;
        BEGIN
          FOR target IN
            SELECT c.oid, n.nspname, c.relname
            FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
          LOOP
            EXECUTE format(
              'CREATE OR REPLACE TRIGGER switchboard_realtime_capture AFTER INSERT OR UPDATE OR DELETE ON %I.%I '
              || 'FOR EACH ROW EXECUTE FUNCTION realtime.capture_change(%s)',
              target.nspname, target.relname,
              coalesce((
                SELECT string_agg(quote_literal(a.attname), ', ' ORDER BY array_position(i.indkey::int2[], a.attnum))
                FROM pg_catalog.pg_index i
                JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey::int2[])
                WHERE i.indrelid = target.oid AND i.indisprimary
              ), ''));
            installed := installed + 1;
          END LOOP;
          RETURN installed;
        END
        $$;
        """
}
