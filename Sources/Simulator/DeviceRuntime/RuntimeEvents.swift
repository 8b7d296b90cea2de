import PushModel

/// Why an app was terminated.
public enum TerminationCause: String, Sendable, Equatable, CaseIterable {
    /// R6/R7: a wake's or a fetch's completion handler was not called in time.
    case wakeOverrun = "wake_overrun"
    /// R2/R3: a background task was still open when its allowance ran out.
    case unendedTask = "unended_task"
    /// R5: DidEnterBackground did not return within the watchdog's time.
    case watchdog
    /// R10: the session events' handler was not called in time.
    case sessionHandlerNotCalled = "session_handler_not_called"
    /// The system reclaimed a suspended app's memory (not counted against the app).
    case memoryPressure = "memory_pressure"
    /// The device restarted (not counted against the app).
    case reboot
}

/// What woke an app in the background.
public enum WakeKind: Sendable, Equatable, Hashable {
    case silentPush(apnsID: APNsID)
    case fetch
    case location
    case sessionEvents

    public var name: String {
        switch self {
        case .silentPush: "silent_push"
        case .fetch: "fetch"
        case .location: "location"
        case .sessionEvents: "session_events"
        }
    }
}

/// What a transfer fetches from the content server.
public enum TransferContent: Sendable, Equatable {
    /// The manifest: which version is newest.
    case manifest
    /// One item of a version.
    case item(version: Int)
}

/// How a transfer runs.
public enum TransferSession: Sendable, Equatable {
    /// In the app's process: it ends with the app.
    case foreground
    /// A background URL session (R9): outside the app, through suspension and system termination;
    /// discretionary ones start late and run slower.
    case background(discretionary: Bool)
}

public struct TransferRequest: Sendable, Equatable {
    public var id: Int
    public var app: AppSlot
    public var content: TransferContent
    public var session: TransferSession
    /// Bytes already transferred (resume data, R11); 0 for uploads and new downloads;
    /// `resumeFromCancelled`: from where the transfer it replaces stopped (the shell knows).
    public var resumeFrom: Int64
    /// How many times slower than a foreground transfer it should run (R9).
    public var slowdown: Double

    public static let resumeFromCancelled: Int64 = -1
}

/// What the transfer brought.
public enum TransferResult: Sendable, Equatable {
    /// The manifest names `version` as the newest.
    case manifest(version: Int)
    /// The item arrived whole (`bytes` in all).
    case item(version: Int, bytes: Int64)
    /// It failed; `bytesSoFar` can resume a download.
    case failed(bytesSoFar: Int64)
}

/// What happens to the device: the user, the network, the gateway and the passing of time.
public enum RuntimeEvent: Sendable, Equatable {
    case userOpened(app: AppSlot)
    case userLeft(app: AppSlot)
    case userForceQuit(app: AppSlot)
    /// The screen turned on or off (the device is awake while it is on, R4).
    case screen(on: Bool)
    case lowPowerMode(Bool)
    case backgroundAppRefresh(enabled: Bool)
    /// The system reclaims memory: a suspended app is terminated.
    case memoryPressure(app: AppSlot)
    /// The device restarts: every running app ends (not counted against it); background sessions go on.
    case rebooted
    /// A push was delivered: silent (a background wake) or alerting (it wakes the device, R4).
    case pushDelivered(app: AppSlot, apnsID: APNsID, silent: Bool)
    /// A region or significant-location change for an app that monitors it (R8).
    case locationChanged(app: AppSlot)
    /// An update reached one of the app's Live Activities (pushed to its token, or broadcast on its
    /// channel): its `aps.timestamp` (seconds) orders it, its content-state carries `version`. No wake,
    /// no alert.
    case liveActivityUpdated(app: AppSlot, activity: Int, version: Int, timestamp: Int64)
    /// A widget or control push reached the app (`apns-push-type: widgets` or `controls`): that surface
    /// reloads to `version` (the extension fetches what the push announced; WidgetKit, not the app, runs
    /// it: no wake). On an iPhone older than the surface's iOS (`WidgetKitSurface.since`), nothing.
    case widgetKitPushed(app: AppSlot, surface: WidgetKitSurface, version: Int)
    case transferFinished(id: Int, result: TransferResult)
    /// Time passed: whatever was due by now happens (`DeviceRuntime.nextDeadline` says when).
    case tick
}

/// What the runtime asks of its shell: the device protocol's messages, transfers, and what to count.
public enum RuntimeAction: Sendable, Equatable {
    /// `app_state` to the gateway.
    case appState(app: AppSlot, state: AppState)
    /// `complete` to the gateway (a silent wake's completion handler).
    case complete(apnsID: APNsID, app: AppSlot, result: CompletionResult)
    case startTransfer(TransferRequest)
    case cancelTransfer(id: Int)
    /// R4: stop transfer `id` keeping what it has (the device fell asleep under its background task).
    case pauseTransfer(id: Int)
    /// R4: go on with paused transfer `id` from where it stopped (a download; an upload starts over).
    case resumeTransfer(id: Int)
    /// R11: cancel transfer `from` keeping its resume data for `to`, a download in a background session
    /// that goes on from those bytes when it starts (its own `startTransfer`, with `resumeFrom`
    /// `resumeFromCancelled`: discretionary, so later, R9).
    case moveToBackgroundSession(from: Int, to: TransferRequest)
    case woken(app: AppSlot, kind: WakeKind)
    case terminated(app: AppSlot, cause: TerminationCause)
    /// The app was launched in the background for its session's events (R10).
    case relaunched(app: AppSlot)
    /// The user opened the app: the content it holds then (nil: none yet) — the freshness sample.
    case opened(app: AppSlot, contentVersion: Int?)
    /// A wake, fetch or session delivered new content to the app.
    case contentUpdated(app: AppSlot, version: Int, by: WakeKind?)
    /// `conditions` to the gateway (all of them): Low Power Mode or Background App Refresh changed, or
    /// the device says at its start that a debugger is attached or its other apps draw on its budget.
    case conditions(
        lowPowerMode: Bool, backgroundAppRefreshOff: Bool, debuggerAttached: Bool = false,
        otherAppsWakesPerDay: Double = 0)
    /// `rebooted` to the gateway: the device restarted (its silent wakes wait out the herd window).
    case rebooted
    /// A silent push the app was not woken for (force-quit, Low Power Mode, Background App Refresh off,
    /// or an iOS without silent notifications): `not_woken` to the gateway, which forgets the wake.
    case wakeRefused(app: AppSlot, apnsID: APNsID, reason: WakeRefusal)
    /// A Live Activity shows a newer version (an older update is ignored: no action).
    case activityUpdated(app: AppSlot, activity: Int, version: Int)
    /// The screen came on: the user sees each Live Activity with the version it shows (nil: none yet) —
    /// the Live Activity's freshness sample.
    case activityViewed(app: AppSlot, activity: Int, contentVersion: Int?)
    /// A widget or a control reloaded and shows `version`.
    case widgetKitReloaded(app: AppSlot, surface: WidgetKitSurface, version: Int)
    /// The screen came on: the user sees the app's widget or control with the version it shows — its
    /// freshness sample.
    case widgetKitViewed(app: AppSlot, surface: WidgetKitSurface, contentVersion: Int?)
}
