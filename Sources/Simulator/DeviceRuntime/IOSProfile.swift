/// The figures of one iOS generation's background rules, each a numbered rule of docs/device-runtime.md
/// (with its source in ../shared/seeds/ or Apple's documentation). A simulated device says which iOS it
/// plays: `ios: 6`, `ios: 7`, `ios: 13`, `ios: 17`.
public struct IOSProfile: Sendable, Equatable {
    /// The iOS major version played.
    public var version: Int
    /// R2: time a background task may run after the app leaves the foreground (600 s on iOS 6; under
    /// 10 minutes, 180 s, on iOS 7–12; about 30 s from iOS 13).
    public var backgroundTaskAllowanceSeconds: Int64
    /// R3: how long before the allowance runs out the expiration handler is called.
    public var expirationWarningSeconds: Int64
    /// R4: background tasks advance only while the device is awake (iOS 7+); before, the device was kept
    /// awake for the whole allowance.
    public var opportunisticTasks: Bool
    /// R5: DidEnterBackground must return within this, or the app is terminated (the watchdog).
    public var didEnterBackgroundSeconds: Int64
    /// R6: background fetch exists (iOS 7+).
    public var backgroundFetch: Bool
    /// R6: a fetch must call its completion handler within this, or the app is terminated.
    public var fetchCompletionSeconds: Int64
    /// R6: the system's shortest interval between two fetches of one app (`Minimum`).
    public var minimumFetchIntervalSeconds: Int64
    /// R7: silent notifications exist (`content-available`, iOS 7+, 002): before, a silent push wakes
    /// nothing.
    public var silentPushes: Bool
    /// R7: a silent push's wake must call its completion handler within this, or the app is terminated.
    public var silentWakeSeconds: Int64
    /// R8: a location wake's background time, unless the app starts a background task.
    public var locationWakeSeconds: Int64
    /// R9: background URL sessions exist (iOS 7+).
    public var backgroundSessions: Bool
    /// R9: how long a discretionary transfer waits before the system starts it (good conditions).
    public var discretionaryDelaySeconds: Int64
    /// R9: how many times slower a background session transfers than a foreground one.
    public var backgroundSessionSlowdown: Double
    /// R10: time an app relaunched for `handleEventsForBackgroundURLSession` has to call its handler.
    public var sessionEventsSeconds: Int64
    /// R4: how long an alert or another interruption keeps a sleeping device awake.
    public var interruptionAwakeSeconds: Int64

    public static let ios6 = IOSProfile(
        version: 6, backgroundTaskAllowanceSeconds: 600, expirationWarningSeconds: 5, opportunisticTasks: false,
        didEnterBackgroundSeconds: 5, backgroundFetch: false, fetchCompletionSeconds: 30,
        minimumFetchIntervalSeconds: 900, silentPushes: false, silentWakeSeconds: 30, locationWakeSeconds: 10,
        backgroundSessions: false,
        discretionaryDelaySeconds: 0, backgroundSessionSlowdown: 1, sessionEventsSeconds: 30,
        interruptionAwakeSeconds: 10)

    public static let ios7 = IOSProfile(
        version: 7, backgroundTaskAllowanceSeconds: 180, expirationWarningSeconds: 5, opportunisticTasks: true,
        didEnterBackgroundSeconds: 5, backgroundFetch: true, fetchCompletionSeconds: 30,
        minimumFetchIntervalSeconds: 900, silentPushes: true, silentWakeSeconds: 30, locationWakeSeconds: 10,
        backgroundSessions: true,
        discretionaryDelaySeconds: 300, backgroundSessionSlowdown: 4, sessionEventsSeconds: 30,
        interruptionAwakeSeconds: 10)

    public static let ios13: IOSProfile = {
        var profile = ios7
        profile.version = 13
        profile.backgroundTaskAllowanceSeconds = 30
        return profile
    }()

    public static let ios17: IOSProfile = {
        var profile = ios13
        profile.version = 17
        return profile
    }()

    /// iOS 18: the background rules of 17; a Live Activity can listen on a broadcast channel
    /// (`input-push-channel`, `.channel(id)`; docs/live-activities.md).
    public static let ios18: IOSProfile = {
        var profile = ios17
        profile.version = 18
        return profile
    }()

    /// iOS 26: the rules of 18; a Home Screen widget can reload on a push of its own (`WidgetPushHandler`,
    /// `WidgetKitSurface.widget`).
    public static let ios26: IOSProfile = {
        var profile = ios18
        profile.version = 26
        return profile
    }()

    /// The iOS generations modelled (docs/device-runtime.md), each with its rules: a profile's `ios`.
    public static let versions: [(major: Int, profile: IOSProfile)] = [
        (6, ios6), (7, ios7), (13, ios13), (17, ios17), (18, ios18), (26, ios26),
    ]

    /// The generation `n` plays: the latest modelled one not after it (`versions`; a profile file may
    /// only name one of them).
    public static func version(_ n: Int) -> IOSProfile {
        versions.last { $0.major <= n }?.profile ?? ios6
    }
}
