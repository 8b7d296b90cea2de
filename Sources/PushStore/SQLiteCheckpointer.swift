import Dispatch
import GRDB
import GRDBSQLite
import Synchronization

/// Copies the WAL back into the database beside the writer, on a connection of its own.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit (and
/// every 200 waiting on it) waited the tens of milliseconds it takes to copy ~40 MB back and sync the
/// database. Here the writer's commit only reports the WAL's size (SQLite's WAL hook); past
/// `threshold` pages a checkpoint runs on another thread while the writer goes on. The WAL restarts
/// from its beginning only once a checkpoint has caught up with the writer, so past twice the threshold
/// the writer waits for the background checkpoint and then checkpoints itself, copying what that one
/// has not (usually little): the WAL stays within about twice the threshold.
final class SQLiteCheckpointer: Sendable {
    let path: String
    let threshold: Int32
    private let queue = DispatchQueue(label: "pushgate.store.checkpoint")
    private struct State {
        var connection: DatabaseQueue?
        var running = false
        var closed = false
    }
    private let state = Mutex(State())

    init(path: String, threshold: Int32) {
        self.path = path
        self.threshold = threshold
    }

    /// Replaces SQLite's automatic checkpoint on the writer's connection (the WAL hook is one per
    /// connection, so `wal_autocheckpoint` is off there). `self` outlives the connection: the pool's
    /// `prepareDatabase`, which calls this, holds it.
    func install(on connection: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            connection,
            { context, connection, _, frames in
                let checkpointer = Unmanaged<SQLiteCheckpointer>.fromOpaque(context!).takeUnretainedValue()
                checkpointer.walHas(frames, connection: connection)
                return SQLITE_OK
            }, context)
    }

    /// Called on the writer's thread after each commit, with the WAL's size in pages.
    private func walHas(_ frames: Int32, connection: OpaquePointer?) {
        guard frames >= threshold else { return }
        if frames >= 2 * threshold {
            // Two checkpoints cannot run at once: wait for the background one, then copy the rest here.
            // Only this thread adds frames, so this one catches up, and the WAL starts over at the next
            // commit.
            queue.sync {}
            _ = sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
            return
        }
        let start = state.withLock { state -> Bool in
            guard !state.running, !state.closed else { return false }
            state.running = true
            return true
        }
        guard start else { return }
        queue.async { self.checkpoint() }
    }

    private func checkpoint() {
        defer { state.withLock { $0.running = false } }
        do {
            let connection = try state.withLock { state -> DatabaseQueue? in
                guard !state.closed else { return nil }
                if state.connection == nil {
                    var configuration = Configuration()
                    configuration.label = "pushgate.store.checkpoint"
                    configuration.busyMode = .timeout(10)
                    state.connection = try DatabaseQueue(path: path, configuration: configuration)
                }
                return state.connection
            }
            try connection?.writeWithoutTransaction { db in _ = try db.checkpoint(.passive) }
        } catch {
            // The writer's own checkpoint (past twice the threshold) still bounds the WAL.
        }
    }

    /// Waits for a running checkpoint and closes the connection.
    func close() throws {
        let connection = queue.sync {
            state.withLock { state -> DatabaseQueue? in
                state.closed = true
                defer { state.connection = nil }
                return state.connection
            }
        }
        try connection?.close()
    }
}
