import VaporCSQLite

/// What SQLite said, after what was being done: "cannot insert notification …: UNIQUE constraint failed".
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// SQLite's extended result code.
    public let code: Int32
    public let description: String

    public init(_ what: String, code: Int32, message: String) {
        self.code = code
        description = "\(what): \(message)"
    }

    /// The connection's last error, or SQLite's text for `code` when there is no connection.
    init(_ what: @autoclosure () -> String, code: Int32, connection: OpaquePointer?) {
        let message =
            connection.map { String(cString: sqlite_nio_sqlite3_errmsg($0)) }
            ?? String(cString: sqlite_nio_sqlite3_errstr(code))
        self.init(what(), code: code, message: message)
    }
}
