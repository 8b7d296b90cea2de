import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Syncs a WAL-mode database's log (`<database>-wal`) on a thread of its own.
///
/// A writer on `synchronous = NORMAL` writes each commit to the log without syncing it; one
/// `fdatasync` of the log then makes every commit written before it durable, which is what
/// `synchronous = FULL` does inside each commit. Done apart, the disk's wait no longer holds the
/// writer: the next commit is written while this one syncs. (Checkpoints keep their own syncs: SQLite
/// syncs the log before copying it back and the database after, whichever the mode.)
public final class SQLiteLogSync: @unchecked Sendable {
    // @unchecked: `descriptor` is touched only on `queue`.
    public let path: String
    private let queue = DispatchQueue(label: "pushgate.store.sync")
    private var descriptor: Int32 = -1

    public init(database: String) {
        path = database + "-wal"
    }

    /// Every commit that returned before the call is on disk when this returns.
    public func sync() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            queue.async { continuation.resume(with: Result { try self.syncNow() }) }
        }
    }

    /// The inode of the log the last sync synced (0 before any): for tests.
    public var syncedFile: UInt64 {
        queue.sync {
            var open = stat()
            guard descriptor >= 0, fstat(descriptor, &open) == 0 else { return 0 }
            return UInt64(open.st_ino)
        }
    }

    public func close() {
        queue.sync {
            if descriptor >= 0 { closeFile(descriptor) }
            descriptor = -1
        }
    }

    private func syncNow() throws {
        // The log is opened at the first sync and again if the file at its path is no longer the one
        // open (SQLite removes the log only when the database's last connection closes; a sync of a
        // removed file would keep nothing).
        if descriptor >= 0 {
            var open = stat()
            var named = stat()
            if fstat(descriptor, &open) != 0 || stat(path, &named) != 0 || open.st_ino != named.st_ino
                || open.st_dev != named.st_dev
            {
                closeFile(descriptor)
                descriptor = -1
            }
        }
        if descriptor < 0 {
            descriptor = open(path, O_RDWR | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw SQLiteError("cannot open the log \(path) to sync it", code: errno, message: Self.message(errno))
            }
        }
        guard fdatasync(descriptor) == 0 else {
            throw SQLiteError("cannot sync the log \(path)", code: errno, message: Self.message(errno))
        }
    }

    private static func message(_ code: Int32) -> String { String(cString: strerror(code)) }
}

/// The C library's `close` (the class's own `close` hides it inside).
private func closeFile(_ descriptor: Int32) {
    _ = close(descriptor)
}
