import EmbeddedSQLite
import Foundation
import Testing

@Suite struct SQLiteConnectionTests {
    static func temporaryPath() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushgate-sqlite-\(UUID().uuidString.prefix(8)).sqlite"
        )
        .path
    }

    @Test func valuesComeBackAsTheyWentInEmptyIsNotNull() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB)")
        let insert = try db.statement("INSERT INTO t VALUES (?, ?, ?, ?)")
        try insert.run(Int64.max, 1.5, "", [UInt8]())
        try insert.run(Int64?.none, Double?.none, String?.none, [UInt8]?.none)
        try insert.run(-7, 0.0, "zürich ✓", [0, 255, 0])
        var rows: [String] = []
        try db.prepare("SELECT i, r, s, b FROM t ORDER BY rowid").query { row in
            let i: Int64? = row[0]
            let r: Double? = row[1]
            let s: String? = row[2]
            let b: [UInt8]? = row[3]
            rows.append(
                "\(i.map(String.init) ?? "nil") \(r.map { "\($0)" } ?? "nil") \(s.map { "'\($0)'" } ?? "nil") \(b.map { "\($0)" } ?? "nil")"
            )
        }
        #expect(rows == ["\(Int64.max) 1.5 '' []", "nil nil nil nil", "-7 0.0 'zürich ✓' [0, 255, 0]"])
        #expect(try db.prepare("SELECT COUNT(*) FROM t WHERE s IS NULL").scalar(as: Int.self) == 1)
        #expect(try db.prepare("SELECT COUNT(*) FROM t WHERE b IS NULL").scalar(as: Int.self) == 1)
        try db.close()
    }

    @Test func aFailedStatementNamesItAndSQLitesReason() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (k TEXT PRIMARY KEY)")
        let insert = try db.statement("INSERT INTO t VALUES (?)")
        try insert.run("a")
        #expect {
            try insert.run("a")
        } throws: { error in
            "\(error)".contains("INSERT INTO t VALUES (?)") && "\(error)".contains("UNIQUE constraint failed")
        }
        // The statement is reset after a failure and runs again.
        try insert.run("b")
        #expect(throws: SQLiteError.self) { try db.execute("SELEC 1") }
        #expect(throws: SQLiteError.self) { try db.prepare("SELECT nothing FROM nowhere") }
        #expect(throws: SQLiteError.self) { try SQLiteConnection(path: "/nonexistent/dir/x.sqlite") }
        try db.close()
    }

    @Test func aTransactionIsRolledBackWhenItsBodyThrows() throws {
        struct Stop: Error {}
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (k INTEGER)")
        #expect(throws: Stop.self) {
            try db.transaction(immediate: true) {
                try db.statement("INSERT INTO t VALUES (?)").run(1)
                throw Stop()
            }
        }
        try db.transaction(immediate: true) { try db.statement("INSERT INTO t VALUES (?)").run(2) }
        #expect(try db.prepare("SELECT SUM(k) FROM t").scalar(as: Int.self) == 2)
        #expect(db.changes == 1)
        try db.close()
    }

    @Test func rowsBoundInPlaceAreStoredAsBound() throws {
        let path = Self.temporaryPath()
        defer { try? FileManager.default.removeItem(atPath: path) }
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (a TEXT, b BLOB, c INTEGER, d TEXT)")
        var rows = SQLiteRowBinder(try db.statement("INSERT INTO t VALUES (?, ?, ?, ?), (?, ?, ?, ?)"))
        for base: Int32 in [0, 4] {
            rows.text(base + 1, base == 0 ? "" : "x")
            rows.blob(base + 2, [1, 2])
            rows.integer(base + 3, base == 0 ? nil : 3)
            rows.text(base + 4) { $0.append(contentsOf: "w\(base)".utf8) }
        }
        try rows.step("insert")
        var seen: [String] = []
        try db.prepare("SELECT a, b, c, d FROM t ORDER BY rowid").query { row in
            let a: String? = row[0]
            let b: [UInt8] = row[1]
            let c: Int64? = row[2]
            let d: String = row[3]
            seen.append("\(a.map { "'\($0)'" } ?? "nil") \(b) \(c.map(String.init) ?? "nil") \(d)")
        }
        #expect(seen == ["'' [1, 2] nil w0", "'x' [1, 2] 3 w4"])
        try db.close()
    }

    @Test func theSQLiteIsTheOneCompiledIn() {
        #expect(SQLiteConnection.version.hasPrefix("3."))
    }
}
