import PushModel

/// Foreground and background URL sessions: transfers, their ends, the relaunch for session events (R9–R11).
extension DeviceRuntime {
    /// Files a transfer and asks the shell to start it — at once, or for a discretionary one when the
    /// system starts it (R9). `announcing: false` files it without the start (the caller says when).
    @discardableResult
    mutating func startTransfer(
        _ app: AppSlot, _ content: TransferContent, session: TransferSession, forWake: WakeKind?,
        resumeFrom: Int64 = 0, now: UnixTime, _ actions: inout [RuntimeAction], announcing: Bool = true
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
            id: id, app: app, content: content, session: session, resumeFrom: resumeFrom, slowdown: slowdown)
        table[app].transfers[id] = AppRuntime.Transfer(request: request, startsAt: startsAt, forWake: forWake)
        if startsAt == nil, announcing { actions.append(.startTransfer(request)) }
        return id
    }

    mutating func transferFinished(
        _ id: Int, _ result: TransferResult, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let app = table.slots.first(where: { table[$0].transfers.contains(id) }),
            let transfer = table[app].transfers.removeValue(forKey: id)
        else { return }  // cancelled meanwhile
        let state = table[app].state
        if case .background = transfer.request.session, state == .suspended || state == .notRunning {
            // R10: the system launches the app in the background for its session's events.
            table[app].finishedEvents.append((id, result, transfer.forWake))
            relaunchForSessionEvents(app, now: now, &actions)
            return
        }
        apply(app, transfer, result, now: now, &actions)
    }

    /// What a finished transfer means to the running app.
    mutating func apply(
        _ app: AppSlot, _ transfer: AppRuntime.Transfer, _ result: TransferResult, now: UnixTime,
        _ actions: inout [RuntimeAction]
    ) {
        let id = transfer.request.id
        // A task that protected this transfer is ended (unless the app forgets: R2/R3).
        if let index = table[app].tasks.firstIndex(where: { $0.protects == id }),
            !table[app].tasks[index].forgetsEnd
        {
            table[app].tasks.remove(at: index)
        }
        let waiting = table[app].wake?.waitingOn.firstIndex(of: id)
        let waitedOn = waiting != nil
        if let waiting { table[app].wake!.waitingOn.remove(at: waiting) }
        switch result {
        case .manifest(let version):
            guard version > (table[app].contentVersion ?? Int.min) else {
                if waitedOn { decideWake(app, result: .noData, now: now) }
                return
            }
            // A download of this version already under way (paused while the device slept, or in a
            // background session) goes on: it is not joined by another. One of an older version is
            // replaced.
            replaceOlderDownloads(app, than: version, &actions)
            if let running = download(app, of: version) {
                if waitedOn {
                    if running.request.session == .foreground {
                        table[app].wake!.waitingOn.append(running.request.id)
                    } else {
                        decideWake(app, result: .newData, now: now)
                    }
                }
                return
            }
            if waitedOn, table[app].state != .foreground,
                table[app].behaviour.downloadsInBackgroundSession,
                profile.backgroundSessions
            {
                // R9: started in the background, so discretionary; the handler is called at once.
                startTransfer(
                    app, .item(version: version), session: .background(discretionary: true),
                    forWake: transfer.forWake, now: now, &actions)
                decideWake(app, result: .newData, now: now)
            } else {
                let item = startTransfer(
                    app, .item(version: version), session: .foreground, forWake: transfer.forWake, now: now,
                    &actions)
                if waitedOn { table[app].wake!.waitingOn.append(item) }
            }
        case .item(let version, _):
            if version > (table[app].contentVersion ?? Int.min) {
                table[app].contentVersion = version
                actions.append(.contentUpdated(app: app, version: version, by: transfer.forWake))
            }
            if waitedOn { decideWake(app, result: .newData, now: now) }
        case .failed:
            if waitedOn { decideWake(app, result: .failed, now: now) }
        }
    }

    /// The app's download of `version` (or a newer one) under way, if any.
    func download(_ app: AppSlot, of version: Int) -> AppRuntime.Transfer? {
        table[app].transfers.items.first {
            if case .item(let other) = $0.request.content { return other >= version }
            return false
        }
    }

    /// Cancels the app's downloads of versions older than `version` (a newer one replaces them), with
    /// the background tasks that protected them.
    mutating func replaceOlderDownloads(_ app: AppSlot, than version: Int, _ actions: inout [RuntimeAction]) {
        var replaced: [Int] = []
        table[app].transfers.remove(
            where: {
                if case .item(let other) = $0.request.content { return other < version }
                return false
            }, { replaced.append($0) })
        for id in replaced {
            actions.append(.cancelTransfer(id: id))
            table[app].tasks.removeAll { $0.protects == id }
            table[app].wake?.waitingOn.removeAll { $0 == id }
        }
    }

    /// The app knows its wake's result: it calls the handler after its own work (unless it forgets).
    mutating func decideWake(_ app: AppSlot, result: CompletionResult, now: UnixTime) {
        guard var wake = table[app].wake, wake.waitingOn.isEmpty else { return }
        wake.result = result
        if !wake.forgets { wake.completesAt = now.adding(milliseconds: table[app].behaviour.workMilliseconds) }
        table[app].wake = wake
    }

    /// R10: launched (or resumed) in the background with `handleEventsForBackgroundURLSession`: the
    /// app takes the events and must call the handler within `sessionEventsSeconds`.
    mutating func relaunchForSessionEvents(_ app: AppSlot, now: UnixTime, _ actions: inout [RuntimeAction]) {
        if table[app].state == .notRunning { actions.append(.relaunched(app: app)) }
        resumeInBackground(app, &actions)
        actions.append(.woken(app: app, kind: .sessionEvents))
        deliverFinishedEvents(app, &actions)
        let behaviour = table[app].behaviour
        let forgets = roll(behaviour.forgetsSessionHandler)
        table[app].wake = AppRuntime.Wake(
            kind: .sessionEvents, deadline: now.adding(seconds: profile.sessionEventsSeconds),
            completesAt: forgets ? nil : now.adding(milliseconds: behaviour.workMilliseconds), forgets: forgets)
    }

    mutating func deliverFinishedEvents(_ app: AppSlot, _ actions: inout [RuntimeAction]) {
        let events = table[app].finishedEvents
        table[app].finishedEvents.removeAll()
        for event in events {
            if case .item(let version, _) = event.result, version > (table[app].contentVersion ?? Int.min) {
                table[app].contentVersion = version
                actions.append(.contentUpdated(app: app, version: version, by: event.forWake))
            }
        }
    }
}
