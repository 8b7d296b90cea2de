import PushModel

/// Background wakes: silent pushes and location changes wake a suspended app for a limited time (R6–R8).
extension DeviceRuntime {
    /// R7: a silent push wakes the app for `silentWakeSeconds`, unless it was force-quit or the device
    /// is in Low Power Mode or has Background App Refresh off.
    mutating func silentPush(
        _ bundleID: String, apnsID: String, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let state = table.state(of: bundleID) else { return }
        guard state != .forceQuit, !lowPowerMode, backgroundAppRefresh else {
            actions.append(.wakeRefused(bundleID: bundleID, apnsID: apnsID))
            return
        }
        beginWake(bundleID, .silentPush(apnsID: apnsID), seconds: profile.silentWakeSeconds, now: now, &actions)
    }

    /// R8: a location event gives the app `locationWakeSeconds` in the background.
    mutating func locationWake(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let state = table.state(of: bundleID), state != .forceQuit, state != .foreground else { return }
        resumeInBackground(bundleID, &actions)
        actions.append(.woken(bundleID: bundleID, kind: .location))
        table[bundleID].locationEndsAt = now.adding(seconds: profile.locationWakeSeconds)
    }

    /// A silent push or a fetch: the app runs in the background, fetches the manifest, and must call
    /// its completion handler within `seconds` (in the foreground it is not terminated for being late).
    mutating func beginWake(
        _ bundleID: String, _ kind: WakeKind, seconds: Int64, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let position = table.index(of: bundleID) else { return }
        if let current = table[position: position].wake {
            // One wake at a time: a second one is answered with the first's result when that completes.
            // (Rare: the gateway spaces wakes out by the budget.)
            if case .silentPush(let apnsID) = kind {
                actions.append(.complete(apnsID: apnsID, bundleID: bundleID, result: current.result))
            }
            return
        }
        let foreground = table[position: position].state == .foreground
        if !foreground { resumeInBackground(bundleID, &actions) }
        actions.append(.woken(bundleID: bundleID, kind: kind))
        table[bundleID].wake = AppRuntime.Wake(
            kind: kind, deadline: foreground ? UnixTime(milliseconds: .max) : now.adding(seconds: seconds),
            forgets: roll(table[position: position].behaviour.forgetsCompletion))
        let id = startTransfer(bundleID, .manifest, session: .foreground, forWake: kind, now: now, &actions)
        table[bundleID].wake!.waitingOn.insert(id)
    }

    /// The app calls its wake's completion handler.
    mutating func finishWake(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
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
}
