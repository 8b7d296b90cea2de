import PushModel

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What a device's user does, as a profile says: opens an app around habitual times of day (and now
/// and then at others), uses it for a while, leaves it (sometimes swiping it away), opens an app for
/// some of its alerts, and has Low Power Mode on for a stretch of the day. Pure: it says when its next
/// event is and what it is; the shell feeds those to the device's runtime.
///
/// The user's own opens (habits and extra opens) and their visits are drawn from one random stream and
/// planned one after the other, each from the end of the last; the opens prompted by alerts, and their
/// visits, from another. So the user's own opens follow from the seed and the start alone — the same in
/// a real run and in a forecast, however differently alerts arrive — and an alert-prompted visit never
/// moves them (an own open due during one switches apps).
public struct UserModel: Sendable {
    public let profile: UserProfile
    let apps: [AppSlot]
    /// The user's own opens and visits, Low Power Mode, location changes.
    private var random: FastRandom
    /// The alert-prompted opens and their visits.
    private var prompts: FastRandom
    /// This user's own offset from the profile's habit hours.
    private let shift: Int64
    /// Background App Refresh off on this device (the whole run).
    public let refreshOff: Bool

    private struct Visit {
        var app: AppSlot
        var leaveAt: UnixTime
        var forceQuits: Bool
        /// One of the user's own (its end plans the next own open), not prompted by an alert.
        var own: Bool
    }
    /// The user's next own open (nil: none planned — a visit of theirs is under way, or they never open
    /// anything).
    private var ownOpen: (at: UnixTime, app: AppSlot)?
    /// An open an alert prompted, waiting for its reaction time.
    private var promptedOpen: (at: UnixTime, app: AppSlot)?
    private var visit: Visit?
    private var lowPowerAt: UnixTime?
    private var lowPowerUntil: UnixTime?
    /// The apps that monitor significant location changes, and when the user's next one is.
    private let locationApps: [AppSlot]
    private var locationAt: UnixTime?
    /// Restarts: drawn from a stream of their own, so a profile with them keeps every other draw.
    private var reboots: FastRandom
    private var rebootAt: UnixTime?

    static let day: Int64 = 86_400_000
    static let hour: Int64 = 3_600_000

    /// `locationApps`: the apps that monitor significant location changes (each change wakes them, R8).
    public init(profile: UserProfile, apps: [AppSlot], locationApps: [AppSlot] = [], seed: UInt64, now: UnixTime) {
        self.profile = profile
        self.apps = apps
        self.locationApps = locationApps
        random = FastRandom(seed: seed ^ 0x5EED_0F05_E700)
        prompts = FastRandom(seed: seed ^ 0xA1E7_0F05_E700)
        reboots = FastRandom(seed: seed ^ 0xB007_0F05_E700)
        shift = Int64((Self.uniform(&random) * 2 - 1) * profile.habit_shift_hours * Double(Self.hour))
        refreshOff = Self.uniform(&random) < profile.refresh_off_share
        if profile.low_power_hours_per_day > 0 {
            lowPowerAt = now.adding(milliseconds: Int64(Self.uniform(&random) * Double(Self.day)))
        }
        planOpen(after: now)
        planLocationChange(after: now)
        planReboot(after: now)
        nextAt = earliest()
    }

    /// When the next event is due: kept as the plans change (a forecast asks after every event).
    public private(set) var nextAt: UnixTime?

    private func earliest() -> UnixTime? {
        var earliest: UnixTime?
        @inline(__always) func consider(_ time: UnixTime?) {
            guard let time else { return }
            if let current = earliest, current <= time { return }
            earliest = time
        }
        consider(lowPowerAt)
        consider(lowPowerUntil)
        consider(locationAt)
        consider(rebootAt)
        consider(ownOpen?.at)
        if let visit { consider(visit.leaveAt) } else { consider(promptedOpen?.at) }
        return earliest
    }

    /// The events due by `now` (the shell calls this at `nextAt`, or later), and plans the next. Each is
    /// planned from when the last was due, not from when it ran, so the user's own events follow from the
    /// seed and the start alone, however late a real shell's timer fires.
    public mutating func fire(at now: UnixTime) -> [RuntimeEvent] {
        defer { nextAt = earliest() }
        var events: [RuntimeEvent] = []
        if let at = lowPowerAt, at <= now {
            events.append(.lowPowerMode(true))
            lowPowerUntil = at.adding(milliseconds: Int64(profile.low_power_hours_per_day * Double(Self.hour)))
            lowPowerAt = at.adding(milliseconds: Self.day)
        }
        if let until = lowPowerUntil, until <= now {
            events.append(.lowPowerMode(false))
            lowPowerUntil = nil
        }
        if let at = locationAt, at <= now {
            events += locationApps.map { .locationChanged(app: $0) }
            planLocationChange(after: at)
        }
        if let at = rebootAt, at <= now {
            events.append(.rebooted)
            planReboot(after: at)
        }
        if let current = visit, current.leaveAt <= now {
            events += [leaving(current), .screen(on: false)]
            visit = nil
            if current.own { planOpen(after: current.leaveAt) }
        }
        if let own = ownOpen, own.at <= now {
            // The user's own open; during a prompted visit they switch to it.
            if let current = visit {
                events.append(leaving(current))
            } else {
                events.append(.screen(on: true))
            }
            events.append(.userOpened(app: own.app))
            ownOpen = nil
            promptedOpen = nil
            visit = Self.visit(own.app, own: true, at: own.at, profile: profile, random: &random)
        } else if visit == nil, let prompted = promptedOpen, prompted.at <= now {
            events += [.screen(on: true), .userOpened(app: prompted.app)]
            promptedOpen = nil
            visit = Self.visit(prompted.app, own: false, at: prompted.at, profile: profile, random: &prompts)
        }
        return events
    }

    private func leaving(_ visit: Visit) -> RuntimeEvent {
        visit.forceQuits ? .userForceQuit(app: visit.app) : .userLeft(app: visit.app)
    }

    /// A visit of `app` from `now`: its length (exponential, `session_seconds`) and whether it ends with a
    /// swipe, drawn from `random` (the user's own stream or the prompts').
    private static func visit(
        _ app: AppSlot, own: Bool, at now: UnixTime, profile: UserProfile, random: inout FastRandom
    ) -> Visit {
        let length = max(1000, Int64(exponential(mean: profile.session_seconds * 1000, &random)))
        return Visit(
            app: app, leaveAt: now.adding(milliseconds: length),
            forceQuits: uniform(&random) < profile.force_quit_share, own: own)
    }

    /// The user's next significant location change (exponential, `location_changes_per_day`), when an
    /// app monitors them.
    private mutating func planLocationChange(after now: UnixTime) {
        guard !locationApps.isEmpty, profile.location_changes_per_day > 0 else { return }
        locationAt = now.adding(
            milliseconds: max(
                1, Int64(Self.exponential(mean: Double(Self.day) / profile.location_changes_per_day, &random))))
    }

    /// The device's next restart (exponential, `reboots_per_day`).
    private mutating func planReboot(after now: UnixTime) {
        guard profile.reboots_per_day > 0 else { return }
        rebootAt = now.adding(
            milliseconds: max(1, Int64(Self.exponential(mean: Double(Self.day) / profile.reboots_per_day, &reboots))))
    }

    /// An alert of `app` was shown: a user who is not using an app opens it, `alert_open_share` of
    /// the time, after a reaction time (exponential, mean `alert_open_seconds`), unless an open was due
    /// sooner. Returns whether it planned one. Drawn from the prompts' own stream.
    @discardableResult
    public mutating func alertShown(_ app: AppSlot, at now: UnixTime) -> Bool {
        defer { nextAt = earliest() }
        // A user who never opens anything of their own (no habits, no extra opens) ignores alerts too.
        guard visit == nil, ownOpen != nil, apps.contains(app), Self.uniform(&prompts) < profile.alert_open_share
        else {
            return false
        }
        let reaction = Self.exponential(mean: profile.alert_open_seconds * 1000, &prompts)
        let at = now.adding(milliseconds: max(1000, Int64(reaction)))
        let sooner = [ownOpen?.at, promptedOpen?.at].compactMap { $0 }.min()
        if let sooner, sooner <= at { return false }
        promptedOpen = (at, app)
        return true
    }

    /// The next open: the nearest habitual time (each moved by this user's shift and a jitter) or a
    /// random extra open, whichever comes first; the app picked at random among the device's.
    private mutating func planOpen(after now: UnixTime) {
        ownOpen = nil
        guard !apps.isEmpty else { return }
        var candidates: [Int64] = []
        let dayStart = now.milliseconds - now.milliseconds % Self.day
        for hours in profile.habit_hours {
            let window = Int64(profile.habit_jitter_minutes * 60_000)
            let jitter = Int64((Self.uniform(&random) * 2 - 1) * Double(window))
            // A habit whose window has begun was this visit's (or is past): the next day's.
            var base = dayStart + Int64(hours * Double(Self.hour)) + shift
            while base - window <= now.milliseconds { base += Self.day }
            candidates.append(base + jitter)
        }
        if profile.extra_opens_per_day > 0 {
            candidates.append(
                now.milliseconds
                    + Int64(Self.exponential(mean: Double(Self.day) / profile.extra_opens_per_day, &random)))
        }
        guard let at = candidates.min() else { return }
        ownOpen = (UnixTime(milliseconds: max(at, now.milliseconds + 1)), apps[Int(random.next() % UInt64(apps.count))])
    }

    private static func uniform(_ random: inout FastRandom) -> Double { Double(random.next() >> 11) / Double(1 << 53) }

    /// An exponential draw of `mean` from `random` (the user's own stream or the prompts').
    private static func exponential(mean: Double, _ random: inout FastRandom) -> Double {
        -mean * log1p(-uniform(&random))
    }
}

/// What a device's users do (the `users:` part of a profile in Config/iphone).
public struct UserProfile: Sendable, Equatable, Decodable {
    /// Hours of the day (UTC, fractions allowed) when users habitually open the app.
    public var habit_hours: [Double] = [8, 12.5, 21]
    /// Each user's habits are moved by up to this many hours, either way.
    public var habit_shift_hours: Double = 1
    /// Each habitual open lands within this many minutes of its time, either way.
    public var habit_jitter_minutes: Double = 20
    /// Opens at random times, per day, besides the habitual ones.
    public var extra_opens_per_day: Double = 2
    /// Mean length of a visit, in seconds.
    public var session_seconds: Double = 90
    /// Share of visits that end with a force-quit (swiped away) instead of leaving.
    public var force_quit_share: Double = 0.1
    /// Hours per day in Low Power Mode (one stretch a day); 0: never.
    public var low_power_hours_per_day: Double = 0
    /// Share of devices with Background App Refresh off.
    public var refresh_off_share: Double = 0.05
    /// Share of alerts, shown while the user is not using an app, that the user opens the app for.
    public var alert_open_share: Double = 0.1
    /// Mean time from an alert to that open, in seconds.
    public var alert_open_seconds: Double = 120
    /// Significant location changes per day (the user moving about); each wakes the apps that monitor
    /// them (R8).
    public var location_changes_per_day: Double = 0
    /// Restarts per day (an update, a flat battery, the user): after each the device's silent wakes wait
    /// out the herd window (`policy.herd_seconds`).
    public var reboots_per_day: Double = 0
    /// Background wakes a day the phone's other apps (not the ones modelled) draw from its device-wide
    /// daily budget (`policy.budget.model`).
    public var other_apps_wakes_per_day: Double = 0
    /// The developer's phone with Xcode attached: the throttle is off ("works from Xcode, not from
    /// TestFlight").
    public var debugger_attached = false

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case habit_hours, habit_shift_hours, habit_jitter_minutes, extra_opens_per_day, session_seconds
        case force_quit_share, low_power_hours_per_day, refresh_off_share, alert_open_share, alert_open_seconds
        case location_changes_per_day, reboots_per_day, other_apps_wakes_per_day, debugger_attached
    }

    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, known: CodingKeys.self)
        let values = try decoder.container(keyedBy: CodingKeys.self)
        let defaults = UserProfile()
        habit_hours = try values.decodeIfPresent([Double].self, forKey: .habit_hours) ?? defaults.habit_hours
        habit_shift_hours =
            try values.decodeIfPresent(Double.self, forKey: .habit_shift_hours) ?? defaults.habit_shift_hours
        habit_jitter_minutes =
            try values.decodeIfPresent(Double.self, forKey: .habit_jitter_minutes) ?? defaults.habit_jitter_minutes
        extra_opens_per_day =
            try values.decodeIfPresent(Double.self, forKey: .extra_opens_per_day) ?? defaults.extra_opens_per_day
        session_seconds = try values.decodeIfPresent(Double.self, forKey: .session_seconds) ?? defaults.session_seconds
        force_quit_share =
            try values.decodeIfPresent(Double.self, forKey: .force_quit_share) ?? defaults.force_quit_share
        low_power_hours_per_day =
            try values.decodeIfPresent(Double.self, forKey: .low_power_hours_per_day)
            ?? defaults.low_power_hours_per_day
        refresh_off_share =
            try values.decodeIfPresent(Double.self, forKey: .refresh_off_share) ?? defaults.refresh_off_share
        alert_open_share =
            try values.decodeIfPresent(Double.self, forKey: .alert_open_share) ?? defaults.alert_open_share
        alert_open_seconds =
            try values.decodeIfPresent(Double.self, forKey: .alert_open_seconds) ?? defaults.alert_open_seconds
        location_changes_per_day =
            try values.decodeIfPresent(Double.self, forKey: .location_changes_per_day)
            ?? defaults.location_changes_per_day
        reboots_per_day = try values.decodeIfPresent(Double.self, forKey: .reboots_per_day) ?? defaults.reboots_per_day
        other_apps_wakes_per_day =
            try values.decodeIfPresent(Double.self, forKey: .other_apps_wakes_per_day)
            ?? defaults.other_apps_wakes_per_day
        debugger_attached =
            try values.decodeIfPresent(Bool.self, forKey: .debugger_attached) ?? defaults.debugger_attached
    }

    /// No habits and no extra opens: valid in a file (a command's `--opens-per-hour` may add opens), but
    /// a fleet of such users never opens its apps (`IPhoneMix` refuses it, naming both ways out).
    public var neverOpens: Bool { habit_hours.isEmpty && extra_opens_per_day == 0 }

    /// What is wrong with it, naming the key; nil when valid.
    public func problem() -> String? {
        if habit_hours.contains(where: { !(0..<24).contains($0) }) { return "habit_hours: each must be from 0 to 24" }
        for (key, value) in [
            ("force_quit_share", force_quit_share), ("refresh_off_share", refresh_off_share),
            ("alert_open_share", alert_open_share),
        ] where !(0...1).contains(value) {
            return "\(key): must be between 0 and 1, got \(value)"
        }
        if session_seconds <= 0 { return "session_seconds: must be positive" }
        if alert_open_seconds <= 0 { return "alert_open_seconds: must be positive" }
        if extra_opens_per_day < 0 || habit_shift_hours < 0 || habit_jitter_minutes < 0 || location_changes_per_day < 0
        {
            return
                "extra_opens_per_day, habit_shift_hours, habit_jitter_minutes, location_changes_per_day: must not be negative"
        }
        if !(0...100).contains(reboots_per_day) {
            return "reboots_per_day: must be from 0 to 100, got \(reboots_per_day)"
        }
        if !(0...100_000).contains(other_apps_wakes_per_day) {
            return "other_apps_wakes_per_day: must be from 0 to 100000, got \(other_apps_wakes_per_day)"
        }
        if !(0...24).contains(low_power_hours_per_day) { return "low_power_hours_per_day: must be from 0 to 24" }
        return nil
    }
}
