import Dispatch
import SwitchboardSQLite
import SwitchboardCore

/// Moves WAL checkpoints off the commit path: every `commitsPerCheckpoint` commits this object runs a PASSIVE
/// checkpoint on a connection and queue of its own. A passive checkpoint never blocks the writer, and the file
/// syncs it does (synchronous = NORMAL) no longer land inside some unlucky send. The WAL restarts from its top
/// once a checkpoint has caught up with the writer, which any pause in writing allows; under writes without
/// pause the store's own connection still checkpoints at `fallbackPages`, so the WAL stays bounded.
///
/// The first commit after the WAL was copied back in full restarts it, and SQLite syncs the new WAL header inside
/// that commit (a disk flush, 0.3–4 ms here). So when a checkpoint caught up, this object makes that first commit
/// itself at once: one row of `wal_restarts` is updated on its own connection and thread.
final class WALCheckpointer: Sendable {
    /// Commits between two checkpoints (SQLite's automatic checkpoint runs about every 1,000 WAL pages).
    static let commitsPerCheckpoint = 100
    /// The store connection's own automatic checkpoint threshold, in pages (16 MB of WAL at 4 kB pages).
    static let fallbackPages = 4_000

    private struct Counters {
        var commits = 0
        var isScheduled = false
        var isClosed = false
    }

    /// What the commit path touches: a few integers, never held during a checkpoint.
    private let counters = Locked(Counters())
    /// The checkpoint connection; used on `queue` only (and by `close` after draining it).
    private let connection: Locked<SQLiteConnection?>
    private let queue = DispatchQueue(label: "switchboard.store.checkpoint", qos: .utility)

    /// Opens the checkpoint connection on the (already configured, WAL-mode) database at `path`.
    init(path: String) throws {
        let connection = try SQLiteConnection(path: path)
        do {
            try connection.setBusyWait(milliseconds: 5000)
        } catch {
            connection.close()
            throw error
        }
        self.connection = Locked(connection)
    }

    /// Counts a commit and schedules a checkpoint when enough have piled up since the last one.
    func didCommit() {
        let schedule = counters.withLock { counters -> Bool in
            counters.commits += 1
            guard !counters.isClosed, !counters.isScheduled, counters.commits >= Self.commitsPerCheckpoint else { return false }
            counters.isScheduled = true
            counters.commits = 0
            return true
        }
        if schedule { queue.async { self.checkpoint() } }
    }

    /// Runs one passive checkpoint now (on the caller's thread), and restarts the WAL when it was copied back in
    /// full; a failure is left for the next one to retry.
    func checkpoint() {
        connection.withLock { connection in
            guard let connection else { return }
            // (busy, frames in the WAL, frames copied back)
            let result = try? connection.queryFirst("PRAGMA wal_checkpoint(PASSIVE)") { row in
                (row.int(at: 0), row.int(at: 1), row.int(at: 2))
            }
            guard let (busy, frames, copied) = result, busy == 0, frames > 0, copied == frames else { return }
            try? connection.execute("UPDATE wal_restarts SET count = count + 1 WHERE id = 1")
        }
        counters.withLock { $0.isScheduled = false }
    }

    /// Waits for a scheduled checkpoint and closes the connection; later commits are only counted.
    func close() {
        counters.withLock { $0.isClosed = true }
        queue.sync {}
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }
}
