import DeviceProtocol
import Histogram
import Logging
import NIOCore
import ProviderAPI
import PushModel
import PushPolicy
import PushStore
import Synchronization

/// A connected device as the hub reaches it: a channel to write gateway messages to, from any thread.
public protocol DeviceSession: AnyObject, Sendable {
    func send(_ message: GatewayMessage)
    func close(reason: String, reconnectAfterMilliseconds: Int?)
}

/// The device hub: it carries out the policy's decisions. Accepted pushes come in from the provider API
/// (as its `NotificationIntake`), device events from the sessions; each goes through the
/// `ThrottleEngine` (pure), and the hub delivers what the engine says to the device's session.
public final class DeviceHub: NotificationIntake, Sendable {
    public let registry: DeviceRegistry
    public let settings: HubSettings
    /// With a store, accepted pushes are answered once committed, and every decision is written.
    public let writer: StoreWriter?
    let clock: @Sendable () -> UnixTime
    let logger: Logger
    let engine: Mutex<ThrottleEngine>
    let sessions = Mutex<[DeviceID: any DeviceSession]>([:])
    let hubCounters = Mutex(HubCounters())
    /// With several nodes on one PostgreSQL database: the store they share (nil on a single node).
    let cluster: (any ClusterStore)?
    /// Devices this node is taking over, with the work that waits until their state is loaded (called
    /// with whether the claim succeeded).
    let claims = Mutex<[DeviceID: [@Sendable (Bool) -> Void]]>([:])
    /// Notifications this node's policy took from the store (routed or loaded with a claimed device),
    /// so that one arriving both ways runs once.
    let adopted = Mutex(RecentSet<APNsID>(capacity: 65_536))
    /// Routed notices waiting to be loaded, in the order they came, and whether a task is loading them.
    let routes = Mutex<(keys: [NotificationKey], draining: Bool)>(([], false))
    private let deadlineSeconds: Int
    let policy: PolicySettings
    /// Pushes delivered at once, by id, with the monotonic time they were accepted: their device's ack
    /// closes the accept-to-device latency (bounded; the rest is not measured).
    private let awaitingAck = Mutex<[APNsID: NIODeadline]>([:])
    private let ackLatency = Mutex(
        Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three))
    static let latencySampleLimit = 100_000

    public init(
        registry: DeviceRegistry, policy: PolicySettings, settings: HubSettings = HubSettings(), logger: Logger,
        clock: @escaping @Sendable () -> UnixTime = UnixTime.now
    ) {
        self.registry = registry
        self.writer = registry.writer
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.deadlineSeconds = Int(policy.completionDeadlineSeconds)
        self.policy = policy
        var engine = ThrottleEngine(settings: policy, decisionLogCapacity: settings.decisionLogCapacity)
        engine.tracksChanges = registry.writer != nil
        self.engine = Mutex(engine)
        self.cluster = registry.nodeID == nil ? nil : registry.writer?.backend as? any ClusterStore
    }

    // MARK: From the provider API

    public func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply {
        guard let device = registry.slot(of: notification.deviceToken) else {
            // A scripted token (`pushgate tokens`) has no device to deliver to: accepted and counted.
            hubCounters.withLock { $0.acceptedWithoutDevice += 1 }
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

    /// Runs the policy for a push to a device this node owns.
    func submitHere(_ notification: PushNotification, device: DeviceID, on eventLoop: any EventLoop) -> IntakeReply {
        let accepted = NIODeadline.now()
        let now = clock()
        // Enqueued for the store before it is delivered, so that the device's ack follows the insert.
        let (actions, committed) = decideAndCommit(
            now: now, inserting: (notification, device, true), answeringOn: eventLoop,
            { $0.received(notification, device: device, now: now) }, persisting: { $0 })
        let reply = committed.map { IntakeReply.afterCommit($0) } ?? .now(.accepted)
        if actions.contains(where: {
            if case .deliver(let push, _, _) = $0 { return push === notification }
            return false
        }) {
            awaitingAck.withLock { pending in
                if pending.count < Self.latencySampleLimit { pending[notification.id] = accepted }
            }
        }
        carryOut(actions, device: device, now: now)
        return reply
    }

    // MARK: From device sessions

    /// A device authenticated: its session replaces any earlier one, and what was kept is delivered.
    func connected(_ device: DeviceID, session: any DeviceSession) {
        if cluster != nil, registry.owner(of: device) != registry.nodeID {
            // Another node ran its policy: this one takes it over first.
            return claim(device) { [self] claimed in
                if claimed {
                    connectedHere(device, session: session)
                } else {
                    session.close(
                        reason: "store unavailable", reconnectAfterMilliseconds: settings.reconnectHintMilliseconds)
                }
            }
        }
        connectedHere(device, session: session)
    }

    private func connectedHere(_ device: DeviceID, session: any DeviceSession) {
        let now = clock()
        // Under the engine's lock (then the sessions'), so a failed delivery cannot mark the device
        // offline between its new session and the policy hearing of it.
        let (previous, actions) = decide(
            now: now,
            { engine in
                let previous = sessions.withLock { $0.updateValue(session, forKey: device) }
                return (previous, engine.connected(device: device, now: now))
            }, persisting: { $0.1 })
        if let previous, previous !== session {
            previous.close(reason: "replaced", reconnectAfterMilliseconds: nil)
        }
        carryOut(actions, device: device, now: now)
    }

    func disconnected(_ device: DeviceID, session: any DeviceSession) {
        let wasCurrent = sessions.withLock { sessions -> Bool in
            guard sessions[device] === session else { return false }
            sessions.removeValue(forKey: device)
            return true
        }
        guard wasCurrent else { return }
        let now = clock()
        engine.withLock { $0.disconnected(device: device, now: now) }
    }

    /// A keep-alive: the answer carries the held pushes released to the device.
    func keepAlive(_ device: DeviceID, sequence: Int) -> GatewayMessage {
        let now = clock()
        let actions = decide(now: now) { $0.keepAlive(device: device, now: now) }
        var deliveries: [Delivery] = []
        for action in actions {
            if case .deliver(let push, let rule, let wake) = action {
                deliveries.append(delivery(push, rule: rule, wake: wake))
            }
        }
        hubCounters.withLock {
            $0.keepAlives += 1
            $0.delivered += deliveries.count
        }
        return .keepAliveAck(sequence: sequence, notifications: deliveries)
    }

    func acknowledged(_ device: DeviceID, apnsID: String) {
        hubCounters.withLock { $0.acknowledged += 1 }
        guard let id = APNsID(header: apnsID) else { return }
        let now = clock()
        engine.withLock { $0.acknowledged(id, now: now) }
        if let writer {
            writer.enqueue {
                $0.outcomes.append(NotificationOutcome(apnsID: id, state: .delivered, rule: nil, at: now))
            }
        }
        guard let accepted = awaitingAck.withLock({ $0.removeValue(forKey: id) }) else { return }
        let microseconds = UInt64(max(0, (NIODeadline.now() - accepted).nanoseconds / 1000))
        ackLatency.withLock { _ = $0.record(microseconds) }
    }

    /// Accept-to-device-ack latency of pushes delivered at once: p50, p90, p99, max (microseconds) and count.
    /// The accept-to-ack histogram's non-empty buckets, [microseconds, count], so that a client (the
    /// load generator) can take the difference of two readings.
    public var deliveryLatencyBuckets: [[UInt64]] {
        ackLatency.withLock { histogram in histogram.recordedValues().map { [$0.value, UInt64($0.count)] } }
    }

    public var deliveryLatency: DeliveryLatency {
        ackLatency.withLock {
            DeliveryLatency(
                count: $0.totalCount, p50: $0.valueAtPercentile(50), p90: $0.valueAtPercentile(90),
                p99: $0.valueAtPercentile(99), max: $0.max)
        }
    }

    func count(_ change: (inout HubCounters) -> Void) {
        hubCounters.withLock { change(&$0) }
    }

    func completed(_ device: DeviceID, bundleID: String, apnsID: APNsID, result: CompletionResult) {
        let now = clock()
        let actions = decide(now: now) {
            $0.completed(device: device, bundleID: bundleID, id: apnsID, result: result, now: now)
        }
        carryOut(actions, device: device, now: now)
    }

    func appStateChanged(_ device: DeviceID, bundleID: String, state: AppState) {
        let now = clock()
        let actions = decide(now: now) {
            $0.appStateChanged(device: device, bundleID: bundleID, to: state, now: now)
        }
        carryOut(actions, device: device, now: now)
    }

    func conditionsChanged(_ device: DeviceID, lowPowerMode: Bool, backgroundAppRefreshOff: Bool) {
        let now = clock()
        let actions = decide(now: now) {
            $0.conditionsChanged(
                device: device, lowPowerMode: lowPowerMode, backgroundAppRefreshOff: backgroundAppRefreshOff, now: now)
        }
        carryOut(actions, device: device, now: now)
    }

    // MARK: Time

    /// Runs the policy's due timers (completion deadlines, expiry). The server calls it every tick.
    public func tick() {
        let now = clock()
        let actions = decide(now: now) { $0.advance(to: now) }
        if !actions.isEmpty { carryOut(actions, device: nil, now: now) }
    }

    // MARK: Reading

    public var counters: HubCounters { hubCounters.withLock { $0 } }
    public var policyCounters: PolicyCounters { engine.withLock { $0.counters } }
    public func journey(of id: APNsID) -> [DecisionLog.Entry] { engine.withLock { $0.log.journey(of: id) } }
    public func budget(device: DeviceID, bundleID: String) -> AppThrottleSnapshot? {
        let now = clock()
        return engine.withLock { $0.snapshot(device: device, bundleID: bundleID, now: now) }
    }
    public func conditions(of device: DeviceID) -> DeviceConditions { engine.withLock { $0.conditions(of: device) } }
    public var connectedCount: Int { sessions.withLock { $0.count } }
    public func isConnected(_ device: DeviceID) -> Bool { sessions.withLock { $0[device] != nil } }

    /// Closes every session with a reconnect hint (graceful shutdown).
    public func closeAll(reconnectAfterMilliseconds: Int) {
        for session in sessions.withLock({ Array($0.values) }) {
            session.close(reason: "shutdown", reconnectAfterMilliseconds: reconnectAfterMilliseconds)
        }
    }

    // MARK: Carrying out

    func carryOut(_ actions: [PolicyAction], device: DeviceID?, now: UnixTime) {
        var undeliverable: [(DeviceID, PushNotification)] = []
        var delivered = 0
        for action in actions {
            guard case .deliver(let push, let rule, let wake) = action,
                let target = device ?? registry.slot(of: push.deviceToken)
            else { continue }
            if let session = sessions.withLock({ $0[target] }) {
                session.send(.notification(delivery(push, rule: rule, wake: wake)))
                delivered += 1
            } else {
                undeliverable.append((target, push))
            }
        }
        hubCounters.withLock { $0.delivered += delivered }
        // The device left between the policy's decision and the write: the policy keeps the push as for
        // an offline device rather than lose it.
        let byDevice = Dictionary(grouping: undeliverable, by: \.0)
        for (target, entries) in byDevice {
            let pushes = entries.map(\.1)
            let (session, _) = decide(
                now: now,
                { engine -> ((any DeviceSession)?, [PolicyAction]) in
                    // It may have come back meanwhile: then it gets them now.
                    if let session = sessions.withLock({ $0[target] }) { return (session, []) }
                    return (nil, engine.undeliverable(pushes, device: target, now: now))
                }, persisting: { $0.1 })
            if let session {
                for case .deliver(let push, let rule, let wake) in actions where pushes.contains(where: { $0 === push })
                {
                    session.send(.notification(delivery(push, rule: rule, wake: wake)))
                }
            } else {
                hubCounters.withLock { $0.requeued += pushes.count }
            }
        }
    }

    // MARK: The store

    /// Runs `body` on the engine and, with a store, enqueues what it decided (the actions `persisting`
    /// picks from its result, the changed budgets, the new notification) before the engine's lock is
    /// released: the store sees decisions in the order the policy made them, so an outcome never
    /// reaches it before the insert of its notification. A push that is not `new` is already stored
    /// (another node accepted it): what the policy decided for it is written as an outcome.
    func decide<R>(
        now: UnixTime, inserting: (push: PushNotification, device: DeviceID, new: Bool)? = nil,
        _ body: (inout ThrottleEngine) -> R, persisting: (R) -> [PolicyAction]
    ) -> R {
        decideAndCommit(now: now, inserting: inserting, answeringOn: nil, body, persisting: persisting).result
    }

    /// `decide`, and with `answeringOn`, the future (on that loop) of the commit that carries what was
    /// decided: the provider's 200.
    func decideAndCommit<R>(
        now: UnixTime, inserting: (push: PushNotification, device: DeviceID, new: Bool)?,
        answeringOn eventLoop: (any EventLoop)?,
        _ body: (inout ThrottleEngine) -> R, persisting: (R) -> [PolicyAction]
    ) -> (result: R, committed: EventLoopFuture<Void>?) {
        engine.withLock { engine in
            let result = body(&engine)
            guard writer != nil else { return (result, nil) }
            var budgets: [String: [AppBudget]] = [:]
            for device in engine.takeChangedDevices() {
                guard let id = registry.deviceID(of: device) else { continue }
                budgets[id] = engine.budgets(of: device).map { AppBudget(bundleID: $0.bundleID, budget: $0.budget) }
            }
            let actions = persisting(result)
            let stored = inserting.map {
                Self.stored($0.push, deviceID: registry.deviceID(of: $0.device), actions, policy: policy)
            }
            let committed = persist(
                actions, budgets: budgets, now: now, decided: stored, new: inserting?.new ?? true,
                answeringOn: eventLoop)
            return (result, committed)
        }
    }

    func decide(now: UnixTime, _ body: (inout ThrottleEngine) -> [PolicyAction]) -> [PolicyAction] {
        decide(now: now, body, persisting: { $0 })
    }

    /// Writes what the policy decided: the new notification (if any), what became of held ones, and the
    /// changed budgets, in one change to the next commit; with `answeringOn`, that commit's future.
    private func persist(
        _ actions: [PolicyAction], budgets: [String: [AppBudget]], now: UnixTime, decided: StoredNotification?,
        new: Bool, answeringOn eventLoop: (any EventLoop)?
    ) -> EventLoopFuture<Void>? {
        guard let writer else { return nil }
        var outcomes: [NotificationOutcome] = []
        var inserting: StoredNotification?
        if let decided {
            if new {
                inserting = decided
            } else {
                outcomes.append(
                    NotificationOutcome(
                        apnsID: decided.notification.id, state: decided.state, rule: decided.rule, at: now))
            }
        }
        let decidedID = decided?.notification.id
        for action in actions {
            switch action {
            case .discard(let id, let rule) where id != decidedID:
                outcomes.append(NotificationOutcome(apnsID: id, state: .discarded, rule: rule, at: now))
            case .deliver(let push, let rule, _) where rule.isRelease && push.id != decidedID:
                outcomes.append(NotificationOutcome(apnsID: push.id, state: .pending, rule: rule, at: now))
            case .hold(let id, let rule) where id != decidedID:
                outcomes.append(NotificationOutcome(apnsID: id, state: .pending, rule: rule, at: now))
            default:
                continue
            }
        }
        func change(_ batch: inout StoreBatch) {
            if let inserting { batch.notifications.append(inserting) }
            batch.outcomes.append(contentsOf: outcomes)
            for (device, apps) in budgets { batch.budgets[device] = apps }
        }
        if let eventLoop { return writer.enqueue(answeringOn: eventLoop, change) }
        if inserting != nil || !outcomes.isEmpty || !budgets.isEmpty { writer.enqueue(change) }
        return nil
    }

    /// A new notification as the store keeps it, with what the policy decided for it.
    static func stored(
        _ push: PushNotification, deviceID: String?, _ actions: [PolicyAction], policy: PolicySettings
    ) -> StoredNotification {
        var state = NotificationState.pending
        var rule: Rule?
        for action in actions {
            switch action {
            case .deliver(let delivered, let decided, _) where delivered === push: rule = decided
            case .hold(push.id, let decided): rule = decided
            case .discard(push.id, let decided):
                state = .discarded
                rule = decided
            default: continue
            }
        }
        return StoredNotification(
            notification: push, expiresAt: policy.expiry(of: push), deviceID: deviceID, state: state, rule: rule)
    }

    /// Brings back what the store kept: devices and tokens, budgets, and pending notifications (held
    /// for their devices, which are offline until they connect). Returns how many were restored.
    @discardableResult
    public func restore(_ snapshot: StoreSnapshot) -> Int {
        registry.restore(devices: snapshot.devices, tokens: snapshot.tokens)
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

    /// Gives the policy a device's state from the store (at start, or when this node claims it): its
    /// budgets, and its pending notifications, held as for an offline device until it connects. Ones
    /// beyond the per-app limit are recorded as overflowed. Returns how many are held.
    @discardableResult
    func adopt(_ deviceID: String, budgets: [AppBudget], pending: [StoredNotification], now: UnixTime) -> Int {
        guard let slot = registry.slot(ofDevice: deviceID) else { return 0 }
        var bundles: [String] = []
        var held: [String: [HeldPush]] = [:]
        for stored in pending {
            let bundleID = stored.notification.bundleID
            if held[bundleID] == nil { bundles.append(bundleID) }
            // Over budget it waits for a piggyback as before; anything else was for a device now offline.
            let rule: Rule = stored.rule == .overBudget ? .overBudget : .offline
            held[bundleID, default: []].append(
                HeldPush(notification: stored.notification, expiresAt: stored.expiresAt, rule: rule))
        }
        var budget: [String: ThrottleBudget] = [:]
        for app in budgets {
            budget[app.bundleID] = app.budget
            if held[app.bundleID] == nil { bundles.append(app.bundleID) }
        }
        var overflow: [APNsID] = []
        var restored = 0
        engine.withLock { engine in
            for bundleID in bundles {
                let pushes = held[bundleID] ?? []
                let dropped = engine.restore(
                    device: slot, bundleID: bundleID, budget: budget[bundleID] ?? .untouched, held: pushes)
                overflow += dropped
                restored += pushes.count - dropped.count
            }
            _ = engine.takeChangedDevices()
        }
        if let writer, !overflow.isEmpty {
            writer.enqueue { batch in
                batch.outcomes += overflow.map {
                    NotificationOutcome(apnsID: $0, state: .discarded, rule: .overflow, at: now)
                }
            }
        }
        return restored
    }

    func delivery(_ push: PushNotification, rule: Rule, wake: Bool) -> Delivery {
        Delivery(
            apnsID: push.id.value, topic: push.topic.value, bundleID: push.bundleID, pushType: push.pushType.rawValue,
            priority: push.priority.rawValue, collapseID: push.collapseID?.value,
            kind: wake ? "background" : (push.notificationClass == .alerting ? "alert" : "other"),
            deadlineSeconds: wake ? deadlineSeconds : nil,
            rule: rule.rawValue, payload: String(decoding: push.payload, as: UTF8.self))
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
    public var delivered = 0
    public var acknowledged = 0
    public var keepAlives = 0
    public var requeued = 0
    public var acceptedWithoutDevice = 0
    public var closedForMisbehaviour = 0
    public var authenticationFailures = 0
    /// Several nodes: pushes stored here for devices another node owns, and routed here from others.
    public var routedOut = 0
    public var routedIn = 0
    /// Devices this node took over from another, and let go to another.
    public var claimed = 0
    public var released = 0

    public init() {}
}

public struct HubSettings: Sendable {
    /// The keep-alive interval devices are told to use (each adds its own phase and jitter).
    public var keepAliveSeconds: Int = 60
    /// Messages a device may send in a burst, then per second, before it is closed as flooding.
    public var messageBurst: Int = 200
    public var messagesPerSecond: Double = 50
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

    public init() {}
}
