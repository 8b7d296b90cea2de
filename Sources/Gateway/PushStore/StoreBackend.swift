import PushModel

/// Where the gateway keeps what must survive a restart. Three backends implement it (in memory,
/// SQLite, PostgreSQL) and one contract test suite runs against each.
public protocol StoreBackend: Sendable {
    /// `memory`, `sqlite` or `postgres`, for logs and `/ready`.
    var kind: String { get }
    /// Runs the migrations (refusing a database newer than this binary) and reads the snapshot; pending
    /// notifications past their expiry at `now` are marked expired and left out.
    func open(now: UnixTime) async throws -> StoreSnapshot
    /// Applies the batch in one transaction; when this returns, it is durable — or, for a backend whose
    /// `commitsAreDurable` is false, written, and made durable by the next `sync`.
    func commit(_ batch: StoreBatch) async throws
    /// Whether a commit that returned is durable (most backends). If not, the writer answers a commit's
    /// requests only after a `sync` that began after it returned, and commits the next batch meanwhile.
    var commitsAreDurable: Bool { get }
    /// Makes every commit that returned before the call durable (nothing for a backend whose commits
    /// already are). Throws if it cannot: those commits may or may not be on disk.
    func sync() async throws
    /// Removes finished notifications finished before `finishedBefore`; marks pending ones past their
    /// expiry at `now` as expired.
    func prune(finishedBefore: UnixTime, now: UnixTime) async throws -> PruneResult
    /// A stored notification by apns-id (lookups; the most recent if several teams used the id).
    func notification(_ id: APNsID) async throws -> StoredNotification?
    /// How many notifications are stored, by state.
    func counts() async throws -> [NotificationState: Int]
    /// Whether the database answers (`/ready`).
    func ping() async throws
    func close() async throws
    /// Runs what the backend needs in the background (PostgreSQL's connection pool) until the calling
    /// task is cancelled. Every use of the backend happens while this runs, as a child of the task group
    /// that uses it (`withRunning`); the embedded backends need nothing and return at once.
    func run() async
}

extension StoreBackend {
    public func run() async {}
    public var commitsAreDurable: Bool { true }
    public func sync() async throws {}

    /// Runs `body` while the backend's background work (`run`) runs beside it in one task group, and
    /// stops that work when `body` ends: nothing outlives the call.
    public func withRunning<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { background in
            background.addTask { await self.run() }
            defer { background.cancelAll() }
            return try await body()
        }
    }
}

/// A store that cannot be used, with a message for the operator.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    static func newerSchema(_ found: Int, where place: String) -> StoreError {
        StoreError(
            "the database \(place) has schema version \(found); this pushgate knows versions up to "
                + "\(Schema.latestVersion). Run a newer pushgate, or point store settings at another database.")
    }
}

/// The schema's numbered migrations: each backend has its statements for every version, and
/// `schema_version` records the highest applied.
public enum Schema {
    public static let latestVersion = 14
}
