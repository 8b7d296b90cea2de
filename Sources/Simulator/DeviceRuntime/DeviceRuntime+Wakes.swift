import PushModel

/// Background wakes: silent pushes and location changes wake a suspended app for a limited time (R6–R8).
extension DeviceRuntime {
    /// R7: a silent push wakes the app for `silentWakeSeconds`, unless its iOS has no silent
    /// notifications (before 7), it was force-quit, or the device is in Low Power Mode or has Background
    /// App Refresh off.
    mutating func silentPush(
        _ app: AppSlot, apnsID: APNsID, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let state = table.state(of: app) else { return }
        if let reason = wakeRefusal(state) {
            actions.append(.wakeRefused(app: app, apnsID: apnsID, reason: reason))
            return
        }
        beginWake(app, .silentPush(apnsID: apnsID), seconds: profile.silentWakeSeconds, now: now, &actions)
    }

    /// Why a silent push would not wake an app in `state` now, or nil.
    func wakeRefusal(_ state: AppState) -> WakeRefusal? {
        if !profile.silentPushes { return .noSilentPushes }
        if state == .forceQuit { return .forceQuit }
        if lowPowerMode { return .lowPowerMode }
        if !backgroundAppRefresh { return .backgroundAppRefreshOff }
        return nil
    }

    /// R8: a location event gives the app `locationWakeSeconds` in the background.
    mutating func locationWake(_ app: AppSlot, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let state = table.state(of: app), state != .forceQuit, state != .foreground else { return }
        resumeInBackground(app, &actions)
        actions.append(.woken(app: app, kind: .location))
        table[app].locationEndsAt = now.adding(seconds: profile.locationWakeSeconds)
    }

    /// A silent push or a fetch: the app runs in the background, fetches the manifest, and must call
    /// its completion handler within `seconds` (in the foreground it is not terminated for being late).
    mutating func beginWake(
        _ app: AppSlot, _ kind: WakeKind, seconds: Int64, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        if let current = table[app].wake {
            // One wake at a time: a second one is answered with the first's result when that completes.
            // (Rare: the gateway spaces wakes out by the budget.)
            if case .silentPush(let apnsID) = kind {
                actions.append(.complete(apnsID: apnsID, app: app, result: current.result))
            }
            return
        }
        let foreground = table[app].state == .foreground
        if !foreground { resumeInBackground(app, &actions) }
        actions.append(.woken(app: app, kind: kind))
        table[app].wake = AppRuntime.Wake(
            kind: kind, deadline: foreground ? UnixTime(milliseconds: .max) : now.adding(seconds: seconds),
            forgets: roll(table[app].behaviour.forgetsCompletion))
        let id = startTransfer(app, .manifest, session: .foreground, forWake: kind, now: now, &actions)
        table[app].wake!.waitingOn.append(id)
    }

    /// How long a wake of `kind` may run in the background before its handler must be called.
    func wakeSeconds(_ kind: WakeKind) -> Int64 {
        switch kind {
        case .silentPush: profile.silentWakeSeconds
        case .fetch: profile.fetchCompletionSeconds
        case .location: profile.locationWakeSeconds
        case .sessionEvents: profile.sessionEventsSeconds
        }
    }

    /// A transfer the app's wake waited on is gone from the app: moved to a background session (the
    /// system has it: the app has its answer, newData, R9/R11) or cut off (failed). The wake decides
    /// without it, as it would have when it ended.
    mutating func wakeLost(_ app: AppSlot, transfer id: Int, moved: Bool, now: UnixTime) {
        guard let index = table[app].wake?.waitingOn.firstIndex(of: id) else { return }
        table[app].wake!.waitingOn.remove(at: index)
        decideWake(app, result: moved ? .newData : .failed, now: now)
    }

    /// The app calls its wake's completion handler.
    mutating func finishWake(_ app: AppSlot, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let wake = table[app].wake else { return }
        table[app].wake = nil
        switch wake.kind {
        case .silentPush(let apnsID):
            actions.append(.complete(apnsID: apnsID, app: app, result: wake.result))
        case .fetch:
            table[app].fetch.recordFetch(at: now, result: wake.result)
            table[app].fetch.schedule(
                after: now, interval: table[app].behaviour.fetchInterval, profile: profile)
        case .location, .sessionEvents:
            break
        }
    }
}
