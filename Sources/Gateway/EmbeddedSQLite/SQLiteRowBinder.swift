import VaporCSQLite

/// The values of one statement run, bound without SQLite copying them: text and blobs are laid out in
/// one buffer, kept from run to run, and bound in place (`SQLITE_STATIC`: SQLite reads them where they
/// are until the reset) just before the step; integers and NULLs are bound at once. Bound with
/// `SQLITE_TRANSIENT`, every text value cost SQLite an allocation and a copy under its memory mutex:
/// eight per notification row.
public struct SQLiteRowBinder {
    private enum Kind {
        case text
        case blob
    }

    /// Kept, so that the statement outlives the binder.
    private let owner: SQLiteStatement
    private let statement: OpaquePointer
    /// Starts with one byte, so that its address is never nil: an empty text is bound as text, not NULL.
    private var bytes: [UInt8] = [0]
    private var spans: [(index: Int32, start: Int, count: Int, kind: Kind)] = []

    public init(_ statement: SQLiteStatement) {
        owner = statement
        self.statement = statement.pointer
        let parameters = Int(sqlite_nio_sqlite3_bind_parameter_count(statement.pointer))
        bytes.reserveCapacity(parameters * 32)
        spans.reserveCapacity(parameters)
    }

    public mutating func text(_ index: Int32, _ value: String?) {
        guard let value else { return null(index) }
        let start = bytes.count
        bytes.append(contentsOf: value.utf8)
        spans.append((index, start, bytes.count - start, .text))
    }

    /// Text written by `write` straight into the row's buffer.
    public mutating func text(_ index: Int32, writing write: (inout [UInt8]) -> Void) {
        span(index, .text, write)
    }

    public mutating func blob(_ index: Int32, _ value: [UInt8]) {
        span(index, .blob) { $0.append(contentsOf: value) }
    }

    /// Bytes written by `write` straight into the row's buffer.
    public mutating func blob(_ index: Int32, writing write: (inout [UInt8]) -> Void) {
        span(index, .blob, write)
    }

    private mutating func span(_ index: Int32, _ kind: Kind, _ write: (inout [UInt8]) -> Void) {
        let start = bytes.count
        write(&bytes)
        spans.append((index, start, bytes.count - start, kind))
    }

    public func integer(_ index: Int32, _ value: Int64?) {
        guard let value else { return null(index) }
        sqlite_nio_sqlite3_bind_int64(statement, index, value)
    }

    public func null(_ index: Int32) {
        sqlite_nio_sqlite3_bind_null(statement, index)
    }

    /// Binds the row's text and blobs, runs the statement once, and resets it for the next row (its
    /// bindings cleared, since they point into this buffer). Throws SQLite's error, after `what`.
    public mutating func step(_ what: @autoclosure () -> String) throws {
        let statement = self.statement
        let failure = bytes.withUnsafeBufferPointer { buffer -> SQLiteError? in
            let base = UnsafeRawPointer(buffer.baseAddress!)
            for span in spans {
                let pointer = base + span.start
                switch span.kind {
                case .text:
                    sqlite_nio_sqlite3_bind_text(
                        statement, span.index, pointer.assumingMemoryBound(to: CChar.self), Int32(span.count),
                        nil)  // SQLITE_STATIC
                case .blob:
                    // SQLITE_STATIC (nil): the bytes outlive the statement's step.
                    sqlite_nio_sqlite3_bind_blob(statement, span.index, pointer, Int32(span.count), nil)
                }
            }
            let code = sqlite_nio_sqlite3_step(statement)
            let failure =
                code == SQLITE_DONE
                ? nil
                : SQLiteError(what(), code: code, connection: sqlite_nio_sqlite3_db_handle(statement))
            sqlite_nio_sqlite3_reset(statement)
            sqlite_nio_sqlite3_clear_bindings(statement)
            return failure
        }
        bytes.removeSubrange(1...)
        spans.removeAll(keepingCapacity: true)
        if let failure { throw failure }
    }
}
