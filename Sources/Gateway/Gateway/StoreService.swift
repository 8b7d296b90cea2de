import Logging
import ProviderAPI
import PushModel
import PushStore
import ServiceLifecycle
import Synchronization
import WallClock

/// The store as a service: opens the backend (migrations, snapshot), runs the group-commit writer and
/// the pruning pass, and on shutdown (after the provider API and the device port, which are shut
/// down before it) commits what is left and closes the database.
public final class StoreService: Service, Sendable {
    public let backend: any StoreBackend
    public let writer: StoreWriter
    let settings: StoreSettings
    let logger: Logger
    let clock: @Sendable () -> UnixTime

    private struct State {
        var pruned = PruneResult(removed: 0, expired: 0)
    }

    /// The store's health as `/ready` reads it: what the last commit and the last check said (shared
    /// with the writer's callbacks).
    final class Health: Sendable {
        let log = Mutex(FailureLog())
        /// The last pruning pass (the periodic check) failed, and no commit succeeded since.
        let checkFailed = Mutex(false)
    }

    private let health: Health

    /// Commit failures, logged at once and then at most once per `interval` with how many there were
    /// since (a full disk fails every commit: one line per commit would flood the log); and the moment
    /// the store writes again.
    struct FailureLog {
        static let interval: Duration = .seconds(10)
        var failingSince: ContinuousClock.Instant?
        var lastLogged: ContinuousClock.Instant?
        var unlogged = 0
        var lostChanges = 0

        /// A failure: whether to log now, with the failures and lost changes since the last line.
        mutating func failed(changes: Int, at now: ContinuousClock.Instant) -> (failures: Int, changes: Int)? {
            if failingSince == nil { failingSince = now }
            unlogged += 1
            lostChanges += changes
            if let last = lastLogged, now - last < Self.interval { return nil }
            lastLogged = now
            defer {
                unlogged = 0
                lostChanges = 0
            }
            return (unlogged, lostChanges)
        }

        /// A commit succeeded: how long the store had been failing, if it was.
        mutating func succeeded(at now: ContinuousClock.Instant) -> Duration? {
            guard let since = failingSince else { return nil }
            self = FailureLog()
            return now - since
        }
    }

    private let state = Mutex(State())

    /// The backend the settings name, not yet opened.
    public static func backend(_ settings: StoreSettings) throws -> any StoreBackend {
        switch settings.backend {
        case .memory: return MemoryStore()
        case .sqlite: return try SQLiteStore(path: settings.sqlitePath, synchronous: settings.synchronous)
        case .postgres:
            do {
                return try PostgresStore(url: settings.postgresURL, nodeID: settings.nodeID)
            } catch let error as StoreError {
                throw ConfigError(key: ConfigKeys.postgresURL.name, source: nil, message: error.message)
            }
        }
    }

    public init(
        backend: any StoreBackend, settings: StoreSettings, logger: Logger,
        onCommit: @escaping @Sendable (_ changes: Int, _ elapsed: Duration) -> Void = { _, _ in },
        clock: @escaping @Sendable () -> UnixTime = UnixTime.now
    ) {
        self.backend = backend
        let health = Health()
        self.health = health
        let name = backend.kind
        self.writer = StoreWriter(
            backend: backend, waitLimit: settings.waitLimitSeconds > 0 ? .seconds(settings.waitLimitSeconds) : nil,
            unansweredWait: settings.unansweredWaitMilliseconds > 0
                ? .milliseconds(settings.unansweredWaitMilliseconds) : nil,
            onCommit: { changes, elapsed in
                onCommit(changes, elapsed)
                health.checkFailed.withLock { $0 = false }
                guard let failed = health.log.withLock({ $0.succeeded(at: .now) }) else { return }
                logger.notice(
                    "store writes again", metadata: ["backend": "\(name)", "failing_for": "\(failed)"])
            },
            onFailure: { error, changes in
                guard let (count, lost) = health.log.withLock({ $0.failed(changes: changes, at: .now) }) else {
                    return
                }
                logger.error(
                    "store cannot write: the requests of each failed commit are answered 500 InternalServerError, those that waited past store.wait_limit_seconds 503 ServiceUnavailable, and their pushes are never delivered; /ready says 503 (store) until a commit succeeds",
                    metadata: [
                        "backend": "\(name)", "error": "\(error)", "failed_commits": "\(count)",
                        "refused_changes": "\(lost)",
                    ])
            })
        self.settings = settings
        self.logger = logger
        self.clock = clock
    }

    /// Whether the database answered the last check and the last commit succeeded (`/ready`): a
    /// failed commit turns it false at once, the next one that succeeds true again.
    public var isHealthy: Bool { !health.checkFailed.withLock { $0 } && !writer.isFailing }
    /// Totals of the pruning passes so far.
    public var pruned: PruneResult { state.withLock { $0.pruned } }

    /// Runs the writer and the pruning pass; on graceful shutdown (after the provider API and the device
    /// port, which are shut down before it) commits what was enqueued and closes the database.
    public func run() async throws {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.writer.run() }
            // Ends on graceful shutdown (its sleep is cancelled then).
            group.addTask { await self.pruneLoop() }
            try? await gracefulShutdown()
            writer.finish()
        }
        do {
            try await backend.close()
        } catch {
            logger.error("store not closed cleanly", metadata: ["error": "\(error)"])
        }
        let figures = writer.figures
        logger.info(
            "store closed",
            metadata: [
                "commits": "\(figures.commits)", "changes": "\(figures.changes)", "failures": "\(figures.failures)",
            ])
    }

    private func pruneLoop() async {
        let every = settings.pruneSeconds
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(every)) }
            if Task.isCancelled || Task.isShuttingDownGracefully { return }
            let now = clock()
            var failed = false
            do {
                let result = try await backend.prune(
                    finishedBefore: now.adding(seconds: -settings.retentionSeconds), now: now)
                state.withLock {
                    $0.pruned.removed += result.removed
                    $0.pruned.expired += result.expired
                }
                if result.removed > 0 || result.expired > 0 {
                    logger.debug(
                        "store pruned", metadata: ["removed": "\(result.removed)", "expired": "\(result.expired)"])
                }
            } catch {
                failed = true
                logger.error("store pruning failed", metadata: ["error": "\(error)"])
            }
            health.checkFailed.withLock { $0 = failed }
        }
    }
}
