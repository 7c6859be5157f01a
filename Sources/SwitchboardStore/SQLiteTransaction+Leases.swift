import SwitchboardSQLite
import Foundation
import SwitchboardCore

/// Leases (`leases`): which worker owns which pair.
extension SQLiteTransaction: LeaseTransaction {
    /// Takes the lease when it is free, expired at `now` or already held by `owner` (which renews it).
    func acquireLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try perform { connection in
            try connection.execute("""
                INSERT INTO leases (name, owner, expires_at) VALUES (?, ?, ?)
                ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
                WHERE leases.expires_at <= ? OR leases.owner = excluded.owner
                """, [name, owner, now.addingTimeInterval(ttl), now])
            return connection.changes > 0
        }
    }

    /// Extends the lease to `now + ttl` when `owner` still holds it (nobody took it over, even if it expired).
    func renewLease(_ name: String, owner: String, ttl: TimeInterval, now: Date) throws -> Bool {
        try perform { connection in
            try connection.execute("UPDATE leases SET expires_at = ? WHERE name = ? AND owner = ?",
                                   [now.addingTimeInterval(ttl), name, owner])
            return connection.changes > 0
        }
    }

    /// Gives the lease up when `owner` holds it; otherwise does nothing.
    func releaseLease(_ name: String, owner: String) throws {
        try perform { connection in
            try connection.execute("DELETE FROM leases WHERE name = ? AND owner = ?", [name, owner])
        }
    }

    /// The owner of an unexpired lease at `now`, or nil.
    func leaseOwner(_ name: String, now: Date) throws -> String? {
        try perform { connection in
            try connection.queryFirst("SELECT owner FROM leases WHERE name = ? AND expires_at > ?", [name, now]) {
                $0.string(at: 0)
            }
        }
    }
}
