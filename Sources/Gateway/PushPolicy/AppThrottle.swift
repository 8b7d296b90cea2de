import PushModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The silent-push policy for one (device, app), as a pure state machine: each event is a `mutating`
/// method that takes the time and the device's conditions and appends the actions to carry out.
/// Nothing here reads a clock or does I/O.
///
/// State: the silent budget (a token bucket whose refill slows while the app is cooling off after a
/// missed deadline), misbehaviour strikes, the pushes held for later, and the background wakes
/// awaiting their completion.
public struct AppThrottle: Sendable, Equatable {
    // Kept compact (a fleet has millions of these): 56 bytes when nothing is pending.
    /// The silent budget, untouched until the first wake; its time is also the time strike decay is
    /// applied up to.
    private var bucket = TokenBucket(now: UnixTime(milliseconds: 0))
    /// Misbehaviour strikes, decaying with a half-life.
    private var strikes: Float = 0
    /// Until then the bucket refills `coolingSlowdown` times slower (milliseconds since the epoch).
    private var coolingUntil: Int64 = 0
    public private(set) var appState: AppState = .background
    /// The app has `NSSupportsLiveActivitiesFrequentUpdates` and its person has not turned them off
    /// (`frequentPushesEnabled`): its activities' budgets are the larger pair. Told by the device on every
    /// connection, not stored.
    public private(set) var frequentPushes = false
    /// When the user last opened the app (milliseconds; 0: not seen since the policy started), for
    /// `PolicySettings.inactiveAppDays`.
    private var launchedAt: Int64 = 0
    /// When `advance` next has something to do (milliseconds; `Int64.max`: nothing), kept up to date
    /// after every event so the engine's timer bookkeeping does not walk `pending`.
    private var nextDue: Int64 = .max
    /// Held pushes, wakes on their way, wakes awaiting completion, and recently missed wakes, in one
    /// array so that a resting state allocates nothing.
    private var pending: [Pending] = []

    enum Pending: Sendable, Equatable {
        case held(HeldPush)
        /// A wake the budget paid for, not yet acknowledged by the device: its deadline starts with the
        /// acknowledgement (a wake written to a connection that ended is sent again, not charged again).
        case sent(APNsID)
        case awaiting(APNsID, deadline: UnixTime)
        /// A wake whose deadline passed, kept until `forgetAt` so a late completion is recognised as late.
        case missed(APNsID, forgetAt: UnixTime)
        /// A Live Activity's priority-10 budget, named by the activity's update token; kept while it is
        /// not full.
        case activity(DeviceToken, TokenBucket)
        /// The app's daily budget of widget or control reloads (by push type); kept while its window
        /// has spent some.
        case reloads(PushType, ReloadBudget)
    }

    public var held: [HeldPush] {
        pending.compactMap {
            if case .held(let entry) = $0 { return entry }
            return nil
        }
    }

    var hasHeld: Bool {
        pending.contains {
            if case .held = $0 { return true }
            return false
        }
    }

    /// Whether a delivery window opening now would take a held push along: one that is not silent, or
    /// a silent one while its app may be woken. (Expired ones are discarded by `advance` anyway.)
    func releasable(conditions: DeviceConditions, settings: PolicySettings, now: UnixTime) -> Bool {
        guard conditions.online, hasHeld else { return false }
        let silentAllowed = silentWakeBlocked(conditions, settings, now) == nil
        return pending.contains {
            guard case .held(let entry) = $0 else { return false }
            if let capacity = settings.reloadBudget(for: entry.notification.pushType) {
                return reloadsLeft(entry.notification.pushType, capacity: capacity, now: now) > 0
            }
            return silentAllowed || !entry.isSilent
        }
    }

    /// Pushes beyond this many held for one app are discarded oldest first, whatever the storage mode.
    public static let maximumHeld = 100
    static let recentlyMissedKept = 8

    public init() {}

    // MARK: Events

    /// A notification for this app was accepted by the provider API.
    public mutating func received(
        _ push: PushNotification, conditions: DeviceConditions, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        let expiresAt = Self.expiry(of: push, settings: settings)
        if let expiresAt, expiresAt < now {
            actions.append(.discard(push.id, rule: .expiredOnArrival))
            return
        }
        guard conditions.online else { return keep(push, expiresAt, .offline, conditions, settings, &actions) }

        switch push.notificationClass {
        case .silent:
            if let blocked = silentWakeBlocked(conditions, settings, now) {
                return keep(push, expiresAt, blocked, conditions, settings, &actions)
            }
            if push.priority == .low { return keep(push, expiresAt, .lowPriority, conditions, settings, &actions) }
            if conditions.debuggerAttached {
                wake(push, rule: .debuggerAttached, into: &actions)
            } else if !settings.budgetModel.perApp || takeToken(settings: settings, now: now) {
                wake(push, rule: .onBudget, into: &actions)
            } else {
                keep(push, expiresAt, .overBudget, conditions, settings, &actions)
            }
        case .alerting:
            if push.priority == .low { return keep(push, expiresAt, .lowPriority, conditions, settings, &actions) }
            if push.priority == .conservePower, conditions.savingPower {
                return keep(push, expiresAt, .deferredPowerSaving, conditions, settings, &actions)
            }
            actions.append(.deliver(push, rule: .alerting, wake: false))
            release(carrier: .alert, conditions: conditions, settings: settings, now: now, into: &actions)
        case .other:
            if push.priority == .low { return keep(push, expiresAt, .lowPriority, conditions, settings, &actions) }
            if let capacity = settings.reloadBudget(for: push.pushType) {
                // A widget or control reload, within its app's daily budget (WidgetKit's).
                guard reloadsLeft(push.pushType, capacity: capacity, now: now) > 0 else {
                    return keep(push, expiresAt, .reloadBudget, conditions, settings, &actions)
                }
                spendReloads(push.pushType, 1, now: now)
                return actions.append(.deliver(push, rule: .reloadOnBudget, wake: false))
            }
            if push.pushType == .liveactivity {
                // Priority 5 does not count against the budget: it goes with the device's next window.
                if push.priority == .conservePower {
                    return keep(push, expiresAt, .opportunistic, conditions, settings, &actions)
                }
                guard takeActivityUpdate(push.deviceToken, settings: settings, now: now) else {
                    // Over budget: degraded to opportunistic delivery, not lost.
                    return keep(push, expiresAt, .liveActivityOverBudget, conditions, settings, &actions)
                }
                return actions.append(.deliver(push, rule: .liveActivityOnBudget, wake: false))
            }
            actions.append(.deliver(push, rule: .immediate, wake: false))
        }
    }

    /// A delivery window opened on the device (an alert, a keep-alive, the app opened, a power-saving
    /// condition ended): held pushes that may go now ride along without spending budget. A reconnect
    /// is not such a window (002 names an alert and a keep-alive): it hands over only what was kept
    /// while the device was away (`held_offline`), as APNs does; a push held over budget, at low
    /// priority or by a condition keeps its reason and waits for a window, its budget or its condition.
    public mutating func release(
        carrier: Carrier, conditions: DeviceConditions, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        guard conditions.online, hasHeld else { return }
        let silentAllowed = silentWakeBlocked(conditions, settings, now) == nil
        // The device-wide budget bounds how many wakes go at once.
        var allowance = conditions.debuggerAttached ? Int.max : conditions.wakesLeft
        // Held widget and control pushes go only as their daily budgets allow (nil: no budget).
        var widgets = settings.reloadBudget(for: .widgets).map { reloadsLeft(.widgets, capacity: $0, now: now) }
        var controls = settings.reloadBudget(for: .controls).map { reloadsLeft(.controls, capacity: $0, now: now) }
        var reloaded = (widgets: 0, controls: 0)
        let onlyKeptAway = carrier == .reconnect
        var woken: [PushNotification] = []
        pending.removeAll { item in
            guard case .held(let entry) = item, !onlyKeptAway || entry.rule == .offline else { return false }
            let type = entry.notification.pushType
            if let expiresAt = entry.expiresAt, expiresAt < now {
                actions.append(.discard(entry.notification.id, rule: .expired))
            } else if type == .widgets, let left = widgets {
                guard left > 0 else { return false }
                widgets = left - 1
                reloaded.widgets += 1
                actions.append(.deliver(entry.notification, rule: carrier.rule, wake: false))
            } else if type == .controls, let left = controls {
                guard left > 0 else { return false }
                controls = left - 1
                reloaded.controls += 1
                actions.append(.deliver(entry.notification, rule: carrier.rule, wake: false))
            } else if !entry.isSilent {
                actions.append(.deliver(entry.notification, rule: carrier.rule, wake: false))
            } else if silentAllowed, allowance > 0 {
                allowance -= 1
                woken.append(entry.notification)
            } else {
                return false
            }
            return true
        }
        for push in woken { wake(push, rule: carrier.rule, into: &actions) }
        if reloaded.widgets > 0 { spendReloads(.widgets, reloaded.widgets, now: now) }
        if reloaded.controls > 0 { spendReloads(.controls, reloaded.controls, now: now) }
        compact()
    }

    /// The device acknowledged a wake: the app is running now, and its completion deadline starts.
    /// Acknowledging anything else, or the same wake again, changes nothing.
    public mutating func delivered(_ id: APNsID, settings: PolicySettings, now: UnixTime) {
        guard let index = pending.firstIndex(of: .sent(id)) else { return }
        let deadline = now.adding(seconds: settings.completionDeadlineSeconds)
        pending[index] = .awaiting(id, deadline: deadline)
        nextDue = min(nextDue, deadline.milliseconds + 1)
    }

    /// A push the store could not write (its provider was answered with an error): forgotten, whether
    /// held or paid for as a wake not yet written (its token is given back). Returns whether it was held.
    public mutating func withdraw(_ id: APNsID, settings: PolicySettings) -> Bool {
        var wasHeld = false
        var wasSent = false
        pending.removeAll { item in
            switch item {
            case .held(let entry) where entry.notification.id == id:
                wasHeld = true
                return true
            case .sent(let sent) where sent == id:
                wasSent = true
                return true
            default: return false
            }
        }
        if wasSent { bucket.giveBack(capacity: settings.budgetCapacity) }
        compact()
        return wasHeld
    }

    /// The app was uninstalled (its token is unregistered): what it held can never be delivered.
    public mutating func uninstalled(into actions: inout [PolicyAction]) {
        pending.removeAll { item in
            guard case .held(let entry) = item else { return false }
            actions.append(.discard(entry.notification.id, rule: .tokenUnregistered))
            return true
        }
        compact()
    }

    /// The app's state changed. Opening a force-quit app, or one held as inactive (foreground),
    /// releases what it held.
    public mutating func appStateChanged(
        to state: AppState, conditions: DeviceConditions, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        let previous = appState
        let wasInactive = inactive(settings, now)
        appState = state
        guard state == .foreground else { return }
        launchedAt = now.milliseconds
        if previous == .forceQuit || wasInactive {
            release(carrier: .appOpened, conditions: conditions, settings: settings, now: now, into: &actions)
        }
    }

    /// The device said whether the app has frequent pushes (`frequentPushesEnabled`). Its activities'
    /// budgets take the new size from now on (a fuller bucket is cut to the smaller capacity).
    public mutating func frequentPushesChanged(to enabled: Bool) {
        frequentPushes = enabled
    }

    /// The device did not wake the app for wake `id` (it was force-quit, in a condition the gateway had
    /// not heard of, or its iOS has no silent notifications): forgotten, with no deadline and no penalty
    /// — the app never ran. (What it cost the budget stays spent, as for a wake the app ran.)
    public mutating func notWoken(_ id: APNsID, reason: WakeRefusal, into actions: inout [PolicyAction]) {
        guard
            let index = pending.firstIndex(where: {
                switch $0 {
                case .sent(id), .awaiting(id, _): return true
                default: return false
                }
            })
        else { return }
        pending.remove(at: index)
        actions.append(.notWoken(id, reason))
        compact()
    }

    /// The app answered a background wake.
    public mutating func completed(
        _ id: APNsID, result: CompletionResult, settings: PolicySettings, now: UnixTime,
        into actions: inout [PolicyAction]
    ) {
        for (index, item) in pending.enumerated() {
            switch item {
            case .sent(id):
                // Completed before its acknowledgement arrived: the app had it, and answered in time.
                pending.remove(at: index)
                actions.append(.completed(id, result))
                let change = result == .failed ? settings.failedStrike : -relief(for: result, settings)
                addStrikes(change, settings: settings, now: now)
                compact()
                return
            case .awaiting(id, let deadline):
                pending.remove(at: index)
                if now <= deadline {
                    actions.append(.completed(id, result))
                    let change = result == .failed ? settings.failedStrike : -relief(for: result, settings)
                    addStrikes(change, settings: settings, now: now)
                } else {
                    // The deadline passed but its timer has not fired yet: the miss first, then the late answer.
                    missed(id, settings: settings, now: now, into: &actions)
                    removeMissed(id)
                    actions.append(.completedLate(id, result))
                }
                compact()
                return
            case .missed(id, _):
                pending.remove(at: index)
                actions.append(.completedLate(id, result))
                compact()
                return
            default:
                continue
            }
        }
        // A completion for a wake this app never had (or long forgotten): nothing to do.
    }

    /// Time passed: deadlines that ran out, held pushes that expired.
    public mutating func advance(settings: PolicySettings, now: UnixTime, into actions: inout [PolicyAction]) {
        guard let next = nextDeadline, next <= now else { return }
        // Wakes past their deadline become `missed` in place (no temporary list); then expired held
        // pushes and forgotten misses leave.
        var index = pending.startIndex
        while index < pending.endIndex {
            if case .awaiting(let id, let deadline) = pending[index], deadline < now {
                pending[index] = .missed(id, forgetAt: now.adding(seconds: settings.lateCompletionWindowSeconds))
                penalise(id, settings: settings, now: now, into: &actions)
            }
            index += 1
        }
        let size = settings.liveActivityBudget(frequentPushes: frequentPushes)
        pending.removeAll { item in
            switch item {
            case .awaiting, .sent: return false
            case .activity(_, let budget): return budget.isFull(size, at: now)
            case .reloads(_, let budget): return budget.isFull(now: now)
            case .held(let entry):
                guard let expiresAt = entry.expiresAt, expiresAt < now else { return false }
                actions.append(.discard(entry.notification.id, rule: .expired))
                return true
            case .missed(_, let forgetAt):
                return forgetAt < now
            }
        }
        trimMissed()
        compact()
    }

    /// When `advance` next has something to do.
    public var nextDeadline: UnixTime? { nextDue == .max ? nil : UnixTime(milliseconds: nextDue) }

    /// Recomputes `nextDue` after `pending` changed.
    private mutating func refreshDue() {
        var earliest = Int64.max
        for index in pending.indices {
            switch pending[index] {
            case .awaiting(_, let deadline): earliest = min(earliest, deadline.milliseconds)
            case .held(let entry): if let at = entry.expiresAt { earliest = min(earliest, at.milliseconds) }
            case .missed(_, let forgetAt): earliest = min(earliest, forgetAt.milliseconds)
            case .sent, .activity, .reloads: continue
            }
        }
        nextDue = earliest == .max ? .max : earliest + 1
    }

    // MARK: Reading

    /// The budget at `now`, for lookups (Apple keeps this opaque; developers ask for it constantly).
    public func snapshot(settings: PolicySettings, now: UnixTime) -> AppThrottleSnapshot {
        var copy = self
        copy.settle(settings: settings, now: now)
        let rate = copy.rate(settings, now)
        let tokens = copy.bucket.exactly(rate, now: now)
        var nextRefill: UnixTime?
        if tokens < Double(settings.budgetCapacity) {
            let missing = 1 - (tokens - tokens.rounded(.down))
            nextRefill = now.adding(milliseconds: Int64((missing * rate.refillIntervalMilliseconds).rounded(.up)))
        }
        return AppThrottleSnapshot(
            budgetLeft: copy.bucket.left(rate, now: now), budgetCapacity: settings.budgetCapacity,
            nextRefill: nextRefill,
            held: held.map { HeldSummary(id: $0.notification.id, rule: $0.rule, expiresAt: $0.expiresAt) },
            strikes: Double(copy.strikes),
            coolingUntil: coolingUntil > now.milliseconds ? UnixTime(milliseconds: coolingUntil) : nil,
            awaitingCompletion: pending.compactMap {
                switch $0 {
                case .awaiting(let id, _), .sent(let id): return id
                default: return nil
                }
            },
            appState: appState, frequentPushes: frequentPushes)
    }

    /// Whether this state carries nothing worth keeping: nothing pending, not force-quit, not cooling,
    /// no strikes, and a full bucket.
    public func isIdle(settings: PolicySettings, now: UnixTime) -> Bool {
        guard appState != .forceQuit, !frequentPushes, coolingUntil <= now.milliseconds else { return false }
        // Its last launch is what the inactivity rule reads: kept while the rule is on.
        if settings.inactiveAppDays > 0, launchedAt > 0 { return false }
        // Live Activity budgets refilled to the brim are nothing to remember; anything else pending is.
        let size = settings.liveActivityBudget(frequentPushes: frequentPushes)
        let onlyFullBudgets = pending.allSatisfy {
            switch $0 {
            case .activity(_, let budget): return budget.isFull(size, at: now)
            case .reloads(_, let budget): return budget.isFull(now: now)
            default: return false
            }
        }
        guard onlyFullBudgets else { return false }
        if bucket.isUntouched { return strikes == 0 }
        var copy = self
        copy.settle(settings: settings, now: now)
        let rate = copy.rate(settings, now)
        return copy.strikes < 0.01 && copy.bucket.exactly(rate, now: now) >= Double(settings.budgetCapacity)
    }

    // MARK: Rules

    /// Why a silent push may not wake the app now, or nil: the device's own conditions first, then the
    /// throttle as the field describes it (off while a debugger is attached): the herd window after a
    /// reboot, an app not launched for a while, the device-wide budget.
    private func silentWakeBlocked(_ conditions: DeviceConditions, _ settings: PolicySettings, _ now: UnixTime) -> Rule?
    {
        if appState == .forceQuit { return .forceQuit }
        if conditions.lowPowerMode { return .lowPowerMode }
        if conditions.backgroundAppRefreshOff { return .backgroundAppRefreshOff }
        if conditions.debuggerAttached { return nil }
        if let herd = conditions.herdUntil, now < herd { return .thunderingHerd }
        if inactive(settings, now) { return .appInactive }
        if conditions.wakesLeft < 1 { return .deviceBudget }
        return nil
    }

    /// Not launched for `inactiveAppDays` (as far as the policy saw: an app it never saw opened is not).
    private func inactive(_ settings: PolicySettings, _ now: UnixTime) -> Bool {
        settings.inactiveAppDays > 0 && launchedAt > 0
            && now.milliseconds - launchedAt > Int64(settings.inactiveAppDays) * 86_400_000
    }

    /// A background wake: sent now, its deadline set when the device acknowledges it (`delivered`).
    private mutating func wake(_ push: PushNotification, rule: Rule, into actions: inout [PolicyAction]) {
        pending.append(.sent(push.id))
        actions.append(.deliver(push, rule: rule, wake: true))
    }

    /// Holds a push for later, as storage allows: a collapse id replaces its namesake; newest-only keeps
    /// one silent push (one push of any kind for an offline device, as APNs does); `expiration: 0` is
    /// never stored.
    private mutating func keep(
        _ push: PushNotification, _ expiresAt: UnixTime?, _ rule: Rule, _ conditions: DeviceConditions,
        _ settings: PolicySettings, _ actions: inout [PolicyAction]
    ) {
        if push.expiration == .immediateOnly {
            actions.append(.discard(push.id, rule: .notStoredExpirationZero))
            return
        }
        let newestOnly = settings.heldStorage == .newestOnly
        let offline = !conditions.online
        var heldCount = 0
        pending.removeAll { item in
            guard case .held(let entry) = item else { return false }
            if let collapseID = push.collapseID, entry.notification.collapseID == collapseID {
                actions.append(.discard(entry.notification.id, rule: .coalescedCollapseID))
                return true
            }
            if newestOnly, offline || (push.notificationClass == .silent && entry.isSilent) {
                actions.append(.discard(entry.notification.id, rule: .coalescedNewest))
                return true
            }
            // A Live Activity shows only its newest content: a newer update for the same activity replaces
            // a held one, whatever the storage mode.
            if push.pushType == .liveactivity, entry.notification.pushType == .liveactivity,
                entry.notification.deviceToken == push.deviceToken
            {
                actions.append(.discard(entry.notification.id, rule: .coalescedNewest))
                return true
            }
            // A widget or a control shows its newest content: one reload waits, the newest.
            if push.pushType == .widgets || push.pushType == .controls, entry.notification.pushType == push.pushType {
                actions.append(.discard(entry.notification.id, rule: .coalescedNewest))
                return true
            }
            heldCount += 1
            return false
        }
        let limit = newestOnly ? Self.maximumHeld : min(settings.heldStorage.limit, Self.maximumHeld)
        while heldCount >= limit,
            let oldest = pending.firstIndex(where: {
                if case .held = $0 { return true }
                return false
            })
        {
            if case .held(let entry) = pending.remove(at: oldest) {
                actions.append(.discard(entry.notification.id, rule: .overflow))
            }
            heldCount -= 1
        }
        pending.append(.held(HeldPush(notification: push, expiresAt: expiresAt, rule: rule)))
        refreshDue()
        actions.append(.hold(push.id, rule: rule))
    }

    static func expiry(of push: PushNotification, settings: PolicySettings) -> UnixTime? {
        switch push.expiration {
        case .immediateOnly: return nil
        case .storeByDefault: return push.receivedAt.adding(seconds: settings.defaultStorageSeconds)
        case .at(let seconds): return UnixTime(seconds: seconds)
        }
    }

    /// Frees the pending array's storage when nothing is left in it.
    private mutating func compact() {
        if pending.isEmpty, pending.capacity > 0 { pending = [] }
        refreshDue()
    }

    private mutating func removeMissed(_ id: APNsID) {
        if let index = pending.firstIndex(where: {
            if case .missed(id, _) = $0 { return true }
            return false
        }) {
            pending.remove(at: index)
        }
    }

    // MARK: Budget and strikes

    /// Spends one of the activity's priority-10 updates if its budget has one (a bucket is made full on
    /// first use; full buckets of other activities are let go on the way).
    private mutating func takeActivityUpdate(_ activity: DeviceToken, settings: PolicySettings, now: UnixTime) -> Bool {
        let size = settings.liveActivityBudget(frequentPushes: frequentPushes)
        pending.removeAll { item in
            guard case .activity(let token, let budget) = item, token != activity else { return false }
            return budget.isFull(size, at: now)
        }
        let index = pending.firstIndex {
            if case .activity(activity, _) = $0 { return true }
            return false
        }
        var budget = TokenBucket(now: now)
        if let index, case .activity(_, let kept) = pending[index] { budget = kept }
        let taken = budget.take(size, now: now)
        if let index {
            pending[index] = .activity(activity, budget)
        } else {
            pending.append(.activity(activity, budget))
        }
        return taken
    }

    /// Reloads of `type` left in the app's daily budget at `now`.
    private func reloadsLeft(_ type: PushType, capacity: Int, now: UnixTime) -> Int {
        for item in pending {
            if case .reloads(type, let budget) = item { return budget.left(capacity: capacity, now: now) }
        }
        return capacity
    }

    /// Spends `count` reloads of `type` (the budget is made on first use).
    private mutating func spendReloads(_ type: PushType, _ count: Int, now: UnixTime) {
        for index in pending.indices {
            if case .reloads(type, var budget) = pending[index] {
                budget.spend(count, now: now)
                pending[index] = .reloads(type, budget)
                return
            }
        }
        var budget = ReloadBudget(now: now)
        budget.spend(count, now: now)
        pending.append(.reloads(type, budget))
    }

    /// Priority-10 updates left in each Live Activity's budget that is not full, by update token.
    public func liveActivityBudgets(settings: PolicySettings, now: UnixTime) -> [DeviceToken: Int] {
        let size = settings.liveActivityBudget(frequentPushes: frequentPushes)
        var left: [DeviceToken: Int] = [:]
        for item in pending {
            if case .activity(let token, let budget) = item { left[token] = budget.left(size, now: now) }
        }
        return left
    }

    private mutating func takeToken(settings: PolicySettings, now: UnixTime) -> Bool {
        settle(settings: settings, now: now)
        return bucket.takeSettled(capacity: settings.budgetCapacity)
    }

    /// Brings the bucket and the strikes up to `now`: refill (slower while cooling off, at the normal
    /// rate after) and strike decay.
    private mutating func settle(settings: PolicySettings, now: UnixTime) {
        let to = now.milliseconds
        let from = bucket.settledAt
        guard to > from else { return }
        let base = settings.refillIntervalMilliseconds
        var gained = 0.0
        if from < coolingUntil {
            let coolingEnd = min(to, coolingUntil)
            gained += Double(coolingEnd - from) / (base * settings.coolingSlowdown)
            if to > coolingUntil { gained += Double(to - coolingUntil) / base }
        } else {
            gained = Double(to - from) / base
        }
        bucket.refill(adding: gained, capacity: settings.budgetCapacity, to: now)
        if strikes > 0, settings.strikeHalfLifeSeconds > 0, from > 0 {
            let halfLives = Double(to - from) / Double(settings.strikeHalfLifeSeconds * 1000)
            strikes = Float(Double(strikes) * pow2(-halfLives))
            if strikes < 0.001 { strikes = 0 }
        }
    }

    /// The silent budget's rate at `now` (slower while cooling off).
    private func rate(_ settings: PolicySettings, _ now: UnixTime) -> TokenBucket.Rate {
        TokenBucket.Rate(
            capacity: settings.budgetCapacity,
            refillIntervalMilliseconds: now.milliseconds < coolingUntil
                ? settings.refillIntervalMilliseconds * settings.coolingSlowdown : settings.refillIntervalMilliseconds)
    }

    private func relief(for result: CompletionResult, _ settings: PolicySettings) -> Double {
        switch result {
        case .newData: return settings.newDataRelief
        case .noData: return settings.noDataRelief
        case .failed: return 0
        }
    }

    private mutating func addStrikes(_ amount: Double, settings: PolicySettings, now: UnixTime) {
        settle(settings: settings, now: now)
        strikes = Float(max(0, Double(strikes) + amount))
    }

    /// A wake's deadline passed: the app was terminated. Its bucket empties and refills slowly for a
    /// cooling period that doubles with each strike.
    private mutating func missed(
        _ id: APNsID, settings: PolicySettings, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        pending.append(.missed(id, forgetAt: now.adding(seconds: settings.lateCompletionWindowSeconds)))
        penalise(id, settings: settings, now: now, into: &actions)
        trimMissed()
    }

    /// A wake's deadline passed: the app was terminated. Empty bucket, a strike, a cooling period.
    private mutating func penalise(
        _ id: APNsID, settings: PolicySettings, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        actions.append(.deadlineMissed(id))
        addStrikes(settings.missStrike, settings: settings, now: now)
        bucket.empty()
        let cooling = Double(settings.coolingBaseSeconds) * pow2(max(0, Double(strikes) - 1))
        let seconds = Int64(min(Double(settings.coolingMaxSeconds), cooling))
        coolingUntil = max(coolingUntil, now.adding(seconds: seconds).milliseconds)
    }

    /// Keeps at most `recentlyMissedKept` missed wakes, forgetting the ones to be forgotten soonest.
    private mutating func trimMissed() {
        while true {
            var count = 0
            var oldest: Int?
            var oldestAt = Int64.max
            for index in pending.indices {
                guard case .missed(_, let forgetAt) = pending[index] else { continue }
                count += 1
                if forgetAt.milliseconds < oldestAt { (oldest, oldestAt) = (index, forgetAt.milliseconds) }
            }
            guard count > Self.recentlyMissedKept, let oldest else { return }
            pending.remove(at: oldest)
        }
    }
}

// In this file: it sets the private state.
extension AppThrottle {
    public var budget: ThrottleBudget {
        ThrottleBudget(
            tokens: bucket.tokens, strikes: strikes, settledAt: bucket.settledAt, coolingUntil: coolingUntil,
            appState: appState)
    }

    /// `budget` brought up to `now` as the policy brings a state up before each change: refilled, its
    /// strikes decayed. A budget and what it settles to are the same state read at two times: a reader
    /// of either at a later time settles it to the same (up to `Float` rounding).
    static func settled(_ budget: ThrottleBudget, to now: UnixTime, settings: PolicySettings) -> ThrottleBudget {
        var none: [APNsID] = []
        var app = AppThrottle(restoring: budget, held: [], overflow: &none)
        app.settle(settings: settings, now: now)
        return app.budget
    }

    /// A state brought back from the store: its budget and its held pushes (oldest first; beyond
    /// `maximumHeld`, the oldest are returned as overflow to discard), and the wakes it paid for that the
    /// device has not acknowledged (they are sent again; their deadlines start with the acknowledgement).
    /// Wakes that were awaiting their completion are not restored: the app was not running while the
    /// gateway was down.
    public init(restoring budget: ThrottleBudget, held: [HeldPush], sentWakes: [APNsID] = [], overflow: inout [APNsID])
    {
        self.init()
        bucket = TokenBucket(tokens: budget.tokens, settledAt: budget.settledAt)
        strikes = budget.strikes
        coolingUntil = budget.coolingUntil
        appState = budget.appState
        let kept = held.suffix(Self.maximumHeld)
        overflow.append(contentsOf: held.dropLast(kept.count).map(\.notification.id))
        pending = sentWakes.map { .sent($0) } + kept.map { .held($0) }
        compact()
    }
}

@inline(__always)
func pow2(_ x: Double) -> Double { exp2(x) }

/// A (device, app)'s policy state as a lookup shows it.
public struct AppThrottleSnapshot: Sendable, Equatable, Codable {
    public var budgetLeft: Int
    public var budgetCapacity: Int
    public var nextRefill: UnixTime?
    public var held: [HeldSummary]
    public var strikes: Double
    public var coolingUntil: UnixTime?
    public var awaitingCompletion: [APNsID]
    public var appState: AppState
    /// The app's Live Activities have the larger budget (`frequentPushesEnabled`).
    public var frequentPushes = false
}

public struct HeldSummary: Sendable, Equatable, Codable {
    public var id: APNsID
    public var rule: Rule
    public var expiresAt: UnixTime?
}
