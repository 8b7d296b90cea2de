import Logging
import ProviderAPI
import PushIntake
import PushModel
import PushStore
import ServiceLifecycle
import Synchronization

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
        var writing: Task<Void, Never>?
        var pruning: Task<Void, Never>?
        var healthy = true
        var pruned = PruneResult(removed: 0, expired: 0)
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
                throw ConfigError(key: "store.postgres.url", source: nil, message: error.message)
            }
        }
    }

    public init(
        backend: any StoreBackend, settings: StoreSettings, logger: Logger,
        onCommit: @escaping @Sendable (_ changes: Int, _ elapsed: Duration) -> Void = { _, _ in },
        clock: @escaping @Sendable () -> UnixTime = UnixTime.now
    ) {
        self.backend = backend
        self.writer = StoreWriter(backend: backend, onCommit: onCommit)
        self.settings = settings
        self.logger = logger
        self.clock = clock
    }

    /// Whether the database answered the last check and the last commit succeeded (`/ready`).
    public var isHealthy: Bool { state.withLock { $0.healthy } }
    /// Totals of the pruning passes so far.
    public var pruned: PruneResult { state.withLock { $0.pruned } }

    /// Starts the writer and the pruning pass.
    public func start() {
        let writer = self.writer
        let writing = Task { await writer.run() }
        let pruning = Task { [self] in await self.pruneLoop() }
        state.withLock {
            $0.writing = writing
            $0.pruning = pruning
        }
    }

    public func run() async throws {
        start()
        try? await gracefulShutdown()
        await shutdown()
    }

    /// Commits what was enqueued and closes the database.
    public func shutdown() async {
        let (writing, pruning) = state.withLock { ($0.writing, $0.pruning) }
        pruning?.cancel()
        await pruning?.value
        writer.finish()
        await writing?.value
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
        var failuresSeen = 0
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(settings.pruneSeconds))
            if Task.isCancelled { return }
            let now = clock()
            var healthy = true
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
                healthy = false
                logger.error("store pruning failed", metadata: ["error": "\(error)"])
            }
            let failures = writer.figures.failures
            if failures > failuresSeen {
                healthy = false
                failuresSeen = failures
            }
            state.withLock { $0.healthy = healthy }
        }
    }
}
