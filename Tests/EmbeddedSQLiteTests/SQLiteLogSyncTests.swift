import EmbeddedSQLite
import Foundation
import Testing

@Suite struct SQLiteLogSyncTests {
    /// A WAL-mode writer on `synchronous = NORMAL` leaves its commits in the log; the sync finds the log
    /// beside the database and syncs it, again after the log was removed and made anew (a sync of the
    /// removed file would keep nothing).
    @Test func syncsTheLogAndFollowsItWhenItIsMadeAnew() async throws {
        let path = SQLiteConnectionTests.temporaryPath()
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let sync = SQLiteLogSync(database: path)
        #expect(sync.path == path + "-wal")
        await #expect {
            try await sync.sync()
        } throws: { error in
            "\(error)".contains("cannot open the log \(path)-wal to sync it")
        }

        var db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA journal_mode = WAL")
        try db.execute("PRAGMA synchronous = NORMAL")
        try db.execute("CREATE TABLE t (i INTEGER)")
        try db.execute("INSERT INTO t VALUES (1)")
        try await sync.sync()
        // The last connection's close checkpoints and removes the log; a new one makes it anew.
        try db.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
        db = try SQLiteConnection(path: path)
        try db.execute("INSERT INTO t VALUES (2)")
        #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        try await sync.sync()
        #expect(sync.syncedFile == (try Self.identity(of: path + "-wal")))
        sync.close()
        try db.close()
    }

    static func identity(of path: String) throws -> UInt64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
    }
}
