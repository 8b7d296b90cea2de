import GatewayCore
import DeviceProtocol
import Histogram
import JobQueue
import Logging
import NIOCore
import PushIntake
import PushModel
import PushPolicy
import PushStore
import Synchronization
import WallClock

/// The device hub: it carries out the policy's decisions. Accepted pushes come in from the provider API
/// (as its `NotificationIntake`), device events from the sessions; each goes through the
/// `ThrottleEngine` (pure), and the hub delivers what the engine says to the device's session.
public final class DeviceHub: NotificationIntake, Sendable {
    public let registry: DeviceRegistry
    /// The apps' broadcast channels (docs/live-activities.md).
    public let channels: ChannelRegistry
    public let settings: HubSettings
    /// With a store, accepted pushes are answered once committed, and every decision is written.
    public let writer: StoreWriter?
    let clock: @Sendable () -> UnixTime
    let logger: Logger
    /// The policy, the delivery queues and the sessions, under one lock that is never held for I/O.
    let core: Mutex<HubState<any EventLoop>>
    /// With several nodes on one PostgreSQL database: the store they share (nil on a single node).
    let cluster: (any ClusterStore)?
    /// Several nodes: the claims, the routed notices and what was adopted, under one lock of their own
    /// (`ClusterWork`; never held for store I/O).
    let clusterWork = Mutex(ClusterWork())
    /// Several nodes: the links to the others that carry routed pushes (nil: through the store only).
    let routeLink = Mutex<(any RouteLink)?>(nil)
    /// Several nodes: the store work the hub starts (claims, loading routed pushes), run by the cluster
    /// service's task group (`runJobs`), not by tasks of their own.
    let jobQueue = JobQueue()
    /// How the device protocol writes a delivery (the wake's deadline it tells the device).
    let deliveryEncoding: DeliveryEncoding
    let policy: PolicySettings
    /// Pushes delivered at once, by id, with the monotonic time they were accepted: their device's ack
    /// closes the accept-to-device latency.
    private let ackLatency = Mutex(AckLatency())
    /// Held while posted store changes are handed to the writer; the commit futures a thread enqueued for
    /// another thread's change, until that thread collects its own.
    private let draining = Mutex<[UInt64: EventLoopFuture<Void>]>([:])
    /// `register`s by source address.
    let enrolmentLimiter: RequestRateLimiter<String>
    /// How the last broadcasts fanned out.
    public let broadcastFigures = BroadcastFigures()

    public init(
        registry: DeviceRegistry, policy: PolicySettings, settings: HubSettings = HubSettings(), logger: Logger,
        clock: @escaping @Sendable () -> UnixTime = UnixTime.now
    ) {
        self.registry = registry
        self.writer = registry.writer
        self.channels = ChannelRegistry(
            writer: registry.writer, nodeID: registry.nodeID, limit: settings.channelsPerApp)
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.deliveryEncoding = DeliveryEncoding(deadlineSeconds: Int(policy.completionDeadlineSeconds))
        self.policy = policy
        var engine = ThrottleEngine(settings: policy, decisionLogCapacity: settings.decisionLogCapacity)
        engine.tracksChanges = registry.writer != nil
        self.core = Mutex(
            HubState(
                policy: engine,
                deliveries: DeliveryQueues(window: settings.deliveryWindow, limit: settings.maximumWaiting)))
        self.cluster = registry.nodeID == nil ? nil : registry.writer?.backend as? any ClusterStore
        self.enrolmentLimiter = RequestRateLimiter(limit: settings.enrolmentsPerAddress, shardCount: 4)
    }

    // MARK: From the provider API

    public func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply {
        guard let device = registry.slot(of: notification.deviceToken) else {
            // A scripted token (`pushgate tokens`) has no device to deliver to: accepted and counted.
            core.withLock { $0.counters.acceptedWithoutDevice += 1 }
            guard let writer else { return .now(.accepted) }
            return .afterCommit(
                writer.enqueue(answeringOn: eventLoop) {
                    $0.notifications.append(
                        StoredNotification(
                            notification: notification, expiresAt: nil, deviceID: nil, state: .noDevice, rule: nil))
                })
        }
        if cluster != nil { return submitInCluster(notification, device: device, on: eventLoop) }
        return submitHere(notification, device: device, on: eventLoop)
    }

    /// Runs the policy for a push to a device this node owns. A device with `maximumWaiting` pushes not
    /// yet acknowledged gets no more: 429 TooManyRequests, not a 200 and a later drop.
    func submitHere(_ notification: PushNotification, device: DeviceSlot, on eventLoop: any EventLoop) -> IntakeReply {
        let accepted = NIODeadline.now()
        let now = clock()
        // Enqueued for the store before it is delivered, so that the device's ack follows the insert. The
        // limit is checked under the same lock as the decision that fills the queue (pushes arriving
        // together never take a device past it).
        let (decided, committed, writes) = decideAndCommit(
            now: now, device: device, inserting: (notification, device, true), answeringOn: eventLoop,
            { core, _ -> [PolicyAction]? in
                guard !core.deliveries.isFull(device) else { return nil }
                return core.received(notification, device: device, now: now)
            }, actions: { $0 })
        guard decided != nil else {
            core.withLock { $0.counters.refusedQueueFull += 1 }
            return .now(.rejected(Rejection(.tooManyRequests)))
        }
        guard let committed else {
            // No store: nothing waits for a commit.
            noteAwaitingAck(notification, accepted: accepted, in: writes)
            write(writes)
            return .now(.accepted)
        }
        write(writes)
        // Written to the device only once durable: a push answered 500 or 503 because the store did not
        // write it is never delivered (its provider, rightly, sends it again).
        committed.whenComplete { [self] outcome in
            var stored = false
            if case .success = outcome { stored = true }
            settle(notification, device: device, stored: stored, accepted: accepted)
        }
        return .afterCommit(committed)
    }

    /// The commit of a new push ended: its delivery is written (when the device's window lets it), or,
    /// if the store could not write it, it is withdrawn from the queue and the policy.
    private func settle(_ notification: PushNotification, device: DeviceSlot, stored: Bool, accepted: NIODeadline) {
        let now = clock()
        var writes: [HubWrite] = []
        core.withLock { core in
            core.settled(notification, device: device, stored: stored, now: now, writes: &writes)
            core.noteResends(writes, now: now)
        }
        if !stored { core.withLock { $0.counters.notStored += 1 } }
        noteAwaitingAck(notification, accepted: accepted, in: writes)
        write(writes)
    }

    /// A push written now: its device's ack closes its accept-to-ack latency.
    private func noteAwaitingAck(_ notification: PushNotification, accepted: NIODeadline, in writes: [HubWrite]) {
        guard writes.contains(where: { $0.item.push === notification }) else { return }
        ackLatency.withLock { $0.written(notification.id, acceptedAt: accepted) }
    }

    // MARK: From device sessions

    /// A device authenticated: its session replaces any earlier one, and what was kept is delivered.
    func connected(_ device: DeviceSlot, session: any DeviceSession) {
        if cluster != nil, registry.owner(of: device) != registry.nodeID {
            // Another node ran its policy: this one takes it over first.
            return claim(device) { [self] claimed in
                if claimed {
                    connectedHere(device, session: session)
                } else {
                    session.close(.storeUnavailable, reconnectAfterMilliseconds: settings.reconnectHintMilliseconds)
                }
            }
        }
        connectedHere(device, session: session)
    }

    private func connectedHere(_ device: DeviceSlot, session: any DeviceSession) {
        let now = clock()
        // One lock: the new session, its queue and the policy hear of the connection together, so no
        // delivery can be decided for a session that is not the device's.
        let ((previous, _), _, writes) = decideAndCommit(
            now: now, device: device, inserting: nil, answeringOn: nil,
            { core, writes -> ((any DeviceSession)?, [PolicyAction]) in
                core.connected(device, session: session, now: now, writes: &writes)
            }, actions: { $0.1 })
        previous?.close(.replaced, reconnectAfterMilliseconds: nil)
        write(writes)
    }

    /// The session ended (closed by either side, dropped, replaced, stalled, shut down): what the device
    /// had not acknowledged stays in its queue for its next connection.
    func disconnected(_ device: DeviceSlot, session: any DeviceSession) {
        let now = clock()
        let cursors = core.withLock { core in
            if core.disconnected(device, session: session, now: now) { core.counters.disconnections += 1 }
            return core.broadcasts.takeCursors(of: device)
        }
        store(cursors)
    }

    /// A keep-alive: the held pushes released to the device, for the answer to carry (as far as its
    /// window lets them through; the rest follow as acknowledgements come).
    func keepAlive(_ device: DeviceSlot) -> [Outgoing] {
        let now = clock()
        let (_, _, writes) = decideAndCommit(
            now: now, device: device, inserting: nil, answeringOn: nil,
            { core, _ in
                core.counters.keepAlives += 1
                return core.policy.keepAlive(device: device, now: now)
            },
            actions: { $0 })
        let inAnswer = writes.filter { $0.device == device }
        write(writes.filter { $0.device != device })
        return inAnswer.map(\.item)
    }

    /// The device acknowledged a push: it is delivered (the store records it, a wake's deadline starts),
    /// and its window lets the next one through.
    /// Whether it acknowledged a push in flight to the device (an unknown id, a repeat, or a push already
    /// acknowledged is not one).
    @discardableResult
    func acknowledged(_ device: DeviceSlot, apnsID: String) -> Bool {
        guard let id = APNsID(header: apnsID) else {
            core.withLock { $0.counters.acknowledged += 1 }
            return false
        }
        let now = clock()
        var writes: [HubWrite] = []
        let acknowledgement = core.withLock { core -> Acknowledgement? in
            core.counters.acknowledged += 1
            let acknowledgement = core.acknowledged(id, by: device, now: now, writes: &writes)
            core.noteResends(writes, now: now)
            if let item = acknowledgement?.item, item.push.broadcast == nil {
                core.counters.delivered += 1
                if item.rule.isRelease { core.counters.deliveredFromStorage += 1 }
            }
            return acknowledgement
        }
        write(writes)
        guard let acknowledgement else { return false }
        if let stamp = acknowledgement.item.push.broadcast {
            acknowledgedBroadcast(stamp, by: device, cursorMoved: acknowledgement.cursorMoved)
            return true
        }
        if let writer {
            writer.enqueue {
                $0.outcomes.append(NotificationOutcome(apnsID: id, state: .delivered, rule: nil, at: now))
            }
        }
        let acknowledgedAt = NIODeadline.now()
        ackLatency.withLock { $0.acknowledged(id, now: acknowledgedAt) }
        return true
    }

    /// Accept-to-device-ack latency of pushes delivered at once: p50, p90, p99, max (microseconds) and count.
    /// The accept-to-ack histogram's non-empty buckets, [microseconds, count], so that a client (the
    /// load generator) can take the difference of two readings.
    public var deliveryLatencyBuckets: [[UInt64]] {
        ackLatency.withLock { $0.buckets }
    }

    public var deliveryLatency: DeliveryLatency {
        ackLatency.withLock { $0.summary }
    }

    func count(_ change: (inout HubCounters) -> Void) {
        core.withLock { change(&$0.counters) }
    }

    func completed(_ device: DeviceSlot, bundleID: String, apnsID: APNsID, result: CompletionResult) {
        let now = clock()
        decideAndWrite(now: now, device: device) {
            $0.policy.completed(device: device, bundleID: bundleID, id: apnsID, result: result, now: now)
        }
    }

    func notWoken(_ device: DeviceSlot, bundleID: String, apnsID: APNsID, reason: WakeRefusal) {
        let now = clock()
        decideAndWrite(now: now, device: device) {
            $0.policy.notWoken(device: device, bundleID: bundleID, id: apnsID, reason: reason, now: now)
        }
    }

    /// The app was uninstalled: its held pushes are discarded (Apple: "Discarded – Token Unregistered").
    func uninstalled(_ device: DeviceSlot, bundleID: String) {
        unsubscribeAll(device, bundleID: bundleID)
        let now = clock()
        decideAndWrite(now: now, device: device) { $0.policy.uninstalled(device: device, bundleID: bundleID, now: now) }
    }

    func appStateChanged(_ device: DeviceSlot, bundleID: String, state: AppState) {
        let now = clock()
        decideAndWrite(now: now, device: device) {
            $0.policy.appStateChanged(device: device, bundleID: bundleID, to: state, now: now)
        }
    }

    func frequentPushesChanged(_ device: DeviceSlot, bundleID: String, enabled: Bool) {
        let now = clock()
        core.withLock {
            $0.policy.frequentPushesChanged(device: device, bundleID: bundleID, enabled: enabled, now: now)
        }
    }

    func conditionsChanged(
        _ device: DeviceSlot, lowPowerMode: Bool, backgroundAppRefreshOff: Bool, debuggerAttached: Bool = false,
        otherAppsWakesPerDay: Double = 0
    ) {
        let now = clock()
        decideAndWrite(now: now, device: device) {
            $0.policy.conditionsChanged(
                device: device, lowPowerMode: lowPowerMode, backgroundAppRefreshOff: backgroundAppRefreshOff,
                debuggerAttached: debuggerAttached, otherAppsWakesPerDay: otherAppsWakesPerDay, now: now)
        }
    }

    /// The device restarted: the herd window begins.
    func rebooted(_ device: DeviceSlot) {
        let now = clock()
        core.withLock { $0.policy.rebooted(device: device, now: now) }
    }

    // MARK: Time

    /// Runs the policy's due timers (completion deadlines, expiry). The server calls it every tick.
    public func tick() {
        let now = clock()
        decideAndWrite(now: now, device: nil) { $0.policy.advance(to: now) }
        closeStalled(now: now)
        storeCursors(now: now)
        if settings.pruneAfterSeconds > 0, core.withLock({ $0.checks.due(\.prune, every: 60_000, now: now) }) {
            pruneStaleDevices()
        }
    }

    /// Closes the connections of devices that acknowledged nothing written to them for
    /// `notReadingTimeoutSeconds` (checked about once a second): what they had not acknowledged goes back
    /// to their queues for their next connection.
    private func closeStalled(now: UnixTime) {
        let timeout = settings.notReadingTimeoutSeconds * 1000
        let stalled = core.withLock { core -> [any DeviceSession] in
            guard core.checks.due(\.stalled, every: 1000, now: now) else { return [] }
            return core.deliveries.stalled(now: now, timeoutMilliseconds: timeout).compactMap { core.session(of: $0) }
        }
        guard !stalled.isEmpty else { return }
        core.withLock { $0.counters.closedForMisbehaviour += stalled.count }
        logger.notice("devices closed for not acknowledging", metadata: ["count": "\(stalled.count)"])
        for session in stalled { session.close(.notReading, reconnectAfterMilliseconds: nil) }
    }

    // MARK: Reading

    public var counters: HubCounters { core.withLock { $0.counters } }
    public var policyCounters: PolicyCounters { core.withLock { $0.policy.counters } }
    public func journey(of id: APNsID) -> [DecisionLog.Entry] { core.withLock { $0.policy.log.journey(of: id) } }
    public func budget(device: DeviceSlot, bundleID: String) -> AppThrottleSnapshot? {
        let now = clock()
        return core.withLock { $0.policy.snapshot(device: device, bundleID: bundleID, now: now) }
    }
    public func conditions(of device: DeviceSlot) -> DeviceConditions {
        core.withLock { $0.policy.conditions(of: device) }
    }
    public var connectedCount: Int { core.withLock { $0.connectedCount } }
    public func isConnected(_ device: DeviceSlot) -> Bool { core.withLock { $0.session(of: device) != nil } }
    /// Pushes decided for `device` and not acknowledged by it (written or waiting), in order.
    public func outstanding(of device: DeviceSlot) -> [Outgoing] {
        core.withLock { $0.deliveries.outstanding(of: device) }
    }
    /// Pushes not acknowledged across the fleet.
    public var outstandingCount: Int { core.withLock { $0.deliveries.totalCount } }

    /// Closes every session with a reconnect hint (graceful shutdown).
    public func closeAll(reconnectAfterMilliseconds: Int) {
        for session in core.withLock({ $0.allSessions }) {
            session.close(.shutdown, reconnectAfterMilliseconds: reconnectAfterMilliseconds)
        }
    }

    // MARK: Writing

    /// Writes what the delivery queues let through, after the lock is released.
    func write(_ writes: [HubWrite]) {
        guard !writes.isEmpty else { return }
        var shared = SharedEncodings()
        for write in writes { write.session.write(write.item, shared: &shared) }
    }

    /// Decides under the lock, hands the store its change, then writes what the queues let through.
    func decideAndWrite(now: UnixTime, device: DeviceSlot?, _ body: (inout HubState<any EventLoop>) -> [PolicyAction]) {
        let (_, _, writes) = decideAndCommit(
            now: now, device: device, inserting: nil, answeringOn: nil, { core, _ in body(&core) }, actions: { $0 })
        write(writes)
    }

    // MARK: The store

    /// Decides one event under the hub's lock (`body` on the core, then `HubState.decided`: the routing of its
    /// deliveries, the store change posted in decision order) and carries the outcome out after
    /// unlocking: the posted changes go to the store's writer in order (`enqueuePosted`); the writes are
    /// returned for the caller to make. With `answeringOn`, the future (on that loop) of the commit that
    /// carries what was decided: the provider's 200.
    func decideAndCommit<R>(
        now: UnixTime, device: DeviceSlot?, inserting: (push: PushNotification, device: DeviceSlot, new: Bool)?,
        answeringOn eventLoop: (any EventLoop)?,
        _ body: (inout HubState<any EventLoop>, inout [HubWrite]) -> R, actions pick: (R) -> [PolicyAction]?
    ) -> (result: R, committed: EventLoopFuture<Void>?, writes: [HubWrite]) {
        let registry = self.registry
        let directory = HubDirectory(slot: { registry.slot(of: $0) }, deviceID: { registry.deviceID(of: $0) })
        let stores = writer != nil
        let (result, outcome) = core.withLock { core -> (R, HubOutcome) in
            // The event's own writes (a connection's queued pushes) come before the policy's.
            var writes: [HubWrite] = []
            let result = body(&core, &writes)
            // nil: the event was refused (nothing decided, nothing to store).
            guard let actions = pick(result) else { return (result, .refused) }
            return (
                result,
                core.decided(
                    actions, writes: writes, now: now, device: device, inserting: inserting, answer: eventLoop,
                    stores: stores, directory: directory)
            )
        }
        guard let posted = outcome.posted else { return (result, nil, outcome.writes) }
        // Before the writes: the device's ack of a push must follow the insert of its notification.
        return (result, enqueuePosted(upTo: posted), outcome.writes)
    }

    /// Hands the posted store changes to the writer in the order they were decided, outside the hub's
    /// lock: one thread at a time drains everything posted so far (so no change overtakes an earlier
    /// one — an outcome never reaches the store before the insert of its notification). Returns the
    /// commit future of change `sequence` when it has an answer loop, whichever thread enqueued it.
    func enqueuePosted(upTo sequence: UInt64) -> EventLoopFuture<Void>? {
        guard let writer else { return nil }
        return draining.withLock { handedOver -> EventLoopFuture<Void>? in
            var mine: EventLoopFuture<Void>?
            for change in core.withLock({ $0.takePosted() }) {
                let apply: (inout StoreBatch) -> Void = { change.apply(to: &$0) }
                guard let loop = change.answer else {
                    writer.enqueue(apply)
                    continue
                }
                let future = writer.enqueue(answeringOn: loop, apply)
                if change.sequence == sequence { mine = future } else { handedOver[change.sequence] = future }
            }
            return mine ?? handedOver.removeValue(forKey: sequence)
        }
    }

    /// Brings back what the store kept: devices and tokens, budgets, and pending notifications (held
    /// for their devices, which are offline until they connect). Returns how many were restored.
    @discardableResult
    public func restore(_ snapshot: StoreSnapshot) -> Int {
        registry.restore(devices: snapshot.devices, tokens: snapshot.tokens)
        channels.restore(snapshot.channels)
        remember(snapshot.broadcasts)
        var subscriptions: [String: [StoredSubscription]] = [:]
        for row in snapshot.subscriptions { subscriptions[row.deviceID, default: []].append(row) }
        for (deviceID, rows) in subscriptions {
            if let slot = registry.slot(ofDevice: deviceID) { adoptSubscriptions(slot, rows) }
        }
        var budgets: [String: [AppBudget]] = [:]
        for device in snapshot.budgets { budgets[device.deviceID] = device.apps }
        var pending: [String: [StoredNotification]] = [:]
        var order: [String] = []
        for stored in snapshot.pending {
            guard let device = stored.deviceID else { continue }
            if pending[device] == nil { order.append(device) }
            pending[device, default: []].append(stored)
        }
        for device in budgets.keys.sorted() where pending[device] == nil { order.append(device) }
        let now = clock()
        return order.reduce(0) { restored, device in
            restored + adopt(device, budgets: budgets[device] ?? [], pending: pending[device] ?? [], now: now)
        }
    }

    /// Gives the hub a device's state from the store (at start, or when this node claims it): its
    /// budgets; the deliveries it had not acknowledged, back in its queue in their order; the rest held
    /// as for an offline device until it connects. Held pushes beyond the per-app limit are recorded as
    /// overflowed; notifications no policy had decided yet (routed to a node that never ran them) are
    /// recorded as held for the offline device. A device connected here gets what its new state lets
    /// through at once (`HubCore.adopt`). Returns how many are kept.
    @discardableResult
    func adopt(_ deviceID: String, budgets: [AppBudget], pending: [StoredNotification], now: UnixTime) -> Int {
        guard let slot = registry.slot(ofDevice: deviceID) else { return 0 }
        let entries = pending.map { PendingPush(push: $0.notification, expiresAt: $0.expiresAt, rule: $0.rule) }
        let undecided = pending.filter { $0.rule == nil }.map(\.notification.id)
        let stores = writer != nil
        // What overflowed and what no policy had decided are changes decided here: posted in order under
        // the lock, before what the policy released for a connected device (a later decision about an
        // adopted push cannot reach the store before them).
        let (((restored, sequence), _), _, writes) = decideAndCommit(
            now: now, device: slot, inserting: nil, answeringOn: nil,
            { state, writes -> ((Int, UInt64?), [PolicyAction]) in
                let (restored, overflow, actions) = state.adopt(
                    slot, budgets: budgets.map { ($0.bundleID, $0.budget) }, pending: entries, now: now,
                    writes: &writes)
                guard stores, !overflow.isEmpty || !undecided.isEmpty else { return ((restored, nil), actions) }
                let dropped = Set(overflow)
                var change = StoreChange<any EventLoop>()
                change.outcomes =
                    overflow.map { NotificationOutcome(apnsID: $0, state: .discarded, rule: .overflow, at: now) }
                    + undecided.filter { !dropped.contains($0) }.map {
                        NotificationOutcome(apnsID: $0, state: .pending, rule: .offline, at: now)
                    }
                return ((restored, state.post(change)), actions)
            }, actions: { $0.1 })
        // Handed to the writer by `decideAndCommit` when the policy's releases posted a change after it.
        if let sequence { _ = enqueuePosted(upTo: sequence) }
        write(writes)
        return restored
    }
}

public struct DeliveryLatency: Sendable, Codable, Equatable {
    public var count: UInt64
    public var p50: UInt64
    public var p90: UInt64
    public var p99: UInt64
    public var max: UInt64
}

/// The hub's own counters (the policy's are in `PolicyCounters`).
public struct HubCounters: Sendable, Equatable, Codable {
    /// Notifications written to device connections (again after a connection ended: also `resent`).
    public var sent = 0
    public var resent = 0
    /// Notifications acknowledged by their devices: delivered (of them, released from storage).
    public var delivered = 0
    public var deliveredFromStorage = 0
    /// Acknowledgements received (a repeated one delivers nothing).
    public var acknowledged = 0
    /// Pushes refused with 429 because their device had `maximumWaiting` not yet acknowledged.
    public var refusedQueueFull = 0
    /// Pushes answered 500 or 503 because the store did not write them: withdrawn, never delivered.
    public var notStored = 0
    /// Device sessions that ended.
    public var disconnections = 0
    public var keepAlives = 0
    /// Several nodes: devices taken over from nodes that were gone, and undecided pushes the sweep found
    /// (none in normal operation).
    public var takenOver = 0
    public var sweptUndecided = 0
    public var acceptedWithoutDevice = 0
    public var closedForMisbehaviour = 0
    public var authenticationFailures = 0
    /// `register`s refused for a missing or wrong enrolment secret, or over the per-address rate.
    public var enrolmentsRefused = 0
    /// Devices removed by the operator, and pruned for not being seen.
    public var devicesRemoved = 0
    public var devicesPruned = 0
    /// Several nodes: pushes accepted here for devices another node owns, and those routed here from others
    /// that this node's policy ran (not those it refused).
    public var routedOut = 0
    public var routedIn = 0
    /// Of `routedOut` (and of pushes passed on to a device's new owner): those handed over through the
    /// store (a `route` notice) because the node link did not take them.
    public var routedThroughStore = 0
    /// Devices this node took over from another, and let go to another.
    public var claimed = 0
    public var released = 0
    /// Broadcasts accepted here, heard of from other nodes, and acknowledged by subscribers here.
    public var broadcastsAccepted = 0
    public var broadcastsHeard = 0
    public var broadcastsDelivered = 0

    public init() {}
}

public struct HubSettings: Sendable, Equatable {
    /// Live broadcast channels an app may have at once (Apple: 10,000 per app and environment).
    public var channelsPerApp = 10_000
    /// The keep-alive interval devices are told to use (each adds its own phase and jitter).
    public var keepAliveSeconds: Int = 60
    /// Messages a device may send in a burst, then per second, before it is closed as flooding.
    public var messageBurst: Int = 200
    public var messagesPerSecond: Double = 50
    var messageRate: TokenBucket.Rate { TokenBucket.Rate(burst: messageBurst, perSecond: messagesPerSecond) }
    /// A device that does not read its messages for this long is closed.
    public var notReadingTimeoutSeconds: Int64 = 30
    /// Largest WebSocket frame a device may send.
    public var maximumFrameBytes: Int = 64 * 1024
    /// A connection that has not said hello within this time is closed.
    public var helloTimeoutSeconds: Int64 = 10
    /// How often the policy's timers are run.
    public var tickMilliseconds: Int64 = 200
    public var decisionLogCapacity: Int = 100_000
    /// The reconnect hint sent on shutdown.
    public var reconnectHintMilliseconds: Int = 2000
    /// Pushes written to a device and not yet acknowledged, at most (the rest wait in its queue).
    public var deliveryWindow: Int = 64
    /// Pushes that may wait for one device (written or queued, not acknowledged) before further POSTs to
    /// its tokens are answered 429 TooManyRequests.
    public var maximumWaiting: Int = 10_000
    /// The secret a `register` must carry (compared in constant time); nil: anyone may enrol (tests).
    public var enrolmentSecret: String?
    /// Registrations per source address: past it, `register` is refused (`enrolment_limited`).
    public var enrolmentsPerAddress = RateLimit(burst: 60, perSecond: 1)
    /// Loopback is the gateway's own machine, where `pushgate simulate` and the demo enrol whole fleets
    /// from one address: not limited (tests of the limit turn this off).
    public var enrolmentLimitSparesLoopback = true
    /// Devices that have not said hello for this long are removed; 0 keeps them for good.
    public var pruneAfterSeconds: Int64 = 0
    /// A broadcast on a No-Message-Stored channel (or with `apns-expiration: 0`) is still given to a
    /// subscriber that connects within this long of it: one whose connection or node was lost mid-fan-out.
    public var broadcastGraceSeconds: Int64 = 60
    /// How often the broadcast cursors subscribers moved are stored (and when a device's session ends);
    /// 0: on every acknowledgement.
    public var broadcastCursorStoreSeconds: Int64 = 5

    public init() {}
}
