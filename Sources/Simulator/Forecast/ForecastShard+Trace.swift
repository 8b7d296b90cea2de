import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// The trace (`--trace`): a `ForecastTraceLine` for each event of a traced device.
extension ForecastShard {
    /// The bundle id of app `slot` on `device`.
    func name(_ slot: AppSlot, _ device: Int) -> String { apps[Int(kindOf[device])][Int(slot.index)].bundleID }

    func isTraced(_ device: Int) -> Bool {
        tracing && scenario.traced.contains(firstDevice + device)
    }

    func record(_ device: Int, _ event: String, _ fill: (inout ForecastTraceLine) -> Void = { _ in }) {
        var line = ForecastTraceLine(
            t: Double(now - scenario.start.milliseconds) / 1000, device: firstDevice + device,
            profile: scenario.kinds[Int(kindOf[device])].name, event: event)
        fill(&line)
        trace.append(TraceLine(time: now, device: firstDevice + device, order: trace.count, line: line))
    }

    func traceEvent(_ device: Int, _ event: RuntimeEvent) {
        switch event {
        case .userOpened(let app): record(device, "user_opened") { $0.app = name(app, device) }
        case .userLeft(let app): record(device, "user_left") { $0.app = name(app, device) }
        case .userForceQuit(let app): record(device, "user_force_quit") { $0.app = name(app, device) }
        case .screen(let on): record(device, "screen") { $0.on = on }
        case .lowPowerMode(let on): record(device, "low_power_mode") { $0.on = on }
        case .backgroundAppRefresh(let on): record(device, "background_app_refresh") { $0.on = on }
        case .widgetKitPushed(let app, let surface, let version):
            record(device, "\(surface.rawValue)_push") {
                $0.app = name(app, device)
                $0.version = version
            }
        case .memoryPressure(let app): record(device, "memory_pressure") { $0.app = name(app, device) }
        case .rebooted: record(device, "reboot")
        case .pushDelivered(let app, let id, let silent):
            record(device, "push_delivered") {
                $0.app = name(app, device)
                $0.apnsID = id.description
                $0.silent = silent
            }
        case .locationChanged(let app): record(device, "location_changed") { $0.app = name(app, device) }
        case .liveActivityUpdated(let app, let activity, let version, let timestamp):
            record(device, "live_activity_update") {
                $0.app = name(app, device)
                $0.activity = activity
                $0.version = version
                $0.timestamp = timestamp
            }
        case .transferFinished(let id, let result):
            record(device, "transfer_finished") { line in
                line.transfer = id
                switch result {
                case .manifest(let version): line.manifestVersion = version
                case .item(let version, let bytes):
                    line.itemVersion = version
                    line.bytes = Int64(bytes)
                case .failed(let bytes):
                    line.failed = true
                    line.bytes = Int64(bytes)
                }
            }
        case .tick: break
        }
    }

    /// A freshness sample's (the version held or shown set): the newest published by now, and whether it
    /// was fresh (nothing published yet: fresh).
    func sample(_ line: inout ForecastTraceLine) {
        let shown = line.versionShown ?? line.versionHeld
        let newest = newestVersion(at: now)
        line.newestPublished = newest
        line.fresh = newest.map { newest in shown.map { $0 >= newest } ?? false } ?? true
    }

    func traceAction(_ device: Int, _ action: RuntimeAction) {
        switch action {
        case .appState(let app, let state):
            record(device, "app_state") {
                $0.app = name(app, device)
                $0.state = state.rawValue
            }
        case .widgetKitReloaded(let app, let surface, let version):
            record(device, "\(surface.rawValue)_updated") {
                $0.app = name(app, device)
                $0.version = version
            }
        case .widgetKitViewed(let app, let surface, let shown):
            record(device, "\(surface.rawValue)_viewed") {
                $0.app = name(app, device)
                $0.versionShown = shown
                sample(&$0)
            }
        case .complete(let id, let app, let result):
            record(device, "complete") {
                $0.app = name(app, device)
                $0.apnsID = id.description
                $0.result = result.rawValue
            }
        case .startTransfer(let request):
            var session = "foreground"
            if case .background(let discretionary) = request.session {
                session = discretionary ? "background_discretionary" : "background"
            }
            let content: String
            switch request.content {
            case .manifest: content = "manifest"
            case .item(let version): content = "item \(version)"
            }
            record(device, "transfer_started") {
                $0.app = name(request.app, device)
                $0.transfer = request.id
                $0.content = content
                $0.session = session
                $0.from = Int64(max(0, request.resumeFrom))
            }
        case .cancelTransfer(let id): record(device, "transfer_cancelled") { $0.transfer = id }
        case .pauseTransfer(let id): record(device, "transfer_paused") { $0.transfer = id }
        case .resumeTransfer(let id): record(device, "transfer_resumed") { $0.transfer = id }
        case .moveToBackgroundSession(let from, let to):
            record(device, "moved_to_background_session") {
                $0.transfer = from
                $0.to = to.id
            }
        case .woken(let app, let kind):
            var why: String?
            if kind == .fetch, let schedule = iphones[device].runtime.app(app)?.fetch {
                why = schedule.plannedBy.rawValue
            }
            record(device, "woken") {
                $0.app = name(app, device)
                $0.kind = kind.name
                $0.fetchPlannedBy = why
            }
        case .terminated(let app, let cause):
            record(device, "terminated") {
                $0.app = name(app, device)
                $0.cause = cause.rawValue
            }
        case .relaunched(let app): record(device, "relaunched") { $0.app = name(app, device) }
        case .opened(let app, let held):
            record(device, "opened") {
                $0.app = name(app, device)
                $0.versionHeld = held
                sample(&$0)
            }
        case .contentUpdated(let app, let version, let by):
            record(device, "content_updated") {
                $0.app = name(app, device)
                $0.version = version
                $0.by = by?.name ?? "foreground"
            }
        case .conditions(let lowPower, let refreshOff, let debugger, let others):
            record(device, "conditions") {
                $0.lowPowerMode = lowPower
                $0.backgroundAppRefreshOff = refreshOff
                $0.debuggerAttached = debugger
                $0.otherAppsWakesPerDay = others
            }
        case .rebooted: record(device, "rebooted")
        case .wakeRefused(let app, let id, let reason):
            record(device, "wake_refused") {
                $0.app = name(app, device)
                $0.apnsID = id.description
                $0.reason = reason.rawValue
            }
        case .activityUpdated(let app, let activity, let version):
            record(device, "activity_updated") {
                $0.app = name(app, device)
                $0.activity = activity
                $0.version = version
            }
        case .activityViewed(let app, let activity, let shown):
            record(device, "activity_viewed") {
                $0.app = name(app, device)
                $0.activity = activity
                $0.versionShown = shown
                sample(&$0)
            }
        }
    }
}
