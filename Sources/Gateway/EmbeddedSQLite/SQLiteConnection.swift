import VaporCSQLite

/// One SQLite connection, on the SQLite that vapor/sqlite-nio compiles from its own sources (its C
/// target `VaporCSQLite`, whose functions are prefixed `sqlite_nio_`), so that building Pushgate needs
/// no system SQLite. Opened without SQLite's connection mutex: one thread at a time uses a connection,
/// which `SQLiteWorker` arranges.
public final class SQLiteConnection {
    public let path: String
    let handle: OpaquePointer
    /// Prepared once, kept for the connection's life (`SQLITE_PREPARE_PERSISTENT`).
    private var cache: [String: SQLiteStatement] = [:]
    private var closed = false

    public init(path: String, readOnly: Bool = false) throws {
        var handle: OpaquePointer?
        let flags =
            (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) | SQLITE_OPEN_NOMUTEX
        let code = sqlite_nio_sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let error = SQLiteError("cannot open \(path)", code: code, connection: handle)
            sqlite_nio_sqlite3_close_v2(handle)
            throw error
        }
        self.path = path
        self.handle = handle
        sqlite_nio_sqlite3_extended_result_codes(handle, 1)
    }

    deinit {
        if !closed { try? close() }
    }

    /// The version of the SQLite compiled in.
    public static var version: String { String(cString: sqlite_nio_sqlite3_libversion()) }

    /// How long a statement waits for another connection's lock before failing with SQLITE_BUSY.
    public func waitForLocks(milliseconds: Int32) {
        sqlite_nio_sqlite3_busy_timeout(handle, milliseconds)
    }

    /// Runs one or more statements that return no rows (DDL, PRAGMA settings, BEGIN/COMMIT).
    public func execute(_ sql: String) throws {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite_nio_sqlite3_exec(handle, sql, nil, nil, &message)
        guard code == SQLITE_OK else {
            let text = message.map { String(cString: $0) } ?? String(cString: sqlite_nio_sqlite3_errstr(code))
            sqlite_nio_sqlite3_free(message)
            throw SQLiteError(sql, code: code, message: text)
        }
    }

    /// The statement for `sql`, prepared on first use and kept.
    public func statement(_ sql: String) throws -> SQLiteStatement {
        if let statement = cache[sql] { return statement }
        let statement = try prepare(sql, persistent: true)
        cache[sql] = statement
        return statement
    }

    /// A statement used once (finalized when released).
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        try prepare(sql, persistent: false)
    }

    private func prepare(_ sql: String, persistent: Bool) throws -> SQLiteStatement {
        var pointer: OpaquePointer?
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        let code = sqlite_nio_sqlite3_prepare_v3(handle, sql, -1, flags, &pointer, nil)
        guard code == SQLITE_OK, let pointer else { throw SQLiteError(sql, code: code, connection: handle) }
        return SQLiteStatement(pointer, sql: sql)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE.
    public var changes: Int { Int(sqlite_nio_sqlite3_changes64(handle)) }

    /// `body` in one transaction: committed when it returns, rolled back when it throws. `immediate`
    /// takes the write lock at BEGIN, so that a writer never fails to upgrade a read lock halfway.
    public func transaction<T>(immediate: Bool, _ body: () throws -> T) throws -> T {
        try execute(immediate ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        let result: T
        do {
            result = try body()
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        do {
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
        return result
    }

    /// Finalizes the kept statements and closes. Statements still held elsewhere keep the connection
    /// open until they are released (`sqlite3_close_v2`).
    public func close() throws {
        guard !closed else { return }
        closed = true
        cache.removeAll()
        let code = sqlite_nio_sqlite3_close_v2(handle)
        guard code == SQLITE_OK else { throw SQLiteError("cannot close \(path)", code: code, connection: nil) }
    }
}
