import PushModel

/// The user's opens, leaves and force-quits, and the app state changes they and the rules cause (R1, R5).
extension DeviceRuntime {
    /// R1: the user opens the app (launching it if it was not running or force-quit).
    mutating func open(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        guard let state = table.state(of: bundleID), state != .foreground else { return }
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
            table[bundleID].fetch.schedule(
                after: now, interval: table[bundleID].behaviour.fetchInterval, profile: profile)
        }
        // The app refreshes what it shows.
        if table[bundleID].wake == nil {
            startTransfer(bundleID, .manifest, session: .foreground, forWake: nil, now: now, &actions)
        }
    }

    /// R5: the app moves to the background; DidEnterBackground runs, and open foreground work is
    /// protected by a background task.
    mutating func leave(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
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
    mutating func forceQuit(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        guard let app = table.find(bundleID), app.state != .forceQuit else { return }
        for id in app.transfers.keys.sorted() { actions.append(.cancelTransfer(id: id)) }
        var cleared = AppRuntime(bundleID: bundleID, behaviour: app.behaviour)
        cleared.state = .forceQuit
        cleared.contentVersion = app.contentVersion
        cleared.fetch = app.fetch
        table[bundleID] = cleared
        actions.append(.appState(bundleID: bundleID, state: .forceQuit))
    }

    // MARK: States

    mutating func resumeInBackground(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        guard table[bundleID].state != .background else { return }
        table[bundleID].state = .background
        actions.append(.appState(bundleID: bundleID, state: .background))
    }

    /// Nothing keeps the app running: it is suspended, and its foreground transfers stop with it.
    mutating func suspend(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        cancelForegroundTransfers(bundleID, &actions)
        table[bundleID].state = .suspended
        actions.append(.appState(bundleID: bundleID, state: .suspended))
    }

    /// Terminated by the system: its process ends (foreground transfers, tasks, the wake); background
    /// sessions go on (R9).
    mutating func terminate(_ bundleID: String, _ cause: TerminationCause, _ actions: inout [RuntimeAction]) {
        cancelForegroundTransfers(bundleID, &actions)
        table[bundleID].wake = nil
        table[bundleID].tasks.removeAll()
        table[bundleID].watchdogAt = nil
        table[bundleID].locationEndsAt = nil
        table[bundleID].state = .notRunning
        actions.append(.terminated(bundleID: bundleID, cause: cause))
        actions.append(.appState(bundleID: bundleID, state: .notRunning))
    }

    mutating func cancelForegroundTransfers(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        let foreground = table[bundleID].transfers.filter { $0.value.request.session == .foreground }.keys.sorted()
        for id in foreground {
            table[bundleID].transfers.removeValue(forKey: id)
            actions.append(.cancelTransfer(id: id))
        }
    }
}
