import PushModel

/// Background tasks: the allowance, the expiration warning and the termination of a task never ended (R2–R4).
extension DeviceRuntime {
    /// R3: the expiration handler runs; a well-behaved app ends the task, moving a protected download to
    /// a background session first (R11).
    mutating func expire(_ app: AppSlot, taskAt index: Int, now: UnixTime, _ actions: inout [RuntimeAction]) {
        table[app].tasks[index].expirationCalled = true
        let task = table[app].tasks[index]
        guard !task.forgetsEnd else { return }
        table[app].tasks.remove(at: index)
        guard let id = task.protects, let transfer = table[app].transfers[id] else { return }
        let behaviour = table[app].behaviour
        if case .item(let version) = transfer.request.content, behaviour.movesDownloadToBackgroundSession,
            profile.backgroundSessions
        {
            table[app].transfers.removeValue(forKey: id)
            // Created while the app is in the background: discretionary (R9), so the system starts it
            // later (`startTransfer`, from the resume data the move kept).
            let moved = startTransfer(
                app, .item(version: version), session: .background(discretionary: true), forWake: transfer.forWake,
                resumeFrom: TransferRequest.resumeFromCancelled, now: now, &actions, announcing: false)
            actions.append(.moveToBackgroundSession(from: id, to: table[app].transfers[moved]!.request))
            wakeLost(app, transfer: id, moved: true, now: now)
            if table[app].transfers[moved]?.startsAt == nil {
                actions.append(.startTransfer(table[app].transfers[moved]!.request))
            }
        } else {
            // Work cut off: lost.
            table[app].transfers.removeValue(forKey: id)
            actions.append(.cancelTransfer(id: id))
            wakeLost(app, transfer: id, moved: false, now: now)
        }
    }
}
