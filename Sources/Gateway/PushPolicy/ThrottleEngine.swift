import PushModel

/// A device as the policy knows it: a dense index (0, 1, 2, …) that the device hub assigns and reuses,
/// so the engine finds a device's state by position, not by hashing (see docs/throttling.md).
public typealias DeviceSlot = UInt64

/// The silent-push policy for a whole fleet, still pure: it routes each event to the (device, app)
/// machines it concerns, spreads alert piggybacks across a device's apps, keeps the timers, the counters
/// and the decision log. The device hub owns one and calls it with the time; it appends what to do.
///
/// Memory is spent only where there is something to remember: a (device, app) whose bucket is full and
/// which holds nothing is dropped, and a device without such states costs one slot of 16 bytes.
public struct ThrottleEngine: Sendable {
    public var settings: PolicySettings
    public private(set) var counters = PolicyCounters()
    public private(set) var log: DecisionLog
    /// How many (device, app) states are kept (idle ones are dropped).
    public private(set) var stateCount = 0

    struct AppKey: Hashable, Sendable {
        var device: DeviceSlot
        var app: UInt32
    }

    struct AppEntry: Sendable {
        var app: UInt32
        var state: AppThrottle
    }

    struct DeviceState: Sendable {
        var conditions = DeviceConditions()
        var apps = SlotApps()
        /// The device-wide daily budget (`PolicySettings.budgetModel`).
        var daily = DeviceDailyBudget()
    }

    /// A device's app states: the first inline in the slot (most devices have one app with state, and
    /// this saves a cache miss per decision), the others in an array.
    struct SlotApps: Sendable {
        private var first: AppEntry?
        private var rest: [AppEntry] = []

        var count: Int { (first == nil ? 0 : 1) + rest.count }
        var isEmpty: Bool { first == nil }
        var ids: [UInt32] {
            guard let first else { return [] }
            return [first.app] + rest.map(\.app)
        }

        /// The only app's id when there is exactly one (the common case, without building an array).
        var soleID: UInt32? { rest.isEmpty ? first?.app : nil }

        /// 0 is the inline entry, i + 1 the i-th of the rest.
        func index(of app: UInt32) -> Int? {
            guard let first else { return nil }
            if first.app == app { return 0 }
            for index in rest.indices where rest[index].app == app { return index + 1 }
            return nil
        }

        func state(at index: Int) -> AppThrottle { index == 0 ? first!.state : rest[index - 1].state }

        /// Whether any app holds a push (a forecast asks after every decision: most hold nothing).
        var anyHeld: Bool {
            guard let first else { return false }
            if first.state.hasHeld { return true }
            for index in rest.indices where rest[index].state.hasHeld { return true }
            return false
        }

        /// Whether a delivery window now would take a held push of any app along (`AppThrottle.releasable`).
        func anyReleasable(conditions: DeviceConditions, settings: PolicySettings, now: UnixTime) -> Bool {
            guard let first else { return false }
            if first.state.releasable(conditions: conditions, settings: settings, now: now) { return true }
            for index in rest.indices
            where rest[index].state.releasable(conditions: conditions, settings: settings, now: now) {
                return true
            }
            return false
        }

        /// The app's next deadline, read in place.
        func nextDeadline(at index: Int) -> UnixTime? {
            index == 0 ? first?.state.nextDeadline : rest[index - 1].state.nextDeadline
        }

        mutating func withState<R>(at index: Int, _ body: (inout AppThrottle) -> R) -> R {
            if index == 0 { return body(&first!.state) }
            return body(&rest[index - 1].state)
        }

        mutating func append(_ entry: AppEntry) -> Int {
            if first == nil {
                first = entry
                return 0
            }
            rest.append(entry)
            return rest.count
        }

        mutating func remove(at index: Int) {
            if index == 0 {
                first = rest.isEmpty ? nil : rest.removeFirst()
            } else {
                rest.remove(at: index - 1)
            }
            if rest.isEmpty, rest.capacity > 0 { rest = [] }
        }
    }

    private var slots: [DeviceState] = []
    private var appIDs: [String: UInt32] = [:]
    private var lastBundle: (id: String, app: UInt32) = ("", .max)
    private var bundleIDs: [String] = []
    private var timers = TimerWheel<AppKey>()
    /// The due timers' keys, reused between `advance` calls.
    private var dueScratch: [AppKey] = []
    /// Devices whose stored state (an app's `ThrottleBudget`, or whether it has one) changed since
    /// `takeChangedDevices()`, when `tracksChanges` (for a store), and those of them that lost an app's.
    private var changed: [DeviceSlot] = []
    private var pruned: Set<DeviceSlot> = []
    public var tracksChanges = false

    public init(settings: PolicySettings = PolicySettings(), decisionLogCapacity: Int = 100_000) {
        self.settings = settings
        self.log = DecisionLog(capacity: decisionLogCapacity)
    }

    // MARK: Events

    /// A push accepted by the provider API for `device`.
    public mutating func received(
        _ push: PushNotification, device: DeviceSlot, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        counters.accepted(push.notificationClass)
        if log.capacity > 0 {
            log.record(push.id, .accepted(push.notificationClass), rule: nil, at: now)
            if let mismatch = push.mismatch { log.record(push.id, .pushTypeMismatch(mismatch), rule: nil, at: now) }
        }
        let app = appID(push.bundleID)
        var conditions = self.decisionConditions(device, now: now)
        let budget = conditions.wakesLeft
        let start = actions.count
        update(AppKey(device: device, app: app), now: now, actions: &actions) { app, settings, actions in
            app.received(push, conditions: conditions, settings: settings, now: now, into: &actions)
        }
        // An alert delivered to one app is a delivery window for the device's other apps too. (The
        // alerting app's own state may have been dropped as idle just now: any app with state is another.)
        if settings.alertPiggybackScope == .allApps, Int(device) < slots.count, !slots[Int(device)].apps.isEmpty,
            actions[start...].contains(where: { $0.isAlertDelivery(of: push.id) })
        {
            for other in slots[Int(device)].apps.ids where other != app {
                conditions.wakesLeft = Self.wakesLeft(budget, after: actions[start...])
                update(AppKey(device: device, app: other), now: now, actions: &actions, createIfMissing: false) {
                    app, settings, actions in
                    app.release(carrier: .alert, conditions: conditions, settings: settings, now: now, into: &actions)
                }
            }
        }
        record(actions[start...], device: device, now: now)
    }

    /// The device's keep-alive: every app's releasable held pushes go in its answer.
    public mutating func keepAlive(device: DeviceSlot, now: UnixTime, into actions: inout [PolicyAction]) {
        releaseAll(device, carrier: .keepAlive, now: now, into: &actions)
    }

    /// The device connected: what was stored while it was away (`held_offline`) is delivered; what was
    /// held for another reason keeps waiting (`AppThrottle.release`).
    public mutating func connected(device: DeviceSlot, now: UnixTime, into actions: inout [PolicyAction]) {
        ensureSlot(device)
        slots[Int(device)].conditions.online = true
        releaseAll(device, carrier: .reconnect, now: now, into: &actions)
    }

    public mutating func disconnected(device: DeviceSlot, now: UnixTime) {
        ensureSlot(device)
        slots[Int(device)].conditions.online = false
    }

    /// Low Power Mode, Background App Refresh, a debugger or the other apps' background traffic changed;
    /// when a condition ends (or a debugger turns the throttle off), held pushes go. `nil`: unchanged.
    public mutating func conditionsChanged(
        device: DeviceSlot, lowPowerMode: Bool, backgroundAppRefreshOff: Bool, debuggerAttached: Bool? = nil,
        otherAppsWakesPerDay: Double? = nil, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        var conditions = self.conditions(of: device)
        let debugger = debuggerAttached ?? conditions.debuggerAttached
        let ended =
            (conditions.lowPowerMode && !lowPowerMode)
            || (conditions.backgroundAppRefreshOff && !backgroundAppRefreshOff)
            || (!conditions.debuggerAttached && debugger)
        conditions.lowPowerMode = lowPowerMode
        conditions.backgroundAppRefreshOff = backgroundAppRefreshOff
        conditions.debuggerAttached = debugger
        ensureSlot(device)
        slots[Int(device)].conditions = conditions
        if let otherAppsWakesPerDay { slots[Int(device)].daily.othersPerDay = Float(max(0, otherAppsWakesPerDay)) }
        if ended { releaseAll(device, carrier: .conditionEnded, now: now, into: &actions) }
    }

    /// The device rebooted: its silent wakes wait out the herd window (`PolicySettings.herdSeconds`,
    /// dasd's ThunderingHerdPolicy); held ones go with the first delivery window after it.
    public mutating func rebooted(device: DeviceSlot, now: UnixTime) {
        ensureSlot(device)
        slots[Int(device)].conditions.herdUntil =
            settings.herdSeconds > 0 ? now.adding(seconds: settings.herdSeconds) : nil
    }

    /// App `bundleID`, interned: the engine's name for it in the calls that take a `PolicyApp`.
    public mutating func app(_ bundleID: String) -> PolicyApp { PolicyApp(id: appID(bundleID)) }

    public mutating func appStateChanged(
        device: DeviceSlot, bundleID: String, to state: AppState, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        appStateChanged(device: device, app: app(bundleID), to: state, now: now, into: &actions)
    }

    public mutating func appStateChanged(
        device: DeviceSlot, app policyApp: PolicyApp, to state: AppState, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        // Only an open can release anything: the budget is read for it alone.
        let conditions =
            state == .foreground ? self.decisionConditions(device, now: now) : self.conditions(of: device)
        let start = actions.count
        update(AppKey(device: device, app: policyApp.id), now: now, actions: &actions) { app, settings, actions in
            app.appStateChanged(to: state, conditions: conditions, settings: settings, now: now, into: &actions)
        }
        record(actions[start...], device: device, now: now)
    }

    /// The device said whether an app has frequent Live Activity pushes (`frequentPushesEnabled`).
    public mutating func frequentPushesChanged(device: DeviceSlot, bundleID: String, enabled: Bool, now: UnixTime) {
        var actions: [PolicyAction] = []
        update(AppKey(device: device, app: app(bundleID).id), now: now, actions: &actions, createIfMissing: enabled) {
            app, _, _ in
            app.frequentPushesChanged(to: enabled)
        }
    }

    /// The app was uninstalled from the device: its held pushes are discarded (token unregistered).
    public mutating func uninstalled(device: DeviceSlot, bundleID: String, now: UnixTime) -> [PolicyAction] {
        guard let app = appIDs[bundleID] else { return [] }
        var actions: [PolicyAction] = []
        update(AppKey(device: device, app: app), now: now, actions: &actions, createIfMissing: false) {
            app, _, actions in
            app.uninstalled(into: &actions)
        }
        record(actions[...], now: now)
        return actions
    }

    public mutating func completed(
        device: DeviceSlot, bundleID: String, id: APNsID, result: CompletionResult, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        guard let app = appIDs[bundleID] else { return }
        completed(device: device, app: PolicyApp(id: app), id: id, result: result, now: now, into: &actions)
    }

    public mutating func completed(
        device: DeviceSlot, app policyApp: PolicyApp, id: APNsID, result: CompletionResult, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        let start = actions.count
        update(AppKey(device: device, app: policyApp.id), now: now, actions: &actions, createIfMissing: false) {
            app, settings, actions in
            app.completed(id, result: result, settings: settings, now: now, into: &actions)
        }
        record(actions[start...], now: now)
    }

    /// The device did not wake `app` for wake `id` (`WakeRefusal`): the wake is forgotten without a penalty.
    public mutating func notWoken(
        device: DeviceSlot, app policyApp: PolicyApp, id: APNsID, reason: WakeRefusal, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        let start = actions.count
        update(AppKey(device: device, app: policyApp.id), now: now, actions: &actions, createIfMissing: false) {
            app, _, actions in
            app.notWoken(id, reason: reason, into: &actions)
        }
        record(actions[start...], device: device, now: now)
    }

    public mutating func notWoken(
        device: DeviceSlot, bundleID: String, id: APNsID, reason: WakeRefusal, now: UnixTime
    ) -> [PolicyAction] {
        guard let app = appIDs[bundleID] else { return [] }
        var actions: [PolicyAction] = []
        notWoken(device: device, app: PolicyApp(id: app), id: id, reason: reason, now: now, into: &actions)
        return actions
    }

    /// Runs the timers that are due: missed deadlines, expired held pushes, forgotten misses.
    public mutating func advance(to now: UnixTime, into actions: inout [PolicyAction]) {
        let start = actions.count
        var due = dueScratch
        dueScratch = []  // keeps the buffer uniquely referenced while the loop below reschedules
        due.removeAll(keepingCapacity: true)
        timers.takeDue(now.milliseconds, into: &due)
        defer { dueScratch = due }
        for key in due {
            guard let index = appIndex(key), let deadline = slots[Int(key.device)].apps.nextDeadline(at: index)
            else {
                continue  // gone, or nothing left to do
            }
            guard deadline.milliseconds <= now.milliseconds else {
                timers.schedule(deadline.milliseconds, key)  // filed in this second, due later in it
                continue
            }
            update(key, now: now, actions: &actions, createIfMissing: false, rescheduleAlways: true) {
                app, settings, actions in
                app.advance(settings: settings, now: now, into: &actions)
            }
        }
        record(actions[start...], now: now)
    }

    /// When `advance` should next be called (the start of the second the earliest timer falls in;
    /// calling earlier than a deadline is harmless).
    public var nextTimer: UnixTime? { timers.earliest.map { UnixTime(milliseconds: $0) } }

    // MARK: Array-returning forms, for callers that do not reuse a buffer

    public mutating func received(_ push: PushNotification, device: DeviceSlot, now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        received(push, device: device, now: now, into: &actions)
        return actions
    }
    public mutating func keepAlive(device: DeviceSlot, now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        keepAlive(device: device, now: now, into: &actions)
        return actions
    }
    public mutating func connected(device: DeviceSlot, now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        connected(device: device, now: now, into: &actions)
        return actions
    }
    public mutating func conditionsChanged(
        device: DeviceSlot, lowPowerMode: Bool, backgroundAppRefreshOff: Bool, debuggerAttached: Bool? = nil,
        otherAppsWakesPerDay: Double? = nil, now: UnixTime
    ) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        conditionsChanged(
            device: device, lowPowerMode: lowPowerMode, backgroundAppRefreshOff: backgroundAppRefreshOff,
            debuggerAttached: debuggerAttached, otherAppsWakesPerDay: otherAppsWakesPerDay, now: now, into: &actions)
        return actions
    }
    public mutating func appStateChanged(device: DeviceSlot, bundleID: String, to state: AppState, now: UnixTime)
        -> [PolicyAction]
    {
        var actions: [PolicyAction] = []
        appStateChanged(device: device, bundleID: bundleID, to: state, now: now, into: &actions)
        return actions
    }
    public mutating func completed(
        device: DeviceSlot, bundleID: String, id: APNsID, result: CompletionResult, now: UnixTime
    ) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        completed(device: device, bundleID: bundleID, id: id, result: result, now: now, into: &actions)
        return actions
    }
    public mutating func advance(to now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        advance(to: now, into: &actions)
        return actions
    }

    // MARK: Reading

    public func snapshot(device: DeviceSlot, bundleID: String, now: UnixTime) -> AppThrottleSnapshot? {
        guard let app = appIDs[bundleID], let state = state(AppKey(device: device, app: app)) else { return nil }
        return state.snapshot(settings: settings, now: now)
    }

    /// Whether a keep-alive from `device` at `now` would release a held push (one that is not silent,
    /// or a silent one whose app may be woken). While it would not, keep-alives change nothing until the
    /// device's conditions or an app's state change, a push is held, or a time-bound block ends
    /// (`nextReleasingKeepAlive`).
    public func keepAliveReleases(device: DeviceSlot, now: UnixTime) -> Bool {
        guard Int(device) < slots.count, slots[Int(device)].apps.anyHeld else { return false }
        let conditions = decisionConditions(device, now: now)
        // Read in place: a forecast asks after every decision (a copy of the slot retained its arrays).
        return slots[Int(device)].apps.anyReleasable(conditions: conditions, settings: settings, now: now)
    }

    /// The first instant from `now` at which a keep-alive from `device` would release a held push: now,
    /// the end of its herd window, or its daily budget's reset; nil if none of them would (then a
    /// change of conditions, an app's state or a new push is what can).
    public func nextReleasingKeepAlive(device: DeviceSlot, now: UnixTime) -> UnixTime? {
        guard Int(device) < slots.count, slots[Int(device)].apps.anyHeld else { return nil }
        if keepAliveReleases(device: device, now: now) { return now }
        var candidates: [UnixTime] = []
        if let herd = slots[Int(device)].conditions.herdUntil, herd > now { candidates.append(herd) }
        if settings.budgetModel.deviceDaily {
            candidates.append(slots[Int(device)].daily.resetsAt(device: device, now: now))
        }
        for at in candidates.sorted() where keepAliveReleases(device: device, now: at) { return at }
        return nil
    }

    public func conditions(of device: DeviceSlot) -> DeviceConditions {
        Int(device) < slots.count ? slots[Int(device)].conditions : DeviceConditions()
    }

    // MARK: Persistence

    /// The devices whose state changed since the last call (each once, in no particular order), when
    /// `tracksChanges` is on: the store writes their budgets.
    public mutating func takeChangedDevices() -> ChangedBudgets {
        guard !changed.isEmpty else { return ChangedBudgets() }
        defer {
            changed.removeAll(keepingCapacity: true)
            pruned.removeAll(keepingCapacity: true)
        }
        if changed.count == 1 { return ChangedBudgets(devices: changed, pruned: pruned) }
        var seen = Set<DeviceSlot>()
        return ChangedBudgets(devices: changed.filter { seen.insert($0).inserted }, pruned: pruned)
    }

    /// The device's per-app budgets, for the store (apps without state have a full bucket and are absent).
    public func budgets(of device: DeviceSlot) -> [(bundleID: String, budget: ThrottleBudget)] {
        guard Int(device) < slots.count else { return [] }
        let apps = slots[Int(device)].apps
        return apps.ids.compactMap { app in
            apps.index(of: app).map { (bundleIDs[Int(app)], apps.state(at: $0).budget) }
        }
    }

    /// Brings back a (device, app)'s state from the store, at start or when this node takes the device
    /// over: the device is offline until it connects. Its held pushes keep their reasons: those kept
    /// while it was away go out when it connects, the others wait as they did where they were held. A
    /// push held by Low Power Mode or Background App Refresh says the condition held when it was last
    /// known (it would have been released when the condition ended), so the device's conditions are
    /// restored from it, and the push goes when the device reports the condition over. `sentWakes` are
    /// wakes it paid for and that are sent again (their deadlines start when the device acknowledges
    /// them). Returns the ids of held pushes beyond the limit, which the caller records as overflowed.
    public mutating func restore(
        device: DeviceSlot, bundleID: String, budget: ThrottleBudget, held: [HeldPush], sentWakes: [APNsID] = []
    ) -> [APNsID] {
        ensureSlot(device)
        slots[Int(device)].conditions.online = false
        if held.contains(where: { $0.rule == .lowPowerMode || $0.rule == .deferredPowerSaving }) {
            slots[Int(device)].conditions.lowPowerMode = true
        }
        if held.contains(where: { $0.rule == .backgroundAppRefreshOff }) {
            slots[Int(device)].conditions.backgroundAppRefreshOff = true
        }
        var overflow: [APNsID] = []
        let state = AppThrottle(restoring: budget, held: held, sentWakes: sentWakes, overflow: &overflow)
        let key = AppKey(device: device, app: appID(bundleID))
        if let index = appIndex(key) {
            slots[Int(device)].apps.withState(at: index) { $0 = state }
        } else {
            _ = slots[Int(device)].apps.append(AppEntry(app: key.app, state: state))
            stateCount += 1
        }
        counters.heldNow += held.count - overflow.count
        counters.overflowed += overflow.count
        if let next = state.nextDeadline { timers.schedule(next.milliseconds, key) }
        return overflow
    }

    /// A delivery was written to the device again (`sends` times in all): the decision log shows it.
    public mutating func sentAgain(_ id: APNsID, sends: Int, now: UnixTime) {
        if log.capacity > 0 { log.recordIfKnown(id, .sentAgain(sends), at: now) }
    }

    /// The device acknowledged a delivery. A wake's completion deadline starts now (it was sent, maybe
    /// more than once, but the app runs from the delivery the device confirmed); the decision log
    /// records the acknowledgement.
    public mutating func acknowledged(
        _ id: APNsID, device: DeviceSlot, bundleID: String, wake: Bool, now: UnixTime
    ) {
        guard wake, let app = appIDs[bundleID] else {
            if log.capacity > 0 { log.recordIfKnown(id, .acknowledged, at: now) }
            return
        }
        acknowledged(id, device: device, app: PolicyApp(id: app), wake: wake, now: now)
    }

    public mutating func acknowledged(
        _ id: APNsID, device: DeviceSlot, app policyApp: PolicyApp, wake: Bool, now: UnixTime
    ) {
        if log.capacity > 0 { log.recordIfKnown(id, .acknowledged, at: now) }
        guard wake else { return }
        var none: [PolicyAction] = []
        update(AppKey(device: device, app: policyApp.id), now: now, actions: &none, createIfMissing: false) {
            app, settings, _ in
            app.delivered(id, settings: settings, now: now)
        }
    }

    /// The store could not write `id` (its provider was answered with an error): the policy forgets it, held
    /// or paid for as a wake, so it is never delivered; the decision log says so.
    public mutating func withdraw(_ id: APNsID, device: DeviceSlot, bundleID: String, now: UnixTime) {
        if log.capacity > 0 { log.recordIfKnown(id, .notStored, at: now) }
        guard let app = appIDs[bundleID] else { return }
        var wasHeld = false
        var none: [PolicyAction] = []
        update(AppKey(device: device, app: app), now: now, actions: &none, createIfMissing: false) {
            app, settings, _ in
            wasHeld = app.withdraw(id, settings: settings)
        }
        if wasHeld { counters.heldNow -= 1 }
    }

    /// Lets go of a device another node now runs the policy for (several nodes on one database): its
    /// apps' state is dropped here without any decision, and its held pushes are returned so the caller can
    /// hand them to the new owner (they stay pending in the store).
    public mutating func release(device: DeviceSlot) -> [HeldPush] {
        guard Int(device) < slots.count else { return [] }
        let apps = slots[Int(device)].apps
        var held: [HeldPush] = []
        for app in apps.ids {
            guard let index = apps.index(of: app) else { continue }
            held += apps.state(at: index).held
            stateCount -= 1
        }
        counters.heldNow -= held.count
        slots[Int(device)] = DeviceState()
        // Its timers find no state when they fire, and do nothing.
        return held
    }

    // MARK: Plumbing

    private mutating func appID(_ bundleID: String) -> UInt32 {
        // Most traffic is for one app: compare with the last one before hashing.
        if bundleID == lastBundle.id { return lastBundle.app }
        if let known = appIDs[bundleID] {
            lastBundle = (bundleID, known)
            return known
        }
        let app = UInt32(bundleIDs.count)
        appIDs[bundleID] = app
        bundleIDs.append(bundleID)
        return app
    }

    private mutating func ensureSlot(_ device: DeviceSlot) {
        let index = Int(device)
        if index >= slots.count {
            slots.append(contentsOf: repeatElement(DeviceState(), count: index - slots.count + 1))
        }
    }

    private func state(_ key: AppKey) -> AppThrottle? {
        appIndex(key).map { slots[Int(key.device)].apps.state(at: $0) }
    }

    private func appIndex(_ key: AppKey) -> Int? {
        let device = Int(key.device)
        guard device < slots.count else { return nil }
        return slots[device].apps.index(of: key.app)
    }

    /// Runs one app's machine in place, then keeps the bookkeeping right: drops the state when idle and
    /// files its timer when its next deadline moved earlier.
    private mutating func update(
        _ key: AppKey, now: UnixTime, actions: inout [PolicyAction], createIfMissing: Bool = true,
        rescheduleAlways: Bool = false, _ body: (inout AppThrottle, PolicySettings, inout [PolicyAction]) -> Void
    ) {
        let device = Int(key.device)
        if device >= slots.count {
            guard createIfMissing else { return }
            ensureSlot(key.device)
        }
        var index = appIndex(key)
        // What the store holds of the app (`ThrottleBudget`; none for an app without state): the device
        // counts as changed only if that changes — an alert to an app with no state leaves none.
        let stored = index.map { slots[device].apps.state(at: $0).budget }
        if index == nil {
            guard createIfMissing else { return }
            index = slots[device].apps.append(AppEntry(app: key.app, state: AppThrottle()))
            stateCount += 1
        }
        let settings = self.settings
        let (before, after, idle, budget) = slots[device].apps.withState(at: index!) {
            app -> (UnixTime?, UnixTime?, Bool, ThrottleBudget) in
            let before = app.nextDeadline
            body(&app, settings, &actions)
            return (before, app.nextDeadline, app.isIdle(settings: settings, now: now), app.budget)
        }
        if tracksChanges, !Self.holdsTheSame(stored, idle ? nil : budget, settings: settings) {
            changed.append(key.device)
            if idle { pruned.insert(key.device) }
        }
        if let next = after, rescheduleAlways || before.map({ next < $0 }) ?? true {
            timers.schedule(next.milliseconds, key)
        }
        if idle {
            slots[device].apps.remove(at: index!)
            stateCount -= 1
        }
    }

    /// Whether the store may keep `stored` for `now`: the same, or `now` is `stored` settled to a later
    /// time and nothing else changed (a completion that leaves no strikes: what it changes is the refill
    /// and decay since the last change, which whoever reads the store next computes from `stored`). A
    /// silent push's completion then writes nothing; its wake already did.
    static func holdsTheSame(_ stored: ThrottleBudget?, _ now: ThrottleBudget?, settings: PolicySettings) -> Bool {
        guard stored != now else { return true }
        guard let stored, let now, now.settledAt > stored.settledAt else { return false }
        return AppThrottle.settled(stored, to: UnixTime(milliseconds: now.settledAt), settings: settings) == now
    }

    private mutating func releaseAll(
        _ device: DeviceSlot, carrier: Carrier, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        guard Int(device) < slots.count, !slots[Int(device)].apps.isEmpty else { return }
        var conditions = self.decisionConditions(device, now: now)
        let budget = conditions.wakesLeft
        let start = actions.count
        if let sole = slots[Int(device)].apps.soleID {
            update(AppKey(device: device, app: sole), now: now, actions: &actions, createIfMissing: false) {
                app, settings, actions in
                app.release(carrier: carrier, conditions: conditions, settings: settings, now: now, into: &actions)
            }
        } else {
            for app in slots[Int(device)].apps.ids {
                // Each app's release leaves the device-wide budget smaller for the next.
                conditions.wakesLeft = Self.wakesLeft(budget, after: actions[start...])
                update(AppKey(device: device, app: app), now: now, actions: &actions, createIfMissing: false) {
                    app, settings, actions in
                    app.release(carrier: carrier, conditions: conditions, settings: settings, now: now, into: &actions)
                }
            }
        }
        record(actions[start...], device: device, now: now)
    }

    /// The conditions a decision for `device` reads at `now`: the device's own, with the wakes its daily
    /// budget still allows when that budget applies (`budgetModel`) and no debugger is attached.
    private func decisionConditions(_ device: DeviceSlot, now: UnixTime) -> DeviceConditions {
        var conditions = self.conditions(of: device)
        guard settings.budgetModel.deviceDaily, !conditions.debuggerAttached else { return conditions }
        conditions.wakesLeft =
            Int(device) < slots.count
            ? slots[Int(device)].daily.left(capacity: settings.deviceDailyCapacity, device: device, now: now)
            : settings.deviceDailyCapacity
        return conditions
    }

    /// The device-wide budget's wakes left of `base` after the wakes among `actions` (not yet spent).
    private static func wakesLeft(_ base: Int, after actions: ArraySlice<PolicyAction>) -> Int {
        base == .max ? base : max(0, base - budgetedWakes(in: actions))
    }

    /// Wakes the device-wide budget pays for among `actions`, less those the device did not run.
    private static func budgetedWakes(in actions: ArraySlice<PolicyAction>) -> Int {
        var count = 0
        for action in actions {
            switch action {
            case .deliver(_, let rule, true) where rule != .debuggerAttached: count += 1
            case .notWoken: count -= 1
            default: continue
            }
        }
        return count
    }

    /// Counts and logs `actions`; with `device`, the wakes among them are spent from its daily budget.
    private mutating func record(_ actions: ArraySlice<PolicyAction>, device: DeviceSlot? = nil, now: UnixTime) {
        for action in actions {
            counters.count(action)
            if log.capacity > 0 { log.record(action, at: now) }
        }
        guard let device, settings.budgetModel.deviceDaily, Int(device) < slots.count else { return }
        let wakes = Self.budgetedWakes(in: actions)
        if wakes != 0 { slots[Int(device)].daily.spend(wakes, device: device, now: now) }
    }
}

extension PolicyAction {
    func isAlertDelivery(of id: APNsID) -> Bool {
        if case .deliver(let push, .alerting, _) = self { return push.id == id }
        return false
    }
}

/// What the store must write of the policy's state since it last asked: the devices whose budgets
/// changed, and of those the ones that lost an app's state (it became idle and was dropped, so its row
/// goes). Only for those does the store look for rows of apps a device no longer lists.
public struct ChangedBudgets: Equatable, Sendable {
    public var devices: [DeviceSlot] = []
    public var pruned: Set<DeviceSlot> = []
}
