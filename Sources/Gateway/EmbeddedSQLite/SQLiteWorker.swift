import Dispatch

/// A connection and the one serial queue that uses it: async callers hand it work and wait for their
/// turn, on a thread of the queue's, not on one of the event loops'.
public final class SQLiteWorker: @unchecked Sendable {
    // @unchecked: `connection` is touched only on `queue`.
    private let connection: SQLiteConnection
    private let queue: DispatchQueue

    /// `prepare` runs on the new connection before any work (PRAGMAs, hooks).
    public init(
        path: String, label: String, readOnly: Bool = false, prepare: (SQLiteConnection) throws -> Void = { _ in }
    ) throws {
        connection = try SQLiteConnection(path: path, readOnly: readOnly)
        try prepare(connection)
        queue = DispatchQueue(label: label)
    }

    /// Runs `work` on the connection's queue.
    public func run<T: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async {
                continuation.resume(with: Result { try work(self.connection) })
            }
        }
    }

    /// Waits for work under way and closes the connection.
    public func close() throws {
        try queue.sync { try connection.close() }
    }
}
