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
    private var table = AppTable()
    /// The apps in installation order (the order actions come out in).
    private var order: [String] = []
    public private(set) var screenOn = false
    /// An interruption (an alert, a call) keeps the device awake until then (R4).
    private var awakeUntil: UnixTime?
    public private(set) var lowPowerMode = false
    public private(set) var backgroundAppRefresh = true
    /// Background tasks are charged up to this time.
    private var chargedTo: UnixTime
    private var nextID = 1
    private var random: FastRandom
    /// Foreground transfers paused while the device sleeps (R4: their task runs only while it is awake).
    private var paused: Set<Int> = []

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
            order.append(bundleID)
        }
    }

    /// Applies `event` at `now` (never earlier than the last event's time) and returns what follows.
    public mutating func handle(_ event: RuntimeEvent, at now: UnixTime) -> [RuntimeAction] {
        var actions: [RuntimeAction] = []
        charge(to: now)
        switch event {
        case .userOpened(let bundleID): open(bundleID, now: now, &actions)
        case .userLeft(let bundleID): leave(bundleID, now: now, &actions)
        case .userForceQuit(let bundleID): forceQuit(bundleID, &actions)
        case .screen(let on): screenOn = on
        case .lowPowerMode(let on):
            if lowPowerMode != on {
                lowPowerMode = on
                actions.append(.conditions(lowPowerMode: on, backgroundAppRefreshOff: !backgroundAppRefresh))
            }
        case .backgroundAppRefresh(let enabled):
            if backgroundAppRefresh != enabled {
                backgroundAppRefresh = enabled
                actions.append(.conditions(lowPowerMode: lowPowerMode, backgroundAppRefreshOff: !enabled))
            }
        case .memoryPressure(let bundleID):
            if table.find(bundleID)?.state == .suspended { terminate(bundleID, .memoryPressure, &actions) }
        case .pushDelivered(let bundleID, let apnsID, let silent):
            if silent {
                silentPush(bundleID, apnsID: apnsID, now: now, &actions)
            } else {
                awakeUntil = max(awakeUntil ?? now, now.adding(seconds: profile.interruptionAwakeSeconds))
            }
        case .locationChanged(let bundleID): locationWake(bundleID, now: now, &actions)
        case .transferFinished(let id, let result): transferFinished(id, result, now: now, &actions)
        case .tick: break
        }
        runDue(now: now, &actions)
        pauseOrResume(now: now, &actions)
        return actions
    }

    /// R4: from iOS 7 an app kept running by a background task runs only while the device is awake, so
    /// the foreground transfer its task protects stops while the device sleeps and goes on (from where
    /// it was) when it wakes, or when the app comes back to the foreground.
    private mutating func pauseOrResume(now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard profile.opportunisticTasks else { return }
        // Most events find no protected transfer and nothing paused: no sets to build.
        var anyProtected = false
        for index in table.list.indices where table[position: index].state != .foreground {
            for task in table[position: index].tasks where task.protects != nil { anyProtected = true }
        }
        guard anyProtected || !paused.isEmpty else { return }
        var protected: Set<Int> = []
        var exists: Set<Int> = []
        for index in table.list.indices {
            exists.formUnion(table[position: index].transfers.keys)
            guard table[position: index].state != .foreground else { continue }
            for task in table[position: index].tasks {
                if let id = task.protects, table[position: index].transfers[id] != nil { protected.insert(id) }
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
        if let awakeUntil, awakeUntil > chargedTo { consider(awakeUntil) }
        let charging = !profile.opportunisticTasks || isAwake(at: chargedTo)
        for index in table.list.indices {
            if let wake = table[position: index].wake {
                consider(wake.deadline)
                if let at = wake.completesAt { consider(at) }
            }
            if let at = table[position: index].watchdogAt { consider(at) }
            if let at = table[position: index].locationEndsAt { consider(at) }
            for transfer in table[position: index].transfers.values { if let at = transfer.startsAt { consider(at) } }
            if let at = table[position: index].fetch.nextFetchAt, fetchAllowed(table[position: index]) { consider(at) }
            if charging, table[position: index].state != .foreground {
                for task in table[position: index].tasks {
                    if !task.expirationCalled {
                        consider(chargedTo.adding(milliseconds: task.remaining - profile.expirationWarningSeconds * 1000))
                    }
                    consider(chargedTo.adding(milliseconds: task.remaining))
                }
            }
        }
        return earliest == .max ? nil : UnixTime(milliseconds: earliest)
    }

    public func isAwake(at now: UnixTime) -> Bool {
        screenOn || (awakeUntil.map { now < $0 } ?? false)
    }

    // MARK: Time

    /// Charges open background tasks for the time since the last event: all of it on iOS 6, only the
    /// time the device was awake from iOS 7 (R4).
    private mutating func charge(to now: UnixTime) {
        let elapsed = now.milliseconds - chargedTo.milliseconds
        guard elapsed > 0 else { return }
        let awake: Int64 =
            !profile.opportunisticTasks || screenOn
            ? elapsed : max(0, min(now.milliseconds, (awakeUntil ?? chargedTo).milliseconds) - chargedTo.milliseconds)
        if awake > 0 {
            for bundleID in order where table[bundleID].state != .foreground && !table[bundleID].tasks.isEmpty {
                for index in table[bundleID].tasks.indices { table[bundleID].tasks[index].remaining -= awake }
            }
        }
        chargedTo = now
    }

    /// Everything due by `now`, until nothing more is (one step can make another due at once).
    private mutating func runDue(now: UnixTime, _ actions: inout [RuntimeAction]) {
        for _ in 0..<64 {
            var progressed = false
            for bundleID in order { progressed = runDue(bundleID, now: now, &actions) || progressed }
            for bundleID in order where table[bundleID].state == .background && !table[bundleID].busyInBackground {
                suspend(bundleID, &actions)
                progressed = true
            }
            if !progressed { return }
        }
    }

    private mutating func runDue(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) -> Bool {
        guard let position = table.index(of: bundleID) else { return false }
        if let at = table[position: position].watchdogAt, at <= now {
            terminate(bundleID, .watchdog, &actions)
            return true
        }
        if let wake = table[position: position].wake {
            if let at = wake.completesAt, at <= now {
                finishWake(bundleID, now: now, &actions)
                return true
            }
            if wake.deadline <= now {
                terminate(bundleID, wake.kind == .sessionEvents ? .sessionHandlerNotCalled : .wakeOverrun, &actions)
                return true
            }
        }
        if let at = table[position: position].locationEndsAt, at <= now {
            table[bundleID].locationEndsAt = nil
            return true
        }
        for (index, task) in table[position: position].tasks.enumerated() {
            if task.remaining <= 0 {
                terminate(bundleID, .unendedTask, &actions)
                return true
            }
            if !task.expirationCalled, task.remaining <= profile.expirationWarningSeconds * 1000 {
                expire(bundleID, taskAt: index, now: now, &actions)
                return true
            }
        }
        // By id, not the dictionary's order (which changes from process to process): a seeded run repeats.
        if table[position: position].transfers.values.contains(where: { $0.startsAt.map { $0 <= now } ?? false }) {
            for id in table[position: position].transfers.keys.sorted() {
                let transfer = table[position: position].transfers[id]!
                guard let at = transfer.startsAt, at <= now else { continue }
                table[bundleID].transfers[id]!.startsAt = nil
                actions.append(.startTransfer(transfer.request))
                return true
            }
        }
        if let at = table[position: position].fetch.nextFetchAt, at <= now, fetchAllowed(table[position: position]) {
            table[bundleID].fetch.nextFetchAt = nil
            beginWake(bundleID, .fetch, seconds: profile.fetchCompletionSeconds, now: now, &actions)
            return true
        }
        return false
    }

    // MARK: The user

    /// R1: the user opens the app (launching it if it was not running or force-quit).
    private mutating func open(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let app = table.find(bundleID), app.state != .foreground else { return }
        screenOn = true
        table[bundleID].state = .foreground
        table[bundleID].watchdogAt = nil
        table[bundleID].locationEndsAt = nil
        // Back in the foreground the app ends its background tasks: they protected work it now does here.
        table[bundleID].tasks.removeAll()
        actions.append(.appState(bundleID: bundleID, state: .foreground))
        // Session events that waited for a launch arrive now (R10, without launch events).
        deliverFinishedEvents(bundleID, &actions)
        actions.append(.opened(bundleID: bundleID, contentVersion: table[bundleID].contentVersion))
        table[bundleID].fetch.recordLaunch(at: now)
        if profile.backgroundFetch {
            table[bundleID].fetch.schedule(after: now, interval: app.behaviour.fetchInterval, profile: profile)
        }
        // The app refreshes what it shows.
        if app.wake == nil {
            startTransfer(bundleID, .manifest, session: .foreground, forWake: nil, now: now, &actions)
        }
    }

    /// R5: the app moves to the background; DidEnterBackground runs, and open foreground work is
    /// protected by a background task.
    private mutating func leave(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let app = table.find(bundleID), app.state == .foreground else { return }
        table[bundleID].state = .background
        actions.append(.appState(bundleID: bundleID, state: .background))
        if app.behaviour.didEnterBackgroundMilliseconds > profile.didEnterBackgroundSeconds * 1000 {
            table[bundleID].watchdogAt = now.adding(seconds: profile.didEnterBackgroundSeconds)
            return
        }
        let foregroundWork = app.transfers.filter { $0.value.request.session == .foreground }.keys.sorted()
        for id in foregroundWork {
            table[bundleID].tasks.append(
                AppRuntime.BackgroundTask(
                    id: takeID(), remaining: profile.backgroundTaskAllowanceSeconds * 1000,
                    forgetsEnd: roll(app.behaviour.forgetsEndingTask), protects: id))
        }
    }

    /// R1: a force-quit app is cut off: its transfers (background sessions too) stop, and it gets no
    /// wakes or fetches until the user opens it again.
    private mutating func forceQuit(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        guard let app = table.find(bundleID), app.state != .forceQuit else { return }
        for id in app.transfers.keys.sorted() { actions.append(.cancelTransfer(id: id)) }
        var cleared = AppRuntime(bundleID: bundleID, behaviour: app.behaviour)
        cleared.state = .forceQuit
        cleared.contentVersion = app.contentVersion
        cleared.fetch = app.fetch
        table[bundleID] = cleared
        actions.append(.appState(bundleID: bundleID, state: .forceQuit))
    }

    // MARK: Wakes

    /// R7: a silent push wakes the app for `silentWakeSeconds`, unless it was force-quit or the device
    /// is in Low Power Mode or has Background App Refresh off.
    private mutating func silentPush(
        _ bundleID: String, apnsID: String, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let app = table.find(bundleID) else { return }
        guard app.state != .forceQuit, !lowPowerMode, backgroundAppRefresh else {
            actions.append(.wakeRefused(bundleID: bundleID, apnsID: apnsID))
            return
        }
        beginWake(bundleID, .silentPush(apnsID: apnsID), seconds: profile.silentWakeSeconds, now: now, &actions)
    }

    /// R8: a location event gives the app `locationWakeSeconds` in the background.
    private mutating func locationWake(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let app = table.find(bundleID), app.state != .forceQuit, app.state != .foreground else { return }
        resumeInBackground(bundleID, &actions)
        actions.append(.woken(bundleID: bundleID, kind: .location))
        table[bundleID].locationEndsAt = now.adding(seconds: profile.locationWakeSeconds)
    }

    /// A silent push or a fetch: the app runs in the background, fetches the manifest, and must call
    /// its completion handler within `seconds` (in the foreground it is not terminated for being late).
    private mutating func beginWake(
        _ bundleID: String, _ kind: WakeKind, seconds: Int64, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let app = table.find(bundleID) else { return }
        if let current = app.wake {
            // One wake at a time: a second one is answered with the first's result when that completes.
            // (Rare: the gateway spaces wakes out by the budget.)
            if case .silentPush(let apnsID) = kind {
                actions.append(.complete(apnsID: apnsID, bundleID: bundleID, result: current.result))
            }
            return
        }
        let foreground = app.state == .foreground
        if !foreground { resumeInBackground(bundleID, &actions) }
        actions.append(.woken(bundleID: bundleID, kind: kind))
        table[bundleID].wake = AppRuntime.Wake(
            kind: kind, deadline: foreground ? UnixTime(milliseconds: .max) : now.adding(seconds: seconds),
            forgets: roll(app.behaviour.forgetsCompletion))
        let id = startTransfer(bundleID, .manifest, session: .foreground, forWake: kind, now: now, &actions)
        table[bundleID].wake!.waitingOn.insert(id)
    }

    /// The app calls its wake's completion handler.
    private mutating func finishWake(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let wake = table[bundleID].wake else { return }
        table[bundleID].wake = nil
        switch wake.kind {
        case .silentPush(let apnsID):
            actions.append(.complete(apnsID: apnsID, bundleID: bundleID, result: wake.result))
        case .fetch:
            table[bundleID].fetch.recordFetch(at: now, result: wake.result)
            table[bundleID].fetch.schedule(
                after: now, interval: table[bundleID].behaviour.fetchInterval, profile: profile)
        case .location, .sessionEvents:
            break
        }
    }

    // MARK: Transfers

    @discardableResult
    private mutating func startTransfer(
        _ bundleID: String, _ content: TransferContent, session: TransferSession, forWake: WakeKind?,
        resumeFrom: Int64 = 0, now: UnixTime, _ actions: inout [RuntimeAction]
    ) -> Int {
        let id = takeID()
        var slowdown = 1.0
        var startsAt: UnixTime?
        if case .background(let discretionary) = session {
            slowdown = profile.backgroundSessionSlowdown
            if discretionary, profile.discretionaryDelaySeconds > 0 {
                startsAt = now.adding(seconds: profile.discretionaryDelaySeconds)
            }
        }
        let request = TransferRequest(
            id: id, bundleID: bundleID, content: content, session: session, resumeFrom: resumeFrom, slowdown: slowdown)
        table[bundleID].transfers[id] = AppRuntime.Transfer(request: request, startsAt: startsAt, forWake: forWake)
        if startsAt == nil { actions.append(.startTransfer(request)) }
        return id
    }

    private mutating func transferFinished(
        _ id: Int, _ result: TransferResult, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let bundleID = order.first(where: { table[$0].transfers[id] != nil }),
            let transfer = table[bundleID].transfers.removeValue(forKey: id)
        else { return }  // cancelled meanwhile
        let state = table[bundleID].state
        if case .background = transfer.request.session, state == .suspended || state == .notRunning {
            // R10: the system launches the app in the background for its session's events.
            table[bundleID].finishedEvents.append((id, result, transfer.forWake))
            relaunchForSessionEvents(bundleID, now: now, &actions)
            return
        }
        apply(bundleID, transfer, result, now: now, &actions)
    }

    /// What a finished transfer means to the running app.
    private mutating func apply(
        _ bundleID: String, _ transfer: AppRuntime.Transfer, _ result: TransferResult, now: UnixTime,
        _ actions: inout [RuntimeAction]
    ) {
        let app = table[bundleID]
        let id = transfer.request.id
        // A task that protected this transfer is ended (unless the app forgets: R2/R3).
        if let index = app.tasks.firstIndex(where: { $0.protects == id }), !app.tasks[index].forgetsEnd {
            table[bundleID].tasks.remove(at: index)
        }
        let waitedOn = app.wake?.waitingOn.contains(id) == true
        if waitedOn { table[bundleID].wake!.waitingOn.remove(id) }
        switch result {
        case .manifest(let version):
            guard version > (app.contentVersion ?? Int.min) else {
                if waitedOn { decideWake(bundleID, result: "noData", now: now) }
                return
            }
            if waitedOn, app.state != .foreground, app.behaviour.downloadsInBackgroundSession,
                profile.backgroundSessions
            {
                // R9: started in the background, so discretionary; the handler is called at once.
                startTransfer(
                    bundleID, .item(version: version), session: .background(discretionary: true),
                    forWake: transfer.forWake, now: now, &actions)
                decideWake(bundleID, result: "newData", now: now)
            } else {
                let item = startTransfer(
                    bundleID, .item(version: version), session: .foreground, forWake: transfer.forWake, now: now,
                    &actions)
                if waitedOn { table[bundleID].wake!.waitingOn.insert(item) }
            }
        case .item(let version, _):
            if version > (table[bundleID].contentVersion ?? Int.min) {
                table[bundleID].contentVersion = version
                actions.append(.contentUpdated(bundleID: bundleID, version: version, by: transfer.forWake))
            }
            if waitedOn { decideWake(bundleID, result: "newData", now: now) }
        case .failed:
            if waitedOn { decideWake(bundleID, result: "failed", now: now) }
        }
    }

    /// The app knows its wake's result: it calls the handler after its own work (unless it forgets).
    private mutating func decideWake(_ bundleID: String, result: String, now: UnixTime) {
        guard var wake = table[bundleID].wake, wake.waitingOn.isEmpty else { return }
        wake.result = result
        if !wake.forgets { wake.completesAt = now.adding(milliseconds: table[bundleID].behaviour.workMilliseconds) }
        table[bundleID].wake = wake
    }

    /// R10: launched (or resumed) in the background with `handleEventsForBackgroundURLSession`: the
    /// app takes the events and must call the handler within `sessionEventsSeconds`.
    private mutating func relaunchForSessionEvents(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction])
    {
        let app = table[bundleID]
        if app.state == .notRunning { actions.append(.relaunched(bundleID: bundleID)) }
        resumeInBackground(bundleID, &actions)
        actions.append(.woken(bundleID: bundleID, kind: .sessionEvents))
        deliverFinishedEvents(bundleID, &actions)
        let forgets = roll(app.behaviour.forgetsSessionHandler)
        table[bundleID].wake = AppRuntime.Wake(
            kind: .sessionEvents, deadline: now.adding(seconds: profile.sessionEventsSeconds),
            completesAt: forgets ? nil : now.adding(milliseconds: app.behaviour.workMilliseconds), forgets: forgets)
    }

    private mutating func deliverFinishedEvents(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        let events = table[bundleID].finishedEvents
        table[bundleID].finishedEvents.removeAll()
        for event in events {
            if case .item(let version, _) = event.result, version > (table[bundleID].contentVersion ?? Int.min) {
                table[bundleID].contentVersion = version
                actions.append(.contentUpdated(bundleID: bundleID, version: version, by: event.forWake))
            }
        }
    }

    // MARK: Background tasks

    /// R3: the expiration handler runs; a well-behaved app ends the task, moving a protected download to
    /// a background session first (R11).
    private mutating func expire(_ bundleID: String, taskAt index: Int, now: UnixTime, _ actions: inout [RuntimeAction])
    {
        table[bundleID].tasks[index].expirationCalled = true
        let task = table[bundleID].tasks[index]
        guard !task.forgetsEnd else { return }
        table[bundleID].tasks.remove(at: index)
        guard let id = task.protects, let transfer = table[bundleID].transfers[id] else { return }
        let behaviour = table[bundleID].behaviour
        if case .item(let version) = transfer.request.content, behaviour.movesDownloadToBackgroundSession,
            profile.backgroundSessions
        {
            table[bundleID].transfers.removeValue(forKey: id)
            let moved = takeID()
            // Started while the app is in the background: discretionary (R9); it starts from the resume data.
            let request = TransferRequest(
                id: moved, bundleID: bundleID, content: .item(version: version),
                session: .background(discretionary: true), resumeFrom: TransferRequest.resumeFromCancelled,
                slowdown: profile.backgroundSessionSlowdown)
            table[bundleID].transfers[moved] = AppRuntime.Transfer(
                request: request, startsAt: nil, forWake: transfer.forWake)
            actions.append(.moveToBackgroundSession(from: id, to: request))
        } else {
            // Work cut off: lost.
            table[bundleID].transfers.removeValue(forKey: id)
            actions.append(.cancelTransfer(id: id))
        }
    }

    // MARK: States

    private mutating func resumeInBackground(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        guard table[bundleID].state != .background else { return }
        table[bundleID].state = .background
        actions.append(.appState(bundleID: bundleID, state: .background))
    }

    /// Nothing keeps the app running: it is suspended, and its foreground transfers stop with it.
    private mutating func suspend(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        cancelForegroundTransfers(bundleID, &actions)
        table[bundleID].state = .suspended
        actions.append(.appState(bundleID: bundleID, state: .suspended))
    }

    /// Terminated by the system: its process ends (foreground transfers, tasks, the wake); background
    /// sessions go on (R9).
    private mutating func terminate(_ bundleID: String, _ cause: TerminationCause, _ actions: inout [RuntimeAction]) {
        cancelForegroundTransfers(bundleID, &actions)
        table[bundleID].wake = nil
        table[bundleID].tasks.removeAll()
        table[bundleID].watchdogAt = nil
        table[bundleID].locationEndsAt = nil
        table[bundleID].state = .notRunning
        actions.append(.terminated(bundleID: bundleID, cause: cause))
        actions.append(.appState(bundleID: bundleID, state: .notRunning))
    }

    private mutating func cancelForegroundTransfers(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        let foreground = table[bundleID].transfers.filter { $0.value.request.session == .foreground }.keys.sorted()
        for id in foreground {
            table[bundleID].transfers.removeValue(forKey: id)
            actions.append(.cancelTransfer(id: id))
        }
    }

    // MARK: Helpers

    /// R6: fetches need iOS 7+, an interval other than `never`, and an app that is neither force-quit nor
    /// in the foreground, on a device not in Low Power Mode and with Background App Refresh on.
    private func fetchAllowed(_ app: AppRuntime) -> Bool {
        profile.backgroundFetch && app.state != .forceQuit && app.state != .foreground && !lowPowerMode
            && backgroundAppRefresh && app.wake == nil
    }

    private mutating func takeID() -> Int {
        defer { nextID += 1 }
        return nextID
    }

    private mutating func roll(_ chance: Double) -> Bool {
        guard chance > 0 else { return false }
        guard chance < 1 else { return true }
        return Double(random.next() >> 11) / Double(1 << 53) < chance
    }
}
