import PushModel

/// A device as the policy knows it: an opaque number the device hub assigns.
public typealias DeviceID = UInt64

/// The silent-push policy for a whole fleet, still pure: it routes each event to the (device, app)
/// machines it concerns, spreads alert piggybacks across a device's apps, keeps the timers, the counters
/// and the decision log. The device hub owns one and calls it with the time; it returns what to do.
public struct ThrottleEngine: Sendable {
    public var settings: PolicySettings
    public private(set) var counters = PolicyCounters()
    public private(set) var log: DecisionLog

    struct AppKey: Hashable, Sendable {
        var device: DeviceID
        var app: UInt32
    }

    struct DeviceRecord: Sendable {
        var conditions = DeviceConditions()
        var apps: [UInt32] = []
    }

    private var apps: [AppKey: AppThrottle] = [:]
    private var devices: [DeviceID: DeviceRecord] = [:]
    private var appIDs: [String: UInt32] = [:]
    private var bundleIDs: [String] = []
    private var timers = TimerHeap<AppKey>()

    public init(settings: PolicySettings = PolicySettings(), decisionLogCapacity: Int = 100_000) {
        self.settings = settings
        self.log = DecisionLog(capacity: decisionLogCapacity)
    }

    // MARK: Events

    /// A push accepted by the provider API for `device`.
    public mutating func received(_ push: PushNotification, device: DeviceID, now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        received(push, device: device, now: now, into: &actions)
        return actions
    }

    public mutating func received(
        _ push: PushNotification, device: DeviceID, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        switch push.notificationClass {
        case .silent: counters.silentAccepted += 1
        case .alerting: counters.alertingAccepted += 1
        case .other: counters.otherAccepted += 1
        }
        log.record(push.id, "accepted \(push.notificationClass.rawValue)", rule: nil, at: now)
        let key = self.key(device, push.bundleID)
        let conditions = devices[device]?.conditions ?? DeviceConditions()
        let start = actions.count
        update(key, now: now, actions: &actions) { app, settings, actions in
            app.received(push, conditions: conditions, settings: settings, now: now, into: &actions)
        }
        // An alert delivered to one app is a delivery window for the device's other apps too.
        let deliveredAlert = actions[start...].contains { action in
            if case .deliver(let delivered, .alerting, _) = action { return delivered.id == push.id }
            return false
        }
        if deliveredAlert, settings.alertPiggybackScope == .allApps {
            for other in devices[device]?.apps ?? [] where other != key.app {
                release(
                    AppKey(device: device, app: other), carrier: .alert, conditions: conditions, now: now,
                    into: &actions)
            }
        }
        record(actions[start...], now: now)
    }

    /// The device's keep-alive: every app's releasable held pushes go in its answer.
    public mutating func keepAlive(device: DeviceID, now: UnixTime) -> [PolicyAction] {
        releaseAll(device, carrier: .keepAlive, now: now)
    }

    /// The device connected: what was stored while it was away is delivered.
    public mutating func connected(device: DeviceID, now: UnixTime) -> [PolicyAction] {
        devices[device, default: DeviceRecord()].conditions.online = true
        return releaseAll(device, carrier: .reconnect, now: now)
    }

    public mutating func disconnected(device: DeviceID, now: UnixTime) {
        devices[device, default: DeviceRecord()].conditions.online = false
    }

    /// Low Power Mode or Background App Refresh changed; when a condition ends, held pushes go.
    public mutating func conditionsChanged(
        device: DeviceID, lowPowerMode: Bool, backgroundAppRefreshOff: Bool, now: UnixTime
    ) -> [PolicyAction] {
        var record = devices[device, default: DeviceRecord()]
        let ended =
            (record.conditions.lowPowerMode && !lowPowerMode)
            || (record.conditions.backgroundAppRefreshOff && !backgroundAppRefreshOff)
        record.conditions.lowPowerMode = lowPowerMode
        record.conditions.backgroundAppRefreshOff = backgroundAppRefreshOff
        devices[device] = record
        return ended ? releaseAll(device, carrier: .conditionEnded, now: now) : []
    }

    public mutating func appStateChanged(device: DeviceID, bundleID: String, to state: AppState, now: UnixTime)
        -> [PolicyAction]
    {
        var actions: [PolicyAction] = []
        let conditions = devices[device]?.conditions ?? DeviceConditions()
        update(key(device, bundleID), now: now, actions: &actions) { app, settings, actions in
            app.appStateChanged(to: state, conditions: conditions, settings: settings, now: now, into: &actions)
        }
        record(actions[...], now: now)
        return actions
    }

    public mutating func completed(
        device: DeviceID, bundleID: String, id: APNsID, result: CompletionResult, now: UnixTime
    ) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        update(key(device, bundleID), now: now, actions: &actions) { app, settings, actions in
            app.completed(id, result: result, settings: settings, now: now, into: &actions)
        }
        record(actions[...], now: now)
        return actions
    }

    /// Runs the timers that are due: missed deadlines, expired held pushes.
    public mutating func advance(to now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        while let due = timers.popDue(now.milliseconds) {
            guard let app = apps[due.key], let deadline = app.nextDeadline, deadline.milliseconds <= now.milliseconds
            else {
                continue  // rescheduled or gone since
            }
            update(due.key, now: now, actions: &actions) { app, settings, actions in
                app.advance(settings: settings, now: now, into: &actions)
            }
        }
        record(actions[...], now: now)
        return actions
    }

    /// When `advance` should next be called.
    public var nextTimer: UnixTime? { timers.earliest.map { UnixTime(milliseconds: $0) } }

    // MARK: Reading

    public func snapshot(device: DeviceID, bundleID: String, now: UnixTime) -> AppThrottleSnapshot? {
        guard let app = appIDs[bundleID], let state = apps[AppKey(device: device, app: app)] else { return nil }
        return state.snapshot(settings: settings, now: now)
    }

    public func conditions(of device: DeviceID) -> DeviceConditions {
        devices[device]?.conditions ?? DeviceConditions()
    }

    /// How many (device, app) states are kept (idle ones are dropped).
    public var stateCount: Int { apps.count }

    // MARK: Plumbing

    private mutating func key(_ device: DeviceID, _ bundleID: String) -> AppKey {
        let app: UInt32
        if let known = appIDs[bundleID] {
            app = known
        } else {
            app = UInt32(bundleIDs.count)
            appIDs[bundleID] = app
            bundleIDs.append(bundleID)
        }
        return AppKey(device: device, app: app)
    }

    /// Runs one app's machine, then drops it if it is idle and re-arms its timer if it has one.
    private mutating func update(
        _ key: AppKey, now: UnixTime, actions: inout [PolicyAction],
        _ body: (inout AppThrottle, PolicySettings, inout [PolicyAction]) -> Void
    ) {
        var app = apps.removeValue(forKey: key) ?? AppThrottle()
        let before = app.nextDeadline
        body(&app, settings, &actions)
        if app.isIdle(settings: settings, now: now) {
            if let index = devices[key.device]?.apps.firstIndex(of: key.app) {
                devices[key.device]!.apps.remove(at: index)
            }
            if devices[key.device].map({ $0.apps.isEmpty && $0.conditions == DeviceConditions() }) ?? false {
                devices.removeValue(forKey: key.device)
            }
            return
        }
        if !(devices[key.device]?.apps.contains(key.app) ?? false) {
            devices[key.device, default: DeviceRecord()].apps.append(key.app)
        }
        if let next = app.nextDeadline, next != before { timers.push(next.milliseconds, key) }
        apps[key] = app
    }

    private mutating func release(
        _ key: AppKey, carrier: Carrier, conditions: DeviceConditions, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        guard apps[key] != nil else { return }
        update(key, now: now, actions: &actions) { app, settings, actions in
            app.release(carrier: carrier, conditions: conditions, settings: settings, now: now, into: &actions)
        }
    }

    private mutating func releaseAll(_ device: DeviceID, carrier: Carrier, now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        let conditions = devices[device]?.conditions ?? DeviceConditions()
        for app in devices[device]?.apps ?? [] {
            release(
                AppKey(device: device, app: app), carrier: carrier, conditions: conditions, now: now, into: &actions)
        }
        record(actions[...], now: now)
        return actions
    }

    private mutating func record(_ actions: ArraySlice<PolicyAction>, now: UnixTime) {
        for action in actions {
            counters.count(action)
            log.record(action, at: now)
        }
    }
}
