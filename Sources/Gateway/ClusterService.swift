import DeviceHub
import Logging
import PushStore
import ServiceLifecycle
import Synchronization

/// Keeps a node in touch with the others on a shared PostgreSQL database: one connection LISTENs for
/// their notices (routed pushes, device owners, new devices and tokens) and the hub acts on them. The
/// listening starts before the store's snapshot is read, so nothing committed after the snapshot is
/// missed; notices are queued until the hub has restored the snapshot. A lost connection is opened
/// again after a second, and what was missed meanwhile is read back from the database.
public final class ClusterService: Service, Sendable {
    let cluster: any ClusterStore
    let logger: Logger
    private let notices: AsyncStream<ClusterMessage>
    private let continuation: AsyncStream<ClusterMessage>.Continuation

    private struct State {
        var listening: Task<Void, Never>?
        var delivering: Task<Void, Never>?
        var started: CheckedContinuation<Void, any Error>?
        var connected = false
        var stopped = false
    }

    private let state = Mutex(State())

    public init(cluster: any ClusterStore, logger: Logger) {
        self.cluster = cluster
        self.logger = logger
        (notices, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Whether the listening connection is up (`/ready`).
    public var isListening: Bool { state.withLock { $0.connected } }

    /// Starts listening; returns once the first LISTEN is in place, throws if it cannot be.
    public func startListening() async throws {
        try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
            state.withLock { $0.started = started }
            let listening = Task { [self] in await listenLoop() }
            state.withLock { $0.listening = listening }
        }
    }

    private func listenLoop() async {
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let again = attempt > 1
            do {
                try await cluster.listen(ready: { [self] in
                    let started = state.withLock { state in
                        state.connected = true
                        defer { state.started = nil }
                        return state.started
                    }
                    started?.resume()
                    if again {
                        logger.info("listening to the other nodes again")
                        Task { [self] in await catchUp() }
                    }
                }) { [continuation] message in continuation.yield(message) }
            } catch {
                let started = state.withLock { state in
                    state.connected = false
                    defer { state.started = nil }
                    return state.started
                }
                if let started {
                    started.resume(throwing: StoreError("cannot listen for the other nodes' notices: \(error)"))
                    return
                }
                if !Task.isCancelled {
                    logger.error(
                        "lost the connection that listens to the other nodes",
                        metadata: ["error": "\(String(reflecting: error))"])
                }
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// After a lost connection: what the other nodes said meanwhile, rebuilt from the database and
    /// queued with the notices heard since (each is harmless to hear twice). Tried again every second
    /// until it succeeds or the service stops.
    private func catchUp() async {
        while !Task.isCancelled, !state.withLock({ $0.stopped }) {
            do {
                let missed = try await cluster.missedNotices()
                for notice in missed { continuation.yield(ClusterMessage(from: cluster.nodeID, notice: notice)) }
                logger.info("caught up with the other nodes", metadata: ["notices": "\(missed.count)"])
                return
            } catch {
                logger.error(
                    "cannot catch up with the other nodes", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// Hands queued and future notices to the hub (once it has restored the store's snapshot).
    public func deliver(to hub: DeviceHub) {
        let notices = self.notices
        let delivering = Task {
            for await message in notices { hub.received(message) }
        }
        state.withLock { $0.delivering = delivering }
    }

    public func run() async throws {
        try? await gracefulShutdown()
        stop()
    }

    public func stop() {
        let (listening, delivering) = state.withLock { state in
            state.stopped = true
            return (state.listening, state.delivering)
        }
        listening?.cancel()
        continuation.finish()
        delivering?.cancel()
    }
}
