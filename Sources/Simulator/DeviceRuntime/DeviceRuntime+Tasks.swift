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
            let moved = takeID()
            // Started while the app is in the background: discretionary (R9); it starts from the resume data.
            let request = TransferRequest(
                id: moved, app: app, content: .item(version: version),
                session: .background(discretionary: true), resumeFrom: TransferRequest.resumeFromCancelled,
                slowdown: profile.backgroundSessionSlowdown)
            table[app].transfers[moved] = AppRuntime.Transfer(
                request: request, startsAt: nil, forWake: transfer.forWake)
            actions.append(.moveToBackgroundSession(from: id, to: request))
        } else {
            // Work cut off: lost.
            table[app].transfers.removeValue(forKey: id)
            actions.append(.cancelTransfer(id: id))
        }
    }
}
