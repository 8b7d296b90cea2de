import VaporCSQLite

/// A prepared statement. Values are bound by position (`?1` is the first); text is copied by SQLite
/// (`SQLiteRowBinder` binds a row in place instead, for the inserts on the hot path).
public final class SQLiteStatement {
    let pointer: OpaquePointer
    public let sql: String

    init(_ pointer: OpaquePointer, sql: String) {
        self.pointer = pointer
        self.sql = sql
    }

    deinit {
        sqlite_nio_sqlite3_finalize(pointer)
    }

    /// Runs the statement with `values` to its end (rows it returns are skipped).
    public func run(_ values: any SQLiteBindable...) throws {
        try query(values) { _ in }
    }

    /// Runs the statement with `values`, calling `row` for each row it returns.
    public func query(_ values: any SQLiteBindable..., row: (SQLiteRow) throws -> Void) throws {
        try query(values, row: row)
    }

    /// The first row's first column, if there is a row (`SELECT MAX(…)`, `SELECT 1`).
    public func scalar<T: SQLiteColumnValue>(_ values: any SQLiteBindable..., as type: T.Type = T.self) throws -> T? {
        var value: T?
        try query(values) { row in
            if value == nil { value = row[0] }
        }
        return value
    }

    private func query(_ values: [any SQLiteBindable], row: (SQLiteRow) throws -> Void) throws {
        defer {
            sqlite_nio_sqlite3_reset(pointer)
            sqlite_nio_sqlite3_clear_bindings(pointer)
        }
        for (index, value) in values.enumerated() {
            let code = value.bind(to: pointer, at: Int32(index + 1))
            guard code == SQLITE_OK else {
                throw SQLiteError(sql, code: code, connection: sqlite_nio_sqlite3_db_handle(pointer))
            }
        }
        while true {
            let code = sqlite_nio_sqlite3_step(pointer)
            switch code {
            case SQLITE_ROW: try row(SQLiteRow(statement: pointer))
            case SQLITE_DONE: return
            default: throw SQLiteError(sql, code: code, connection: sqlite_nio_sqlite3_db_handle(pointer))
            }
        }
    }
}

/// The current row of a statement being stepped; read a column as the type it is assigned to
/// (`let id: String = row[0]`; an optional type reads NULL as nil).
public struct SQLiteRow {
    let statement: OpaquePointer

    public subscript<T: SQLiteColumnValue>(_ column: Int32) -> T {
        T(column: column, of: statement)
    }
}

/// A Swift value SQLite can take as a parameter.
public protocol SQLiteBindable {
    /// SQLite's result code.
    func bind(to statement: OpaquePointer, at index: Int32) -> Int32
}

/// A Swift value a column can be read as.
public protocol SQLiteColumnValue {
    init(column: Int32, of statement: OpaquePointer)
}

/// SQLite copies the bytes before the bind call returns.
private let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

extension Int64: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        sqlite_nio_sqlite3_bind_int64(statement, index, self)
    }
    public init(column: Int32, of statement: OpaquePointer) {
        self = sqlite_nio_sqlite3_column_int64(statement, column)
    }
}

extension Int: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        sqlite_nio_sqlite3_bind_int64(statement, index, Int64(self))
    }
    public init(column: Int32, of statement: OpaquePointer) {
        self = Int(sqlite_nio_sqlite3_column_int64(statement, column))
    }
}

extension Double: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        sqlite_nio_sqlite3_bind_double(statement, index, self)
    }
    public init(column: Int32, of statement: OpaquePointer) {
        self = sqlite_nio_sqlite3_column_double(statement, column)
    }
}

extension String: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        // An empty text is text, not NULL: bound from a literal, whose pointer is never nil.
        guard !isEmpty else { return sqlite_nio_sqlite3_bind_text(statement, index, "", 0, transient) }
        var text = self
        return text.withUTF8 { bytes in
            bytes.withMemoryRebound(to: CChar.self) { chars in
                sqlite_nio_sqlite3_bind_text(statement, index, chars.baseAddress, Int32(chars.count), transient)
            }
        }
    }
    public init(column: Int32, of statement: OpaquePointer) {
        let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
        guard let text = sqlite_nio_sqlite3_column_text(statement, column), count > 0 else {
            self = ""
            return
        }
        self = String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }
}

extension [UInt8]: SQLiteBindable, SQLiteColumnValue {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        // A zero-length blob, not NULL, for an empty array.
        guard !isEmpty else { return sqlite_nio_sqlite3_bind_zeroblob(statement, index, 0) }
        return withUnsafeBytes { bytes in
            sqlite_nio_sqlite3_bind_blob(statement, index, bytes.baseAddress, Int32(bytes.count), transient)
        }
    }
    public init(column: Int32, of statement: OpaquePointer) {
        let count = Int(sqlite_nio_sqlite3_column_bytes(statement, column))
        guard let bytes = sqlite_nio_sqlite3_column_blob(statement, column), count > 0 else {
            self = []
            return
        }
        self = Array(UnsafeRawBufferPointer(start: bytes, count: count))
    }
}

/// A column whose rows hold text or bytes (SQLite types values, not columns): read as whichever a row
/// holds.
public enum SQLiteTextOrBytes: SQLiteColumnValue, Equatable, Sendable {
    case text(String)
    case bytes([UInt8])

    public init(column: Int32, of statement: OpaquePointer) {
        self =
            sqlite_nio_sqlite3_column_type(statement, column) == SQLITE_BLOB
            ? .bytes([UInt8](column: column, of: statement)) : .text(String(column: column, of: statement))
    }
}

extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    public func bind(to statement: OpaquePointer, at index: Int32) -> Int32 {
        switch self {
        case .some(let value): value.bind(to: statement, at: index)
        case .none: sqlite_nio_sqlite3_bind_null(statement, index)
        }
    }
}

extension Optional: SQLiteColumnValue where Wrapped: SQLiteColumnValue {
    public init(column: Int32, of statement: OpaquePointer) {
        self =
            sqlite_nio_sqlite3_column_type(statement, column) == SQLITE_NULL
            ? nil : Wrapped(column: column, of: statement)
    }
}
