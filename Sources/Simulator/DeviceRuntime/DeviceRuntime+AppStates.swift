import PushModel

/// The user's opens, leaves and force-quits, and the app state changes they and the rules cause (R1, R5).
extension DeviceRuntime {
    /// R1: the user opens the app (launching it if it was not running or force-quit).
    mutating func open(_ app: AppSlot, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let state = table.state(of: app), state != .foreground else { return }
        if !screenOn { screenCameOn(&actions) }
        screenOn = true
        table[app].state = .foreground
        table[app].watchdogAt = nil
        table[app].locationEndsAt = nil
        // Back in the foreground the app ends its background tasks: they protected work it now does here.
        table[app].tasks.removeAll()
        actions.append(.appState(app: app, state: .foreground))
        // Session events that waited for a launch arrive now (R10, without launch events).
        deliverFinishedEvents(app, &actions)
        actions.append(.opened(app: app, contentVersion: table[app].contentVersion))
        table[app].fetch.recordLaunch(at: now)
        if profile.backgroundFetch {
            table[app].fetch.schedule(
                after: now, interval: table[app].behaviour.fetchInterval, profile: profile)
        }
        // The app refreshes what it shows.
        if table[app].wake == nil {
            startTransfer(app, .manifest, session: .foreground, forWake: nil, now: now, &actions)
        }
    }

    /// R5: the app moves to the background; DidEnterBackground runs, and open foreground work is
    /// protected by a background task.
    mutating func leave(_ app: AppSlot, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard table[app].state == .foreground else { return }
        table[app].state = .background
        actions.append(.appState(app: app, state: .background))
        // A wake begun in the foreground had no deadline there (R7): its handler's time runs from now.
        if let wake = table[app].wake, wake.deadline.milliseconds == .max {
            table[app].wake!.deadline = now.adding(seconds: wakeSeconds(wake.kind))
        }
        let behaviour = table[app].behaviour
        if behaviour.didEnterBackgroundMilliseconds > profile.didEnterBackgroundSeconds * 1000 {
            table[app].watchdogAt = now.adding(seconds: profile.didEnterBackgroundSeconds)
            return
        }
        for id in table[app].transfers.ids where table[app].transfers[id]?.request.session == .foreground {
            table[app].tasks.append(
                AppRuntime.BackgroundTask(
                    id: takeID(), remaining: profile.backgroundTaskAllowanceSeconds * 1000,
                    forgetsEnd: roll(behaviour.forgetsEndingTask), protects: id))
        }
    }

    /// R1: a force-quit app is cut off: its transfers (background sessions too) stop, and it gets no
    /// wakes or fetches until the user opens it again.
    mutating func forceQuit(_ app: AppSlot, _ actions: inout [RuntimeAction]) {
        let was = table[app]
        guard was.state != .forceQuit else { return }
        for id in was.transfers.ids { actions.append(.cancelTransfer(id: id)) }
        var cleared = AppRuntime(bundleID: was.bundleID, behaviour: was.behaviour)
        cleared.state = .forceQuit
        cleared.contentVersion = was.contentVersion
        cleared.fetch = was.fetch
        // Its Live Activities are the system's: they stay on the Lock Screen, and their updates go on.
        cleared.activityVersions = was.activityVersions
        cleared.activityTimestamps = was.activityTimestamps
        cleared.shown = was.shown
        table[app] = cleared
        actions.append(.appState(app: app, state: .forceQuit))
    }

    // MARK: States

    mutating func resumeInBackground(_ app: AppSlot, _ actions: inout [RuntimeAction]) {
        guard table[app].state != .background else { return }
        table[app].state = .background
        actions.append(.appState(app: app, state: .background))
    }

    /// Nothing keeps the app running: it is suspended, and its foreground transfers stop with it.
    mutating func suspend(_ app: AppSlot, _ actions: inout [RuntimeAction]) {
        cancelForegroundTransfers(app, &actions)
        table[app].state = .suspended
        actions.append(.appState(app: app, state: .suspended))
    }

    /// Terminated by the system: its process ends (foreground transfers, tasks, the wake); background
    /// sessions go on (R9).
    mutating func terminate(_ app: AppSlot, _ cause: TerminationCause, _ actions: inout [RuntimeAction]) {
        cancelForegroundTransfers(app, &actions)
        table[app].wake = nil
        table[app].tasks.removeAll()
        table[app].watchdogAt = nil
        table[app].locationEndsAt = nil
        table[app].state = .notRunning
        actions.append(.terminated(app: app, cause: cause))
        actions.append(.appState(app: app, state: .notRunning))
    }

    mutating func cancelForegroundTransfers(_ app: AppSlot, _ actions: inout [RuntimeAction]) {
        table[app].transfers.remove(where: { $0.request.session == .foreground }) { id in
            actions.append(.cancelTransfer(id: id))
        }
    }
}
