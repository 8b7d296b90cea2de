import PushModel

/// A kind of simulated iPhone, as a file in Config/iphone describes it: the iOS it plays, its apps (what
/// each does with each opportunity, and what the app's backend sends when it publishes), and its users.
/// Every key is optional but `apps`; an unknown key is an error that names it.
public struct IPhoneProfile: Sendable, Equatable, Decodable {
    /// The iOS generation played (`IOSProfile.version`).
    public var ios = 17
    public var apps: [AppProfile]
    public var users = UserProfile()

    public init(ios: Int = 17, apps: [AppProfile], users: UserProfile = UserProfile()) {
        self.ios = ios
        self.apps = apps
        self.users = users
    }

    enum CodingKeys: String, CodingKey, CaseIterable { case ios, apps, users }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, known: CodingKeys.self)
        let values = try decoder.container(keyedBy: CodingKeys.self)
        ios = try values.decodeIfPresent(Int.self, forKey: .ios) ?? 17
        apps = try values.decode([AppProfile].self, forKey: .apps)
        users = try values.decodeIfPresent(UserProfile.self, forKey: .users) ?? UserProfile()
    }

    public var iosProfile: IOSProfile { IOSProfile.version(ios) }

    /// What its apps' backends send on publishing, and how the apps fetch: `silent, fetch minimum`.
    public var strategy: String {
        apps.map { app in
            (app.announce == .silent_and_alert ? "silent + alert" : app.announce.rawValue)
                + (app.fetch == "never" ? "" : ", fetch \(app.fetch)")
                + (app.background_download ? "" : ", foreground download")
                + app.liveActivityStrategy + (app.widget ? ", widget push" : "") + (app.control ? ", control push" : "")
        }.joined(separator: "; ")
    }

    /// What is wrong with it, naming the key; nil when valid.
    public func problem() -> String? {
        if !IOSProfile.versions.contains(where: { $0.major == ios }) {
            let known = IOSProfile.versions.map { String($0.major) }.joined(separator: ", ")
            return "ios: expected one of \(known) (the iOS generations docs/device-runtime.md models), got \(ios)"
        }
        if apps.isEmpty { return "apps: at least one app" }
        var seen: Set<String> = []
        for (index, app) in apps.enumerated() {
            if let problem = app.problem() { return "apps[\(index)].\(problem)" }
            if !seen.insert(app.bundle_id).inserted { return "apps[\(index)].bundle_id: '\(app.bundle_id)' twice" }
            if app.channels > 0, ios < LiveActivityBook.channelsSince {
                return
                    "apps[\(index)].channels: Live Activities on broadcast channels need ios: \(LiveActivityBook.channelsSince) or later, got ios: \(ios)"
            }
            for surface in WidgetKitSurface.allCases where app.surfaces.contains(surface) && ios < surface.since {
                return
                    "apps[\(index)].\(surface.rawValue): a \(surface.rawValue) reloaded by its push needs ios: \(surface.since) or later, got ios: \(ios)"
            }
        }
        if let problem = users.problem() { return "users.\(problem)" }
        return nil
    }
}

/// One app of a simulated iPhone: its behaviour (`AppBehaviour`) and its backend's strategy when it
/// publishes new content.
public struct AppProfile: Sendable, Equatable, Decodable {
    /// What the app's backend POSTs when it publishes a version (its push strategy).
    public enum Announcement: String, Sendable, Equatable, Decodable, CaseIterable {
        /// Nothing: the app learns of new content at fetches and opens only.
        case none
        /// A silent push (`content-available: 1`, `apns-push-type: background`, priority 5).
        case silent
        /// An alert (`apns-push-type: alert`, priority 10).
        case alert
        /// Both: a silent push to fetch and an alert to tell the user.
        case silent_and_alert

        public var sendsSilent: Bool { self == .silent || self == .silent_and_alert }
        public var sendsAlert: Bool { self == .alert || self == .silent_and_alert }
    }

    public var bundle_id: String
    public var announce = Announcement.silent
    /// `never`, `minimum` or a number of seconds (R6).
    public var fetch = "never"
    public var background_download = true
    /// The size of its items (nil: the content server's default).
    public var item_bytes: Int?
    public var work_ms: Int64 = 500
    public var did_enter_background_ms: Int64 = 50
    public var forgets_completion = 0.0
    public var forgets_ending_task = 0.0
    public var forgets_session_handler = 0.0
    public var moves_download_to_background_session = true
    /// The app monitors significant location changes (the users' `location_changes_per_day` wake it).
    public var monitors_location = false
    /// Live Activities the app keeps (a game each, followed all day); each shows the app's content, and
    /// its backend updates each on every version it publishes.
    public var live_activities = 0
    /// How many of them follow a broadcast channel (one each): the backend broadcasts each version once
    /// per channel; the others get an update pushed to their own token, per device.
    public var channels = 0
    /// The priority of the updates pushed to the activities' tokens: 10 (counted against the update
    /// budget) or 5 (opportunistic).
    public var live_activity_priority = 10
    /// The app has `NSSupportsLiveActivitiesFrequentUpdates`: the larger update budget.
    public var frequent_pushes = false
    /// The app has a Home Screen widget (iOS 26's `WidgetPushHandler`), and its backend sends a widget push
    /// (`apns-push-type: widgets`) with each version: the widget reloads and shows it.
    public var widget = false
    /// The app has a control (iOS 18's `ControlPushHandler`: Control Center, the Lock Screen's buttons), and
    /// its backend sends a control push (`apns-push-type: controls`) with each version: the control
    /// refreshes and shows it.
    public var control = false

    /// What WidgetKit shows for it: `widget` and `control`.
    public var surfaces: WidgetKitSurfaces {
        var surfaces: WidgetKitSurfaces = []
        if widget { surfaces.insert(.widget) }
        if control { surfaces.insert(.control) }
        return surfaces
    }

    public init(bundle_id: String) { self.bundle_id = bundle_id }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case bundle_id, announce, fetch, background_download, item_bytes, work_ms, did_enter_background_ms
        case forgets_completion, forgets_ending_task, forgets_session_handler, moves_download_to_background_session
        case monitors_location, live_activities, channels, live_activity_priority, frequent_pushes, widget
        case control
    }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, known: CodingKeys.self)
        let values = try decoder.container(keyedBy: CodingKeys.self)
        var app = AppProfile(bundle_id: try values.decode(String.self, forKey: .bundle_id))
        func read<T: Decodable>(_ key: CodingKeys, _ field: WritableKeyPath<AppProfile, T>) throws {
            if let value = try values.decodeIfPresent(T.self, forKey: key) { app[keyPath: field] = value }
        }
        if let text = try? values.decodeIfPresent(String.self, forKey: .fetch) {
            app.fetch = text
        } else if let seconds = try values.decodeIfPresent(Int64.self, forKey: .fetch) {
            app.fetch = String(seconds)
        }
        try read(.announce, \.announce)
        try read(.background_download, \.background_download)
        app.item_bytes = try values.decodeIfPresent(Int.self, forKey: .item_bytes)
        try read(.work_ms, \.work_ms)
        try read(.did_enter_background_ms, \.did_enter_background_ms)
        try read(.forgets_completion, \.forgets_completion)
        try read(.forgets_ending_task, \.forgets_ending_task)
        try read(.forgets_session_handler, \.forgets_session_handler)
        try read(.moves_download_to_background_session, \.moves_download_to_background_session)
        try read(.monitors_location, \.monitors_location)
        try read(.live_activities, \.live_activities)
        try read(.channels, \.channels)
        try read(.live_activity_priority, \.live_activity_priority)
        try read(.frequent_pushes, \.frequent_pushes)
        try read(.widget, \.widget)
        try read(.control, \.control)
        self = app
    }

    /// `, 2 Live Activities (1 on a channel, 1 by token at priority 10, frequent)`; empty without any.
    var liveActivityStrategy: String {
        guard live_activities > 0 else { return "" }
        var parts: [String] = []
        if channels > 0 { parts.append("\(channels) on a channel") }
        if !tokenActivities.isEmpty {
            parts.append("\(tokenActivities.count) by token at priority \(live_activity_priority)")
        }
        if frequent_pushes { parts.append("frequent") }
        return
            ", \(live_activities) Live Activit\(live_activities == 1 ? "y" : "ies") (\(parts.joined(separator: ", ")))"
    }

    /// R6's interval for `fetch`; nil when it is none of `never`, `minimum` or a positive number of seconds.
    public var fetchInterval: AppBehaviour.FetchInterval? {
        switch fetch {
        case "never": .never
        case "minimum": .minimum
        default: Int64(fetch).flatMap { $0 > 0 ? .custom(seconds: $0) : nil }
        }
    }

    public func problem() -> String? {
        if bundle_id.isEmpty { return "bundle_id: must not be empty" }
        if fetchInterval == nil { return "fetch: expected never, minimum or a number of seconds, got '\(fetch)'" }
        if let item_bytes, !(1...(1 << 30)).contains(item_bytes) {
            return "item_bytes: from 1 to \(1 << 30), got \(item_bytes)"
        }
        if work_ms < 0 || did_enter_background_ms < 0 {
            return "work_ms, did_enter_background_ms: must not be negative"
        }
        for (key, value) in [
            ("forgets_completion", forgets_completion), ("forgets_ending_task", forgets_ending_task),
            ("forgets_session_handler", forgets_session_handler),
        ] where !(0...1).contains(value) {
            return "\(key): must be between 0 and 1, got \(value)"
        }
        if !(0...Self.maximumLiveActivities).contains(live_activities) {
            return "live_activities: from 0 to \(Self.maximumLiveActivities), got \(live_activities)"
        }
        if !(0...live_activities).contains(channels) {
            return "channels: from 0 to live_activities (\(live_activities)), got \(channels)"
        }
        if ![5, 10].contains(live_activity_priority) {
            return "live_activity_priority: 5 or 10, got \(live_activity_priority)"
        }
        return nil
    }

    /// Live Activities one app may keep here (iOS shows a handful on the Lock Screen).
    public static let maximumLiveActivities = 8

    /// The id a simulated device gives the app's kept Live Activity `index`; the tokens file names its
    /// update token `update:<id>`.
    public static func keptActivityID(_ bundleID: String, _ index: Int) -> String { "\(bundleID)/live-\(index)" }

    /// The index of the app's kept Live Activity `id` (nil: another activity).
    public static func keptActivityIndex(_ id: some StringProtocol, of bundleID: String) -> Int? {
        let prefix = keptActivityID(bundleID, 0).dropLast()
        guard id.hasPrefix(prefix) else { return nil }
        return Int(id.dropFirst(prefix.count))
    }

    /// The activities updated through their own tokens (the rest follow channels): indexes
    /// `channels..<live_activities`.
    public var tokenActivities: Range<Int> { min(channels, live_activities)..<live_activities }

    /// What the runtime plays for this app.
    public var behaviour: AppBehaviour {
        var behaviour = AppBehaviour()
        behaviour.fetchInterval = fetchInterval ?? .never
        behaviour.downloadsInBackgroundSession = background_download
        behaviour.itemBytes = item_bytes
        behaviour.workMilliseconds = work_ms
        behaviour.didEnterBackgroundMilliseconds = did_enter_background_ms
        behaviour.forgetsCompletion = forgets_completion
        behaviour.forgetsEndingTask = forgets_ending_task
        behaviour.forgetsSessionHandler = forgets_session_handler
        behaviour.movesDownloadToBackgroundSession = moves_download_to_background_session
        behaviour.monitorsLocation = monitors_location
        behaviour.liveActivities = live_activities
        behaviour.surfaces = surfaces
        return behaviour
    }
}
