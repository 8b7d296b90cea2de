import EmbeddedSQLite
import Foundation
import PushModel
import Testing

@testable import PushStore

/// Schema version 10 indexes finished_at only for notifications finished after they were received;
/// pruning finds those finished at receipt by walking the table in `seq` order
/// (`StoreContractTests.pruningLeavesWhatFinishedOrArrivedAfterTheCutoff` checks what it removes).
@Suite struct SQLitePruneTests {
    /// A database of version 9 gets the partial index at start, and keeps its notifications.
    @Test func aVersion9DatabaseGetsThePartialIndex() async throws {
        let (directory, path) = SQLiteKeysTests.place()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let old = try SQLiteConnection(path: path)
        for statement in SQLiteStore.migrations.prefix(9).joined() { try old.execute(statement) }
        try old.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        try old.execute("INSERT INTO schema_version (version) VALUES (9)")
        try old.close()
        #expect(try Self.indexDefinition(path)?.contains("finished_at <> received_at") == false)

        let store = try SQLiteStore(path: path)
        _ = try await store.open(now: StoreContractTests.t0)
        try await store.close()
        #expect(try Self.indexDefinition(path)?.contains("WHERE state <> 0 AND finished_at <> received_at") == true)
    }

    /// What each statement of a pass searches: the index for rows finished after receipt, the table by
    /// `seq` for the walk (never a scan of the whole table).
    @Test func aPassSearchesTheIndexAndWalksByRowid() async throws {
        let (directory, path) = SQLiteKeysTests.place()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: path)
        _ = try await store.open(now: StoreContractTests.t0)
        try await store.close()
        #expect(
            try Self.plan(path, SQLiteStore.pruneFinishedAfterReceipt).contains("USING INDEX notifications_finished"))
        for statement in [SQLiteStore.firstReceivedSince, SQLiteStore.pruneFinishedAtReceipt] {
            #expect(try Self.plan(path, statement).contains("USING INTEGER PRIMARY KEY (rowid>?"))
        }
    }

    static func indexDefinition(_ path: String) throws -> String? {
        let connection = try SQLiteConnection(path: path, readOnly: true)
        defer { try? connection.close() }
        return try connection.prepare("SELECT sql FROM sqlite_master WHERE name = 'notifications_finished'")
            .scalar(as: String.self)
    }

    /// SQLite's query plan for `statement`, its lines joined.
    static func plan(_ path: String, _ statement: String) throws -> String {
        let connection = try SQLiteConnection(path: path, readOnly: true)
        defer { try? connection.close() }
        var lines: [String] = []
        try connection.prepare("EXPLAIN QUERY PLAN " + statement).query { row in lines.append(row[3]) }
        return lines.joined(separator: "\n")
    }
}
