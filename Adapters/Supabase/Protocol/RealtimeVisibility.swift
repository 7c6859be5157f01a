import SwitchboardCore

/// Plans the row-level-security checks of one batch of changes: who must be checked for which change, and the SQL.
///
/// An INSERT or UPDATE reaches a non-service subscriber only when that subscriber can select the row by primary key.
/// Per identity, the changes of one table (same key columns and types) are checked by one query of at most
/// `chunkSize` changes; a change whose table has no primary key (or whose key types are unknown) gets its own query.
/// Every query answers with the rows `i` (an index into its `changes`) that are visible. No I/O happens here.
public enum RealtimeVisibility {
    /// The most changes one batched query checks.
    public static let defaultChunkSize = 200

    /// One identity and the changes (batch indices, ascending) it must be allowed to see.
    public struct Group: Sendable, Hashable {
        /// The subscriber's claims (checks run as them).
        public var claims: JWTClaims
        /// Indices into the batch, ascending and unique.
        public var changes: [Int]

        /// A group from its parts.
        public init(claims: JWTClaims, changes: [Int]) {
            self.claims = claims
            self.changes = changes
        }
    }

    /// One visibility query: its result rows hold one column, an index into `changes` of a visible change.
    public struct Query: Sendable, Hashable {
        /// The SQL text; every value is a parameter.
        public var sql: String
        /// The parameters, `nil` for SQL NULL.
        public var parameters: [String?]
        /// The batch indices the query checks, in the order of its `i` values.
        public var changes: [Int]

        /// A query from its parts.
        public init(sql: String, parameters: [String?], changes: [Int]) {
            self.sql = sql
            self.parameters = parameters
            self.changes = changes
        }

        /// The batch indices the result rows (first column `i`) name; rows out of range are ignored.
        public func visibleChanges(in rows: [[String?]]) -> [Int] {
            rows.compactMap { row in
                guard let text = row.first ?? nil, let position = Int(text), changes.indices.contains(position) else { return nil }
                return changes[position]
            }
        }
    }

    /// Whether delivering `change` to a subscriber with `claims` needs a check (INSERT/UPDATE, not the service role).
    public static func needsCheck(_ change: RealtimeChange, claims: JWTClaims) -> Bool {
        change.type != "DELETE" && claims.effectiveRole != .serviceRole
    }

    /// The identities (claims) that need checks, in order of first appearance, each with its batch indices.
    ///
    /// `targets[i]` are the subscribers of `changes[i]`; identities are told apart by their claims' JSON text.
    public static func groups(_ changes: [RealtimeChange], targets: [[RealtimeChangeTarget]]) -> [Group] {
        var groups: [Group] = []
        var position: [String: Int] = [:]
        for (index, change) in changes.enumerated() where index < targets.count {
            for target in targets[index] where needsCheck(change, claims: target.claims) {
                let key = target.claims.json
                if let at = position[key] {
                    if groups[at].changes.last != index { groups[at].changes.append(index) }
                } else {
                    position[key] = groups.count
                    groups.append(Group(claims: target.claims, changes: [index]))
                }
            }
        }
        return groups
    }

    /// The queries checking `indices` of `changes`: one per table (and key shape) and chunk, one per keyless change.
    ///
    /// Queries come in order of each group's first change; within a query the changes keep their order.
    public static func queries(for indices: [Int], of changes: [RealtimeChange],
                               chunkSize: Int = defaultChunkSize) -> [Query] {
        struct Shape: Hashable {
            var table: RealtimeTableName
            var keys: [RealtimeColumn]
        }
        var order: [Shape] = []
        var members: [Shape: [Int]] = [:]
        var singles: [(first: Int, query: Query)] = []
        for index in indices where changes.indices.contains(index) {
            let change = changes[index]
            guard let keys = keyColumns(of: change) else {
                singles.append((first: index, query: single(index, change)))
                continue
            }
            let shape = Shape(table: change.table, keys: keys)
            if members[shape] == nil { order.append(shape) }
            members[shape, default: []].append(index)
        }
        var batched: [(first: Int, query: Query)] = []
        let size = max(1, chunkSize)
        for shape in order {
            let group = members[shape] ?? []
            for start in stride(from: 0, to: group.count, by: size) {
                let chunk = Array(group[start..<min(start + size, group.count)])
                batched.append((first: chunk[0], query: batch(chunk, changes: changes, table: shape.table, keys: shape.keys)))
            }
        }
        return (batched + singles).sorted { $0.first < $1.first }.map(\.query)
    }

    /// The primary-key columns of `change` with their types, or nil without a key or when a type is unknown.
    static func keyColumns(of change: RealtimeChange) -> [RealtimeColumn]? {
        guard !change.primaryKey.isEmpty else { return nil }
        var keys: [RealtimeColumn] = []
        for key in change.primaryKey {
            guard let column = change.columns.first(where: { $0.name == key.column }), !column.type.isEmpty else { return nil }
            keys.append(column)
        }
        return keys
    }

    /// One query for many changes of one table: a VALUES list of typed keys, kept where the row exists and is visible.
    static func batch(_ indices: [Int], changes: [RealtimeChange], table: RealtimeTableName, keys: [RealtimeColumn]) -> Query {
        var parameters: [String?] = []
        parameters.reserveCapacity(indices.count * keys.count)
        var rows: [String] = []
        rows.reserveCapacity(indices.count)
        for (position, index) in indices.enumerated() {
            let change = changes[index]
            var cells = [String(position)]
            for (column, key) in zip(keys, change.primaryKey) {
                parameters.append(key.value.parameterText)
                cells.append("$\(parameters.count)::" + PostgRESTSQLBuilder.quoteIdentifier(column.type))
            }
            rows.append("(" + cells.joined(separator: ", ") + ")")
        }
        let aliases = (["i"] + keys.indices.map { "k\($0)" }).joined(separator: ", ")
        let conditions = keys.enumerated().map { offset, column in
            "\"row\".\(PostgRESTSQLBuilder.quoteIdentifier(column.name)) = v.k\(offset)"
        }.joined(separator: " AND ")
        // A LATERAL probe per key (LIMIT 1 keeps it a parameterised index scan): as `WHERE EXISTS`, the planner,
        // which cannot estimate the policy's filter, joined the keys to a sequential scan of the whole table, so
        // every batch of changes cost a pass over, say, every message ever sent.
        let sql = "SELECT v.i FROM (VALUES " + rows.joined(separator: ", ") + ") AS v(\(aliases)) CROSS JOIN LATERAL (SELECT 1 FROM "
            + qualified(table) + " AS \"row\" WHERE " + conditions + " LIMIT 1) AS found"
        return Query(sql: sql, parameters: parameters, changes: indices)
    }

    /// One query for one change: by primary key, or by the whole row image when the table has none.
    public static func single(_ index: Int, _ change: RealtimeChange) -> Query {
        var sql = "SELECT 0 FROM " + qualified(change.table) + " AS \"row\" WHERE "
        let parameters: [String?]
        if change.primaryKey.isEmpty {
            // No primary key: match the whole row image.
            sql += "to_jsonb(\"row\".*) = $1::jsonb"
            parameters = [change.record?.serialized ?? "null"]
        } else {
            sql += change.primaryKey.enumerated().map { offset, key in
                "\"row\".\(PostgRESTSQLBuilder.quoteIdentifier(key.column)) = $\(offset + 1)"
            }.joined(separator: " AND ")
            parameters = change.primaryKey.map { $0.value.parameterText }
        }
        return Query(sql: sql + " LIMIT 1", parameters: parameters, changes: [index])
    }

    /// `"schema"."table"`.
    private static func qualified(_ table: RealtimeTableName) -> String {
        PostgRESTSQLBuilder.quoteIdentifier(table.schema) + "." + PostgRESTSQLBuilder.quoteIdentifier(table.table)
    }
}
