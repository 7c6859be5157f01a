import SwitchboardSQLite
import Foundation

/// Named schema migrations, registered in order; the names already applied are kept in `schema_migrations`.
///
/// Each pending migration runs in its own IMMEDIATE transaction together with the row recording it, so a
/// crash leaves the database either before or after a migration, never half-way.
struct Migrations: Sendable {
    /// One registered migration.
    struct Migration: Sendable {
        /// The stable name recorded once applied.
        let name: String
        /// The schema change.
        let apply: @Sendable (SQLiteConnection) throws -> Void
    }

    /// The table recording applied migration names.
    static let tableName = "schema_migrations"

    /// The migrations in registration order.
    private(set) var migrations: [Migration] = []

    /// Creates an empty list of migrations.
    init() {}

    /// The names of every registered migration, in order.
    var names: [String] { migrations.map(\.name) }

    /// Appends a migration; names must be unique.
    mutating func register(_ name: String, _ apply: @escaping @Sendable (SQLiteConnection) throws -> Void) {
        precondition(!migrations.contains { $0.name == name }, "migration \(name) registered twice")
        migrations.append(Migration(name: name, apply: apply))
    }

    /// Whether the database has a `schema_migrations` table.
    static func hasMigrationTable(_ connection: SQLiteConnection) throws -> Bool {
        try connection.queryFirst("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", [tableName]) { _ in
            true
        } ?? false
    }

    /// The migration names recorded in `connection`, in the order they were applied.
    static func appliedNames(in connection: SQLiteConnection) throws -> [String] {
        guard try hasMigrationTable(connection) else { return [] }
        return try connection.query("SELECT name FROM schema_migrations ORDER BY applied_order") { $0.string(at: 0) }
    }

    /// Recorded names that this build does not know (the file was written by a newer version).
    func unknownNames(in connection: SQLiteConnection) throws -> [String] {
        let known = Set(names)
        return try Self.appliedNames(in: connection).filter { !known.contains($0) }
    }

    /// Applies every migration not yet recorded, each in its own transaction; returns the names applied now.
    func migrate(_ connection: SQLiteConnection) throws -> [String] {
        var applied = Set(try Self.appliedNames(in: connection))
        var appliedNow: [String] = []
        for migration in migrations where !applied.contains(migration.name) {
            try connection.executeScript("BEGIN IMMEDIATE")
            do {
                try connection.executeScript("""
                    CREATE TABLE IF NOT EXISTS schema_migrations (
                        name TEXT PRIMARY KEY NOT NULL,
                        applied_order INTEGER NOT NULL,
                        applied_at INTEGER NOT NULL
                    ) STRICT
                    """)
                // Another connection may have migrated between our read and our lock: read again under the lock.
                applied = Set(try Self.appliedNames(in: connection))
                if applied.contains(migration.name) {
                    try connection.executeScript("COMMIT")
                    continue
                }
                try migration.apply(connection)
                try connection.execute("""
                    INSERT INTO schema_migrations (name, applied_order, applied_at)
                    VALUES (?, (SELECT COALESCE(MAX(applied_order), 0) + 1 FROM schema_migrations), ?)
                    """, [migration.name, Date()])
                try connection.executeScript("COMMIT")
            } catch {
                if !connection.isAutocommit { try? connection.executeScript("ROLLBACK") }
                throw error
            }
            applied.insert(migration.name)
            appliedNow.append(migration.name)
        }
        return appliedNow
    }
}
