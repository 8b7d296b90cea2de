import PushModel

/// One app on a simulated device, as the runtime keeps it: its state, the wake it is in, its
/// background tasks, its transfers, its fetch schedule and the content it holds.
public struct AppRuntime: Sendable {
    public let bundleID: String
    public var behaviour: AppBehaviour
    public internal(set) var state: AppState = .notRunning
    /// The newest version whose item the app holds (nil: none yet).
    public internal(set) var contentVersion: Int?
    /// The version each of its Live Activities shows (nil: none yet), and the `aps.timestamp` of the
    /// update that brought it: updates apply in timestamp order, an older one is ignored as iOS ignores it.
    public internal(set) var activityVersions: [Int?]
    var activityTimestamps: [Int64?]
    /// The version its widget and its control show (nil: none yet, or none of them).
    public internal(set) var shown = WidgetKitSurface.Shown()

    /// A background wake: the app is running for it until it calls the handler or the deadline passes.
    struct Wake: Sendable {
        var kind: WakeKind
        var deadline: UnixTime
        /// When the app calls the handler (nil: not decided yet, waiting on a transfer).
        var completesAt: UnixTime?
        var result = CompletionResult.noData
        /// The app will never call the handler (it is terminated at the deadline, or suspended for a
        /// location wake).
        var forgets: Bool
        /// Foreground transfers the app waits for before it decides.
        var waitingOn: [Int] = []
    }
    var wake: Wake?

    /// A background task (R2–R4): `remaining` is allowance left, charged only while the device is awake
    /// when tasks are opportunistic.
    struct BackgroundTask: Sendable {
        var id: Int
        var remaining: Int64
        var expirationCalled = false
        var forgetsEnd: Bool
        /// The foreground transfer it protects.
        var protects: Int?
    }
    var tasks: [BackgroundTask] = []

    struct Transfer: Sendable {
        var request: TransferRequest
        /// A discretionary transfer waits until then before the system starts it (R9).
        var startsAt: UnixTime?
        /// The wake it serves, if any (content it brings is credited to that wake).
        var forWake: WakeKind?
    }
    var transfers = TransferList()
    /// Background-session transfers that finished while the app was not running, not yet handed to it.
    var finishedEvents: [(id: Int, result: TransferResult, forWake: WakeKind?)] = []

    /// DidEnterBackground is still running past the watchdog (R5): terminated then.
    var watchdogAt: UnixTime?
    /// A location wake's end (R8).
    var locationEndsAt: UnixTime?

    public internal(set) var fetch = FetchSchedule()

    public init(bundleID: String, behaviour: AppBehaviour) {
        self.bundleID = bundleID
        self.behaviour = behaviour
        activityVersions = Array(repeating: nil, count: max(0, behaviour.liveActivities))
        activityTimestamps = activityVersions.map { _ in nil }
    }

    /// Running in the background for a reason (a wake, a task, DidEnterBackground): not yet suspended.
    var busyInBackground: Bool {
        wake != nil || !tasks.isEmpty || watchdogAt != nil || locationEndsAt != nil
    }
}
