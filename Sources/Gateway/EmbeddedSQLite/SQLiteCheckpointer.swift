import Dispatch
import Synchronization
import VaporCSQLite

/// Copies the WAL back into the database beside the writer, on a connection of its own.
///
/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold: that commit (and
/// every 200 waiting on it) waited the tens of milliseconds it takes to copy ~40 MB back and sync the
/// database. Here the writer's commit only reports the WAL's size (SQLite's WAL hook); past
/// `threshold` pages a checkpoint runs on another thread while the writer goes on. The WAL restarts
/// from its beginning only once a checkpoint has caught up with the writer, so past twice the threshold
/// the writer waits for the background checkpoint and then checkpoints itself, copying what that one
/// has not (usually little): the WAL stays within about twice the threshold.
public final class SQLiteCheckpointer: @unchecked Sendable {
    // @unchecked: the checkpoint connection is opened, used and closed on `queue` only.
    public let path: String
    public let threshold: Int32
    private let queue = DispatchQueue(label: "pushgate.store.checkpoint")
    private struct State {
        var running = false
        var closed = false
    }
    private let state = Mutex(State())
    private var connection: SQLiteConnection?

    public init(path: String, threshold: Int32) {
        self.path = path
        self.threshold = threshold
    }

    /// Replaces SQLite's automatic checkpoint on the writer's connection (the WAL hook is one per
    /// connection). The caller keeps `self` for as long as the connection is open.
    public func install(on writer: SQLiteConnection) throws {
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite_nio_sqlite3_wal_hook(
            writer.handle,
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
            _ = sqlite_nio_sqlite3_wal_checkpoint_v2(connection, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
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
        guard !state.withLock({ $0.closed }) else { return }
        if connection == nil {
            connection = try? SQLiteConnection(path: path)
            connection?.waitForLocks(milliseconds: 10_000)
        }
        // Failing (not opened, or busy past the wait) leaves it to the writer's own checkpoint, past
        // twice the threshold, to bound the WAL.
        guard let connection else { return }
        _ = sqlite_nio_sqlite3_wal_checkpoint_v2(connection.handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
    }

    /// Waits for a running checkpoint and closes the connection.
    public func close() throws {
        state.withLock { $0.closed = true }
        try queue.sync {
            defer { connection = nil }
            try connection?.close()
        }
    }
}
