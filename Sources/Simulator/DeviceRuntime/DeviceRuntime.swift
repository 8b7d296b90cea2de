import PushModel

/// One simulated iPhone's background rules as a pure state machine: events in (the user, the gateway's
/// deliveries, finished transfers, the passing of time), actions out (device-protocol messages,
/// transfers to start, what to count). No clock is read and nothing is sent here: the same code runs
/// against the wall clock in `pushgate simulate` and in virtual time. Each rule is numbered as in
/// docs/device-runtime.md (R1–R11); the figures come from the device's `IOSProfile`, what its apps do
/// from their `AppBehaviour`, chance from a seeded generator.
public struct DeviceRuntime: Sendable {
    public let profile: IOSProfile
    /// The apps, by bundle id (a copy: the runtime keeps them in `table`).
    public var apps: [String: AppRuntime] {
        Dictionary(uniqueKeysWithValues: table.list.map { ($0.bundleID, $0) })
    }
    /// One installed app, or nil.
    public func app(_ bundleID: String) -> AppRuntime? { table.find(bundleID) }
    /// The app in `slot`, or nil.
    public func app(_ slot: AppSlot) -> AppRuntime? { table.contains(slot) ? table[slot] : nil }
    /// The slot of app `bundleID`, or nil when it is not installed (the device protocol names apps by
    /// bundle id; the runtime's events and actions by slot).
    public func slot(of bundleID: String) -> AppSlot? { table.slot(of: bundleID) }
    /// The bundle id of the app in `slot` (which the runtime gave out).
    public func bundleID(of slot: AppSlot) -> String { table[slot].bundleID }
    /// The apps' slots, in installation order.
    public var slots: [AppSlot] { Array(table.slots) }
    var table = AppTable()
    public internal(set) var screenOn = false
    /// An interruption (an alert, a call) keeps the device awake until then (R4).
    var awakeUntil: UnixTime?
    public internal(set) var lowPowerMode = false
    public internal(set) var backgroundAppRefresh = true
    /// Told to the gateway with the conditions: a debugger attached (the throttle is off), and the
    /// background wakes a day the device's other apps draw from its daily budget.
    public internal(set) var debuggerAttached = false
    public internal(set) var otherAppsWakesPerDay: Double = 0
    /// Background tasks are charged, and running time counted, up to this time.
    var chargedTo: UnixTime
    /// Milliseconds apps ran in the background (a battery proxy): an app in a wake, a location wake or
    /// its DidEnterBackground runs for all of it; one kept only by background tasks runs only while the
    /// device is awake from iOS 7 (R4: its tasks are charged, and its work done, only then), and not at
    /// all once its tasks are used up (it is suspended or terminated).
    public internal(set) var backgroundRunMilliseconds: Int64 = 0
    var nextID = 1
    var random: FastRandom
    /// Foreground transfers paused while the device sleeps (R4: their task runs only while it is awake).
    var paused: Set<Int> = []

    public init(profile: IOSProfile, apps: [(bundleID: String, behaviour: AppBehaviour)], seed: UInt64, now: UnixTime) {
        self.profile = profile
        random = FastRandom(seed: seed)
        chargedTo = now
        for (bundleID, behaviour) in apps {
            var app = AppRuntime(bundleID: bundleID, behaviour: behaviour)
            if profile.backgroundFetch {
                app.fetch.schedule(after: now, interval: behaviour.fetchInterval, profile: profile)
            }
            table.append(app)
        }
    }

    /// Applies `event` at `now` (never earlier than the last event's time) and returns what follows.
    public mutating func handle(_ event: RuntimeEvent, at now: UnixTime) -> [RuntimeAction] {
        var actions: [RuntimeAction] = []
        handle(event, at: now, into: &actions)
        return actions
    }

    /// Applies `event` at `now` and appends what follows to `actions` (a buffer the caller reuses).
    public mutating func handle(_ event: RuntimeEvent, at now: UnixTime, into actions: inout [RuntimeAction]) {
        charge(to: now)
        switch event {
        case .userOpened(let app): if table.contains(app) { open(app, now: now, &actions) }
        case .userLeft(let app): if table.contains(app) { leave(app, now: now, &actions) }
        case .userForceQuit(let app): if table.contains(app) { forceQuit(app, &actions) }
        case .screen(let on):
            if on, !screenOn { screenCameOn(&actions) }
            screenOn = on
        case .lowPowerMode(let on):
            if lowPowerMode != on {
                lowPowerMode = on
                actions.append(conditions)
            }
        case .backgroundAppRefresh(let enabled):
            if backgroundAppRefresh != enabled {
                backgroundAppRefresh = enabled
                actions.append(conditions)
            }
        case .memoryPressure(let app):
            if table.state(of: app) == .suspended { terminate(app, .memoryPressure, &actions) }
        case .rebooted: reboot(&actions)
        case .widgetKitPushed(let app, let surface, let version):
            if table.contains(app), table[app].behaviour.surfaces.contains(surface), profile.version >= surface.since,
                version > (table[app].shown[surface] ?? .min)
            {
                table[app].shown[surface] = version
                actions.append(.widgetKitReloaded(app: app, surface: surface, version: version))
            }
        case .pushDelivered(let app, let apnsID, let silent):
            if silent {
                silentPush(app, apnsID: apnsID, now: now, &actions)
            } else {
                awakeUntil = max(awakeUntil ?? now, now.adding(seconds: profile.interruptionAwakeSeconds))
            }
        case .locationChanged(let app): if table.contains(app) { locationWake(app, now: now, &actions) }
        case .liveActivityUpdated(let app, let activity, let version, let timestamp):
            if table.contains(app) {
                liveActivityUpdated(app, activity: activity, version: version, timestamp: timestamp, &actions)
            }
        case .transferFinished(let id, let result): transferFinished(id, result, now: now, &actions)
        case .tick: break
        }
        runDue(now: now, &actions)
        pauseOrResume(now: now, &actions)
    }

    /// R4: from iOS 7 an app kept running by a background task runs only while the device is awake, so
    /// the foreground transfer its task protects stops while the device sleeps and goes on (from where
    /// it was) when it wakes, or when the app comes back to the foreground.
    mutating func pauseOrResume(now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard profile.opportunisticTasks else { return }
        // Most events find no protected transfer and nothing paused: no sets to build.
        var anyProtected = false
        for slot in table.slots where table[slot].state != .foreground {
            for task in table[slot].tasks where task.protects != nil { anyProtected = true }
        }
        guard anyProtected || !paused.isEmpty else { return }
        var protected: Set<Int> = []
        var exists: Set<Int> = []
        for slot in table.slots {
            exists.formUnion(table[slot].transfers.ids)
            guard table[slot].state != .foreground else { continue }
            for task in table[slot].tasks {
                if let id = task.protects, table[slot].transfers.contains(id) { protected.insert(id) }
            }
        }
        // Ended or cancelled meanwhile: nothing to resume.
        paused.formIntersection(exists)
        let shouldPause = isAwake(at: now) ? [] : protected
        for id in paused.subtracting(shouldPause).sorted() {
            paused.remove(id)
            actions.append(.resumeTransfer(id: id))
        }
        for id in shouldPause.subtracting(paused).sorted() {
            paused.insert(id)
            actions.append(.pauseTransfer(id: id))
        }
    }

    /// The earliest time something happens without an event: the shell sends `.tick` then.
    public func nextDeadline() -> UnixTime? {
        var earliest = Int64.max
        @inline(__always) func consider(_ time: UnixTime) { earliest = min(earliest, time.milliseconds) }
        // The end of an interruption's awake time changes something only for background tasks (charged
        // while awake, R4) and the transfers they protect: without them (a chat's alerts, mostly) it is
        // no deadline, and a forecast files no event that would do nothing.
        if let awakeUntil, awakeUntil > chargedTo, profile.opportunisticTasks, !paused.isEmpty || anyBackgroundTask {
            consider(awakeUntil)
        }
        let charging = !profile.opportunisticTasks || isAwake(at: chargedTo)
        for slot in table.slots {
            if let wake = table[slot].wake {
                consider(wake.deadline)
                if let at = wake.completesAt { consider(at) }
            }
            if let at = table[slot].watchdogAt { consider(at) }
            if let at = table[slot].locationEndsAt { consider(at) }
            for transfer in table[slot].transfers.items { if let at = transfer.startsAt { consider(at) } }
            if let at = table[slot].fetch.nextFetchAt, fetchAllowed(slot) { consider(at) }
            if charging, table[slot].state != .foreground {
                for task in table[slot].tasks {
                    if !task.expirationCalled {
                        consider(
                            chargedTo.adding(milliseconds: task.remaining - profile.expirationWarningSeconds * 1000))
                    }
                    consider(chargedTo.adding(milliseconds: task.remaining))
                }
            }
        }
        return earliest == .max ? nil : UnixTime(milliseconds: earliest)
    }

    /// The device's conditions, all of them, as the gateway is told.
    public var conditions: RuntimeAction {
        .conditions(
            lowPowerMode: lowPowerMode, backgroundAppRefreshOff: !backgroundAppRefresh,
            debuggerAttached: debuggerAttached,
            otherAppsWakesPerDay: otherAppsWakesPerDay)
    }

    /// The device restarts: every app that runs ends, without blame (its foreground transfers, tasks and
    /// wake with it); background sessions are the system's and go on; the gateway is told.
    mutating func reboot(_ actions: inout [RuntimeAction]) {
        for app in table.slots {
            switch table[app].state {
            case .foreground, .background, .suspended: terminate(app, .reboot, &actions)
            case .notRunning, .forceQuit: continue
            }
        }
        paused.removeAll()
        screenOn = false
        awakeUntil = nil
        actions.append(.rebooted)
    }

    /// Whether an app out of the foreground has a background task open.
    var anyBackgroundTask: Bool {
        for slot in table.slots where table[slot].state != .foreground && !table[slot].tasks.isEmpty { return true }
        return false
    }

    public func isAwake(at now: UnixTime) -> Bool {
        screenOn || (awakeUntil.map { now < $0 } ?? false)
    }

    // MARK: Time

    /// Charges open background tasks for the time since the last event: all of it on iOS 6, only the
    /// time the device was awake from iOS 7 (R4); and counts the time each app ran in the background
    /// (`backgroundRunMilliseconds`). The state is the same throughout: every change is an event.
    mutating func charge(to now: UnixTime) {
        let elapsed = now.milliseconds - chargedTo.milliseconds
        guard elapsed > 0 else { return }
        let awake: Int64 =
            !profile.opportunisticTasks || screenOn
            ? elapsed : max(0, min(now.milliseconds, (awakeUntil ?? chargedTo).milliseconds) - chargedTo.milliseconds)
        for app in table.slots where table[app].state == .background {
            let runtime = table[app]
            if runtime.wake != nil || runtime.locationEndsAt != nil || runtime.watchdogAt != nil {
                backgroundRunMilliseconds += elapsed
            } else if !runtime.tasks.isEmpty {
                // Kept by its tasks alone: it runs while they are charged, never past the longest one.
                let longest = runtime.tasks.map(\.remaining).max() ?? 0
                backgroundRunMilliseconds += max(0, min(awake, longest))
            }
        }
        if awake > 0 {
            for app in table.slots where table[app].state != .foreground && !table[app].tasks.isEmpty {
                for index in table[app].tasks.indices {
                    table[app].tasks[index].remaining -= awake
                }
            }
        }
        chargedTo = now
    }

    /// Everything due by `now`, until nothing more is (one step can make another due at once).
    mutating func runDue(now: UnixTime, _ actions: inout [RuntimeAction]) {
        for _ in 0..<64 {
            var progressed = false
            // In installation order (the order actions come out in).
            for app in table.slots { progressed = runDue(app, now: now, &actions) || progressed }
            for app in table.slots where table[app].state == .background && !table[app].busyInBackground {
                suspend(app, &actions)
                progressed = true
            }
            if !progressed { return }
        }
    }

    mutating func runDue(_ app: AppSlot, now: UnixTime, _ actions: inout [RuntimeAction]) -> Bool {
        if let at = table[app].watchdogAt, at <= now {
            terminate(app, .watchdog, &actions)
            return true
        }
        if let wake = table[app].wake {
            if let at = wake.completesAt, at <= now {
                finishWake(app, now: now, &actions)
                return true
            }
            if wake.deadline <= now {
                terminate(app, wake.kind == .sessionEvents ? .sessionHandlerNotCalled : .wakeOverrun, &actions)
                return true
            }
        }
        if let at = table[app].locationEndsAt, at <= now {
            table[app].locationEndsAt = nil
            return true
        }
        for (index, task) in table[app].tasks.enumerated() {
            if task.remaining <= 0 {
                terminate(app, .unendedTask, &actions)
                return true
            }
            if !task.expirationCalled, task.remaining <= profile.expirationWarningSeconds * 1000 {
                expire(app, taskAt: index, now: now, &actions)
                return true
            }
        }
        // In id order (the order they were asked for): a seeded run repeats.
        if let request = table[app].transfers.takeDue(by: now) {
            actions.append(.startTransfer(request))
            return true
        }
        if let at = table[app].fetch.nextFetchAt, at <= now, fetchAllowed(app) {
            table[app].fetch.nextFetchAt = nil
            beginWake(app, .fetch, seconds: profile.fetchCompletionSeconds, now: now, &actions)
            return true
        }
        return false
    }

    // MARK: Helpers

    /// R6: fetches need iOS 7+, an interval other than `never`, and an app that is neither force-quit nor
    /// in the foreground, on a device not in Low Power Mode and with Background App Refresh on.
    func fetchAllowed(_ app: AppSlot) -> Bool {
        let state = table[app].state
        return profile.backgroundFetch && state != .forceQuit && state != .foreground && !lowPowerMode
            && backgroundAppRefresh && table[app].wake == nil
    }

    mutating func takeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    mutating func roll(_ chance: Double) -> Bool {
        guard chance > 0 else { return false }
        guard chance < 1 else { return true }
        return Double(random.next() >> 11) / Double(1 << 53) < chance
    }
}
