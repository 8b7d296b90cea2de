/// What a simulated app does with each opportunity iOS gives it, and how well it keeps the rules.
/// Fractions are chances per opportunity (0: never, 1: always).
public struct AppBehaviour: Sendable, Equatable {
    /// R6: the app's minimum fetch interval.
    public enum FetchInterval: Sendable, Equatable {
        /// The default: no background fetch.
        case never
        /// The system decides.
        case minimum
        /// No fetch within this many seconds of the last one; then the system decides.
        case custom(seconds: Int64)
    }

    public var fetchInterval: FetchInterval = .never
    /// On a silent wake or a fetch: fetch the manifest, and when it names a newer item, download the
    /// item in a background session (R9) before calling the completion handler.
    public var downloadsInBackgroundSession = true
    /// The size of the app's items, asked of the content server (`?bytes=`); nil: the server's own size.
    public var itemBytes: Int?
    /// Milliseconds of the app's own work after the manifest arrives, before it calls the handler.
    public var workMilliseconds: Int64 = 500
    /// Milliseconds DidEnterBackground takes (R5: over the watchdog's 5 s, the app is terminated).
    public var didEnterBackgroundMilliseconds: Int64 = 50
    /// Chance that the app never calls a wake's or a fetch's completion handler.
    public var forgetsCompletion = 0.0
    /// Chance that the app never ends a background task (its expiration handler does not end it either).
    public var forgetsEndingTask = 0.0
    /// Chance that the app never calls the handler of `handleEventsForBackgroundURLSession`.
    public var forgetsSessionHandler = 0.0
    /// On leaving the foreground while a foreground download runs: protect it with a background task,
    /// and when the task expires move it to a background session (resume data for downloads).
    public var movesDownloadToBackgroundSession = true
    /// The app monitors significant location changes: each of the user's wakes it (R8).
    public var monitorsLocation = false
    /// Live Activities the app keeps on the Lock Screen (a game each, followed all day), each showing
    /// the newest version of the app's content its updates brought ([LA], docs/live-activities.md).
    public var liveActivities = 0
    /// What WidgetKit shows for the app (a Home Screen widget, a control), each reloading on its own push
    /// and seen whenever the screen comes on.
    public var surfaces: WidgetKitSurfaces = []

    public init() {}
}
