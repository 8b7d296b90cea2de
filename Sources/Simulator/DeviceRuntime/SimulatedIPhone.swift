import PushModel

/// Where a simulated iPhone's transfers run: real HTTP to a content server in `pushgate simulate`
/// (`RuntimeShell`), a computed end time in a forecast. The iPhone says what to start and cancel; the
/// link reports each end as a `.transferFinished` event, later.
public protocol TransferLink {
    /// Starts `request`, asking for the bytes from `from` on (a resumed download).
    mutating func start(_ request: TransferRequest, from: Int64, at now: UnixTime)
    /// Stops transfer `id` without reporting its end; returns the bytes it had, counted from the start
    /// of the item (what a resumed transfer asks from), or nil when it was not running.
    mutating func cancel(_ id: Int, at now: UnixTime) -> Int64?
}

/// One simulated iPhone, whatever the clock: its background rules (`DeviceRuntime`), its users
/// (`UserModel`) and their joint deadline, and what becomes of the runtime's transfers (paused with
/// the bytes they had, resumed, moved to a background session) on a `TransferLink`. Pure: the real
/// shell feeds it wall-clock time and runs its transfers over HTTP; a forecast feeds it virtual time
/// and computes them. So a forecast is the real simulator on another clock, not a second model of it.
public struct SimulatedIPhone: Sendable {
    public private(set) var runtime: DeviceRuntime
    public private(set) var user: UserModel?
    /// Transfers paused while the device sleeps (R4), with the bytes they had: resumed from there.
    private var paused: [Int: (request: TransferRequest, bytes: Int64)] = [:]
    /// Resume data a download moved to a background session kept, by the new transfer's id (R11): it
    /// starts from there when the system starts it.
    private var resumeData: [Int: Int64] = [:]
    /// Milliseconds apps spent running in the background (woken, finishing a task while the device is
    /// awake, fetching): the runtime counts it as it charges their tasks (R4), a battery proxy.
    public var awakeMilliseconds: Int64 { runtime.backgroundRunMilliseconds }
    /// The users do nothing at or after this instant (ms; a run with a planned end, so that its users'
    /// opens do not depend on when the run is stopped).
    public var usersUntil: Int64 = .max

    /// `users` nil: only the events fed from outside.
    public init(
        profile: IOSProfile, apps: [(bundleID: String, behaviour: AppBehaviour)], users: UserProfile?, seed: UInt64,
        now: UnixTime
    ) {
        runtime = DeviceRuntime(profile: profile, apps: apps, seed: seed, now: now)
        user = users.map {
            UserModel(
                profile: $0, apps: apps.indices.map(AppSlot.init),
                locationApps: apps.indices.filter { apps[$0].behaviour.monitorsLocation }.map(AppSlot.init), seed: seed,
                now: now)
        }
    }

    /// What the device does when it connects: a user without Background App Refresh turns it off, and a
    /// device whose conditions are not the defaults (Low Power Mode, a debugger attached, other apps on
    /// its budget) says them again — the gateway it reaches may be another node.
    public mutating func start<Link: TransferLink>(at now: UnixTime, link: inout Link) -> [RuntimeAction] {
        var actions: [RuntimeAction] = []
        start(at: now, link: &link, into: &actions)
        return actions
    }

    /// `start(at:link:)`, appending to a buffer the caller reuses.
    public mutating func start<Link: TransferLink>(
        at now: UnixTime, link: inout Link, into actions: inout [RuntimeAction]
    ) {
        if let profile = user?.profile {
            runtime.debuggerAttached = profile.debugger_attached
            runtime.otherAppsWakesPerDay = profile.other_apps_wakes_per_day
        }
        if user?.refreshOff == true, runtime.backgroundAppRefresh {
            handle(.backgroundAppRefresh(enabled: false), at: now, link: &link, into: &actions)
        } else if runtime.lowPowerMode || !runtime.backgroundAppRefresh || runtime.debuggerAttached
            || runtime.otherAppsWakesPerDay > 0
        {
            actions.append(runtime.conditions)
        }
    }

    /// Whether the users have nothing left to do before their end (`usersUntil`).
    public var usersDone: Bool { user?.nextAt.map { $0.milliseconds >= usersUntil } ?? true }

    /// When the device next has something to do without an event: the runtime's deadline or the user's
    /// next event, whichever is first.
    public var nextDeadline: UnixTime? {
        let runtime = self.runtime.nextDeadline()
        guard let user = user?.nextAt, user.milliseconds < usersUntil else { return runtime }
        guard let runtime else { return user }
        return min(runtime, user)
    }

    /// Applies `event` at `now` and carries out the transfer actions on `link`; returns every action
    /// (the device-protocol ones for the shell to send, all of them for the figures).
    public mutating func handle<Link: TransferLink>(_ event: RuntimeEvent, at now: UnixTime, link: inout Link)
        -> [RuntimeAction]
    {
        var actions: [RuntimeAction] = []
        handle(event, at: now, link: &link, into: &actions)
        return actions
    }

    /// `handle(_:at:link:)`, appending to a buffer the caller reuses (a forecast: no array per event).
    public mutating func handle<Link: TransferLink>(
        _ event: RuntimeEvent, at now: UnixTime, link: inout Link, into actions: inout [RuntimeAction]
    ) {
        // The user sees an alert, and may open its app for it.
        if case .pushDelivered(let app, _, false) = event { user?.alertShown(app, at: now) }
        let first = actions.count
        runtime.handle(event, at: now, into: &actions)
        for index in first..<actions.count { perform(actions[index], at: now, link: &link) }
    }

    /// Whatever is due by `now`: the user's events, then the runtime's own deadlines (a call before the
    /// deadline changes nothing).
    public mutating func advance<Link: TransferLink>(to now: UnixTime, link: inout Link) -> [RuntimeAction] {
        var actions: [RuntimeAction] = []
        advance(to: now, link: &link, into: &actions)
        return actions
    }

    /// `advance(to:link:)`, appending to a buffer the caller reuses.
    public mutating func advance<Link: TransferLink>(
        to now: UnixTime, link: inout Link, into actions: inout [RuntimeAction]
    ) {
        // The users' events due before their end: a late call (a real shell's timer under load) must not
        // fire one due at or after it, nor one planned past it within the same call.
        let cutoff = UnixTime(milliseconds: min(now.milliseconds, usersUntil - 1))
        if let at = user?.nextAt, at <= cutoff {
            for event in user!.fire(at: cutoff) { handle(event, at: now, link: &link, into: &actions) }
        }
        handle(.tick, at: now, link: &link, into: &actions)
    }

    /// Ends the run: the awake time of apps still running in the background is counted up to `now`.
    public mutating func finish(at now: UnixTime) {
        runtime.charge(to: now)
    }

    private mutating func perform<Link: TransferLink>(_ action: RuntimeAction, at now: UnixTime, link: inout Link) {
        switch action {
        case .startTransfer(let request):
            let from =
                request.resumeFrom == TransferRequest.resumeFromCancelled
                ? resumeData.removeValue(forKey: request.id) ?? 0 : request.resumeFrom
            link.start(request, from: from, at: now)
        case .cancelTransfer(let id):
            paused.removeValue(forKey: id)
            resumeData.removeValue(forKey: id)
            _ = link.cancel(id, at: now)
        case .pauseTransfer(let id):
            guard let bytes = link.cancel(id, at: now), let request = runningRequest(id) else { break }
            paused[id] = (request, bytes)
        case .resumeTransfer(let id):
            guard let was = paused.removeValue(forKey: id) else { break }
            // A download goes on from its bytes; a manifest (small, read whole) is asked for again.
            link.start(was.request, from: was.request.content == .manifest ? 0 : was.bytes, at: now)
        case .moveToBackgroundSession(let from, let to):
            let had = link.cancel(from, at: now) ?? paused.removeValue(forKey: from)?.bytes ?? 0
            paused.removeValue(forKey: from)
            // The download resumes from its resume data when it starts (R11).
            resumeData[to.id] = had
        case .appState, .complete, .conditions, .woken, .terminated, .relaunched, .opened, .contentUpdated,
            .wakeRefused, .activityUpdated, .activityViewed, .rebooted, .widgetKitReloaded, .widgetKitViewed:
            break
        }
    }

    /// The request of a transfer the runtime still has (a paused one is resumed with it).
    private func runningRequest(_ id: Int) -> TransferRequest? {
        for slot in runtime.slots { if let transfer = runtime.app(slot)?.transfers[id] { return transfer.request } }
        return nil
    }
}
