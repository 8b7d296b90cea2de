/// One line of a forecast's trace (`--trace`, one JSON object per line): what happened to a traced
/// device at `t` seconds from the start — a push and the gateway's decision, a user's or the system's
/// event, what the device's runtime did. Each event fills the fields it has; an absent one is none (a
/// freshness sample that shows no version has no `version_shown`).
public struct ForecastTraceLine: Sendable, Codable, Equatable {
    public var t: Double
    public var device: Int
    public var profile: String
    public var event: String
    public var app: String?
    public var apnsID: String?
    public var pushType: String?
    public var version: Int?
    public var activity: Int?
    public var timestamp: Int64?
    /// The gateway's: the policy's rule, whether a delivery wakes the app, why a wake was refused.
    public var rule: String?
    public var wake: Bool?
    public var reason: String?
    public var silent: Bool?
    /// On or off (the screen, Low Power Mode, Background App Refresh).
    public var on: Bool?
    public var state: String?
    public var result: String?
    public var kind: String?
    public var fetchPlannedBy: String?
    public var cause: String?
    public var by: String?
    /// A transfer's.
    public var transfer: Int?
    public var content: String?
    public var session: String?
    public var from: Int64?
    public var to: Int?
    public var manifestVersion: Int?
    public var itemVersion: Int?
    public var bytes: Int64?
    public var failed: Bool?
    /// A freshness sample's (an open, a Live Activity, a widget or a control seen): the version held or
    /// shown, the newest published by then, and whether it was fresh (nothing published yet: fresh).
    public var versionHeld: Int?
    public var versionShown: Int?
    public var newestPublished: Int?
    public var fresh: Bool?
    /// The device's conditions.
    public var lowPowerMode: Bool?
    public var backgroundAppRefreshOff: Bool?
    public var debuggerAttached: Bool?
    public var otherAppsWakesPerDay: Double?

    public init(t: Double, device: Int, profile: String, event: String) {
        self.t = t
        self.device = device
        self.profile = profile
        self.event = event
    }

    enum CodingKeys: String, CodingKey {
        case t, device, profile, event, app
        case apnsID = "apns_id"
        case pushType = "push_type"
        case version, activity, timestamp, rule, wake, reason, silent, on, state, result, kind
        case fetchPlannedBy = "fetch_planned_by"
        case cause, by, transfer, content, session, from, to
        case manifestVersion = "manifest_version"
        case itemVersion = "item_version"
        case bytes, failed
        case versionHeld = "version_held"
        case versionShown = "version_shown"
        case newestPublished = "newest_published"
        case fresh
        case lowPowerMode = "low_power_mode"
        case backgroundAppRefreshOff = "background_app_refresh_off"
        case debuggerAttached = "debugger_attached"
        case otherAppsWakesPerDay = "other_apps_wakes_per_day"
    }
}
