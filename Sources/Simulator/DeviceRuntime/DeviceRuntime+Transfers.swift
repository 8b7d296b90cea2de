import PushModel

/// Foreground and background URL sessions: transfers, their ends, the relaunch for session events (R9–R11).
extension DeviceRuntime {
    @discardableResult
    mutating func startTransfer(
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

    mutating func transferFinished(
        _ id: Int, _ result: TransferResult, now: UnixTime, _ actions: inout [RuntimeAction]
    ) {
        guard let position = table.list.indices.first(where: { table[position: $0].transfers[id] != nil }),
            let transfer = table[position: position].transfers.removeValue(forKey: id)
        else { return }  // cancelled meanwhile
        let bundleID = table[position: position].bundleID
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
    mutating func apply(
        _ bundleID: String, _ transfer: AppRuntime.Transfer, _ result: TransferResult, now: UnixTime,
        _ actions: inout [RuntimeAction]
    ) {
        // Read in place (a copy of the app costs a retain per field).
        let position = table.index(of: bundleID)!
        let id = transfer.request.id
        // A task that protected this transfer is ended (unless the app forgets: R2/R3).
        if let index = table[position: position].tasks.firstIndex(where: { $0.protects == id }),
            !table[position: position].tasks[index].forgetsEnd
        {
            table[position: position].tasks.remove(at: index)
        }
        let waitedOn = table[position: position].wake?.waitingOn.contains(id) == true
        if waitedOn { table[position: position].wake!.waitingOn.remove(id) }
        switch result {
        case .manifest(let version):
            guard version > (table[position: position].contentVersion ?? Int.min) else {
                if waitedOn { decideWake(bundleID, result: "noData", now: now) }
                return
            }
            if waitedOn, table[position: position].state != .foreground,
                table[position: position].behaviour.downloadsInBackgroundSession,
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
    mutating func decideWake(_ bundleID: String, result: String, now: UnixTime) {
        guard var wake = table[bundleID].wake, wake.waitingOn.isEmpty else { return }
        wake.result = result
        if !wake.forgets { wake.completesAt = now.adding(milliseconds: table[bundleID].behaviour.workMilliseconds) }
        table[bundleID].wake = wake
    }

    /// R10: launched (or resumed) in the background with `handleEventsForBackgroundURLSession`: the
    /// app takes the events and must call the handler within `sessionEventsSeconds`.
    mutating func relaunchForSessionEvents(_ bundleID: String, now: UnixTime, _ actions: inout [RuntimeAction]) {
        let position = table.index(of: bundleID)!
        if table[position: position].state == .notRunning { actions.append(.relaunched(bundleID: bundleID)) }
        resumeInBackground(bundleID, &actions)
        actions.append(.woken(bundleID: bundleID, kind: .sessionEvents))
        deliverFinishedEvents(bundleID, &actions)
        let behaviour = table[position: position].behaviour
        let forgets = roll(behaviour.forgetsSessionHandler)
        table[bundleID].wake = AppRuntime.Wake(
            kind: .sessionEvents, deadline: now.adding(seconds: profile.sessionEventsSeconds),
            completesAt: forgets ? nil : now.adding(milliseconds: behaviour.workMilliseconds), forgets: forgets)
    }

    mutating func deliverFinishedEvents(_ bundleID: String, _ actions: inout [RuntimeAction]) {
        let events = table[bundleID].finishedEvents
        table[bundleID].finishedEvents.removeAll()
        for event in events {
            if case .item(let version, _) = event.result, version > (table[bundleID].contentVersion ?? Int.min) {
                table[bundleID].contentVersion = version
                actions.append(.contentUpdated(bundleID: bundleID, version: version, by: event.forWake))
            }
        }
    }
}
