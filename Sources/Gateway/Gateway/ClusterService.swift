import DeviceHub
import Logging
import NodeLinks
import PushModel
import PushStore
import ServiceLifecycle
import Synchronization
import WallClock

/// Keeps a node in touch with the others on a shared PostgreSQL database: one connection LISTENs for
/// their notices (routed pushes, device owners, new devices and tokens) and the hub acts on them. The
/// listening starts before the store's snapshot is read, so nothing committed after the snapshot is
/// missed; notices are queued until the hub has restored the snapshot. A lost connection is opened
/// again after a second, and what was missed meanwhile is read back from the database.
///
/// `run` owns one task group for the rest: handing notices to the hub, the hub's store work (claims,
/// loading routed pushes), and the node's upkeep — its lease renewed every third of
/// `store.postgres.lease_seconds` (with its route address), the other nodes' route addresses read every
/// second for the node links, the devices of nodes whose lease went stale taken over, and a sweep
/// every `store.postgres.sweep_seconds` for pushes to this node's devices that no policy decided.
public final class ClusterService: Service, Sendable {
    let cluster: any ClusterStore
    let logger: Logger
    let settings: ClusterSettings
    private let notices: AsyncStream<[ClusterMessage]>
    private let continuation: AsyncStream<[ClusterMessage]>.Continuation

    private struct State {
        var hub: DeviceHub?
        /// The links to the other nodes, and where this node takes routed pushes (nil: nowhere yet).
        var links: NodeLinks?
        var routeAddress: @Sendable () -> String? = { nil }
        /// Whoever waits for the first LISTEN (`waitUntilListening`).
        var started: CheckedContinuation<Void, any Error>?
        var connected = false
        /// The first LISTEN is in place (a later loss and reconnection does not undo it).
        var listened = false
        /// Why the first LISTEN failed (the listening then ends).
        var failedToStart: (any Error)?
        var stopped = false
    }

    private let state = Mutex(State())

    public init(cluster: any ClusterStore, settings: ClusterSettings = ClusterSettings(), logger: Logger) {
        self.cluster = cluster
        self.settings = settings
        self.logger = logger
        (notices, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Whether the listening connection is up (`/ready`).
    public var isListening: Bool { state.withLock { $0.connected } }

    /// Returns once the first LISTEN is in place (`listen` runs beside), throws if it cannot be, or when
    /// the waiting task is cancelled (a start that took too long).
    public func waitUntilListening() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (started: CheckedContinuation<Void, any Error>) in
                let now: Result<Void, any Error>? = state.withLock { state in
                    if state.listened { return .success(()) }
                    if let error = state.failedToStart { return .failure(error) }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.started = started
                    return nil
                }
                if let now { started.resume(with: now) }
            }
        } onCancel: {
            let started = state.withLock { state in
                defer { state.started = nil }
                return state.started
            }
            started?.resume(throwing: CancellationError())
        }
    }

    /// Listens to the other nodes until cancelled, opening the connection again a second after it is
    /// lost; ends at once if the first LISTEN fails. It starts before the service runs (the snapshot is
    /// read after the first LISTEN), so it is a child of the task group that runs the store
    /// (`GatewayServices.withServices`), not of `run`'s.
    public func listen() async {
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let again = attempt > 1
            do {
                try await cluster.listen(ready: { [self] in
                    let started = state.withLock { state in
                        state.connected = true
                        state.listened = true
                        defer { state.started = nil }
                        return state.started
                    }
                    started?.resume()
                    if again {
                        logger.info("listening to the other nodes again")
                        state.withLock { $0.hub }?.spawn { [self] in await catchUp() }
                    }
                }) { [continuation] messages in continuation.yield(messages) }
            } catch {
                let failure = StoreError("cannot listen for the other nodes' notices: \(error)")
                let (first, started) = state.withLock { state in
                    state.connected = false
                    if !state.listened { state.failedToStart = failure }
                    defer { state.started = nil }
                    return (!state.listened, state.started)
                }
                if first {
                    started?.resume(throwing: failure)
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
                continuation.yield(missed.map { ClusterMessage(from: cluster.nodeID, notice: $0) })
                logger.info("caught up with the other nodes", metadata: ["notices": "\(missed.count)"])
                return
            } catch {
                if Task.isCancelled { return }
                logger.error(
                    "cannot catch up with the other nodes", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: .seconds(1))
        }
    }

    /// The hub that hears the notices (once it has restored the store's snapshot); `run` hands them over.
    /// `links`: the node links, told the other nodes' addresses on every renewal of the lease, which
    /// writes `routeAddress()`, this node's own.
    public func deliver(
        to hub: DeviceHub, links: NodeLinks? = nil, routeAddress: @escaping @Sendable () -> String? = { nil }
    ) {
        state.withLock {
            $0.hub = hub
            $0.links = links
            $0.routeAddress = routeAddress
        }
    }

    public func run() async throws {
        guard let hub = state.withLock({ $0.hub }) else {
            try? await gracefulShutdown()
            return stop()
        }
        let notices = self.notices
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await messages in notices {
                    for message in messages { hub.received(message) }
                }
            }
            group.addTask { [self] in await upkeep(hub) }
            group.addTask { [self] in
                try? await gracefulShutdown()
                stop()
            }
            // The hub's store work, each job a child of this group; ends when the hub has no more.
            await hub.runJobs(in: &group)
            group.cancelAll()
        }
    }

    /// The lease, takeovers of nodes that are gone, and the sweep for undecided pushes, until cancelled.
    private func upkeep(_ hub: DeviceHub) async {
        let lease = Int64(settings.leaseSeconds) * 1000
        let renewEvery = Duration.milliseconds(max(100, lease / 3))
        // The other nodes' route addresses are read every second (a handful of rows), so a node that
        // starts is linked to within about a second; this node's own is written at once when it changes
        // (its provider listener bound after the first renewal).
        let tick = min(renewEvery, .seconds(1))
        var lastSweep = ContinuousClock.now
        var lastRenewal: ContinuousClock.Instant?
        var advertised: String??
        let (links, routeAddress) = state.withLock { ($0.links, $0.routeAddress) }
        while !Task.isCancelled {
            do {
                let address = routeAddress()
                if lastRenewal.map({ ContinuousClock.now - $0 >= renewEvery }) ?? true || advertised != .some(address) {
                    try await cluster.renewLease(routeAddress: address)
                    lastRenewal = ContinuousClock.now
                    advertised = .some(address)
                    hub.tookOver(try await cluster.takeOver(leaseMilliseconds: lease))
                    if ContinuousClock.now - lastSweep >= .seconds(settings.sweepSeconds) {
                        lastSweep = ContinuousClock.now
                        let cutoff = UnixTime.now().adding(seconds: -Int64(settings.sweepSeconds))
                        await hub.sweep(try await cluster.undecided(olderThan: cutoff))
                    }
                }
                if let links { links.update(addresses: try await cluster.routeAddresses()) }
            } catch {
                if Task.isCancelled { return }
                logger.error("cluster upkeep failed", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await Task.sleep(for: tick)  // clock-ok: the lease's renewal period, the addresses' refresh
        }
    }

    /// Notices are no longer handed to the hub (the listening itself ends with the store's task group).
    public func stop() {
        let (hub, links) = state.withLock { state in
            state.stopped = true
            return (state.hub, state.links)
        }
        // What is queued on the links goes through the store (the writer commits last).
        links?.close()
        continuation.finish()
        hub?.finishJobs()
    }
}

/// The timing of a node among several (configuration keys `store.postgres.lease_seconds`,
/// `store.postgres.sweep_seconds`).
public struct ClusterSettings: Sendable, Equatable {
    /// A node whose lease is older than this is gone; its lease is renewed every third of it.
    public var leaseSeconds = 10
    /// How often, and from what age, pushes to this node's devices that no policy decided are swept.
    public var sweepSeconds = 30

    public init() {}
}
