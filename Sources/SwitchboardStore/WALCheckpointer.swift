import Dispatch
import Synchronization
import SwitchboardSQLite

/// Moves WAL checkpoints off the commit path: the store's own connection never checkpoints (automatic
/// checkpoints are off there); every `commitsPerCheckpoint` commits this object runs a PASSIVE checkpoint on a
/// connection and queue of its own. A passive checkpoint never blocks the writer, and the file syncs it does
/// (synchronous = NORMAL) no longer land inside some unlucky send.
final class WALCheckpointer: Sendable {
    /// Commits between two checkpoints (SQLite's automatic checkpoint runs about every 1,000 WAL pages).
    static let commitsPerCheckpoint = 100

    private struct State {
        var connection: SQLiteConnection?
        var commits = 0
        var isScheduled = false
    }

    private let state: Mutex<State>
    private let queue = DispatchQueue(label: "switchboard.store.checkpoint", qos: .utility)

    /// Opens the checkpoint connection on the (already configured, WAL-mode) database at `path`.
    init(path: String) throws {
        let connection = try SQLiteConnection(path: path)
        do {
            try connection.setBusyTimeout(milliseconds: 5000)
        } catch {
            connection.close()
            throw error
        }
        state = Mutex(State(connection: connection))
    }

    /// Counts a commit and schedules a checkpoint when enough have piled up since the last one.
    func didCommit() {
        let schedule = state.withLock { state -> Bool in
            state.commits += 1
            guard state.connection != nil, !state.isScheduled, state.commits >= Self.commitsPerCheckpoint else { return false }
            state.isScheduled = true
            state.commits = 0
            return true
        }
        if schedule { queue.async { self.checkpoint() } }
    }

    /// Runs one passive checkpoint now (on the caller's thread); a failure is left for the next one to retry.
    func checkpoint() {
        state.withLock { state in
            defer { state.isScheduled = false }
            _ = try? state.connection?.queryFirst("PRAGMA wal_checkpoint(PASSIVE)") { $0.int(at: 0) }
        }
    }

    /// Waits for a scheduled checkpoint and closes the connection; later commits are only counted.
    func close() {
        queue.sync {}
        state.withLock { state in
            state.connection?.close()
            state.connection = nil
        }
    }
}
