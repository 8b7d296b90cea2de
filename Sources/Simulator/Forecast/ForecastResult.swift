import DeviceRuntime
import PushModel
import PushPolicy

/// What a forecast found: the freshness table of `pushgate simulate` (per kind of iPhone and for all),
/// the hour-by-hour curve of fresh-at-open, and what the freshness cost (pushes, wakes, awake time,
/// bytes, terminations, per device-day); with the settings that reproduce it.
public struct ForecastResult: Sendable, Codable {
    /// One kind's cost (and the fleet's, as "all").
    public struct Cost: Sendable, Codable, Equatable {
        public var profile: String
        public var devices: Int
        public var pushesSent: Int
        public var silentSent: Int
        public var alertsSent: Int
        /// Held pushes released with an alert or a keep-alive (piggybacked).
        public var piggybacked: Int
        /// Pushes replaced by a newer one (collapse id, newest-only).
        public var coalesced: Int
        /// Pushes held at first (over budget, force-quit, Low Power Mode, …).
        public var held: Int
        public var deadlineMisses: Int
        public var pushesPerDeviceDay: Double
        /// Background wakes (silent, fetch, location, session events) per device-day.
        public var wakesPerDeviceDay: Double
        /// Seconds apps ran in the background per device-day: a battery proxy.
        public var awakeSecondsPerDeviceDay: Double
        public var megabytesPerDeviceDay: Double
        public var terminations: Int
        /// Live Activity updates pushed to activities' tokens; of them, held over the update budget, and
        /// let go without reaching the device (a newer one replaced it while held, or it expired).
        public var liveActivityUpdatesSent = 0
        public var liveActivityOverBudget = 0
        public var liveActivityUpdatesDropped = 0
        /// Broadcast POSTs (one per channel per version) and the writes they fanned out to.
        public var broadcastsSent = 0
        public var broadcastWrites = 0
        /// Widget and control pushes (by `WidgetKitSurface`'s name), for a surface the profile's apps have.
        public var reloadPushes: [String: ReloadPushes] = [:]

        /// The pushes of one surface (all zero when its apps have none).
        public func reloadPushes(_ surface: WidgetKitSurface) -> ReloadPushes {
            reloadPushes[surface.rawValue] ?? ReloadPushes()
        }
    }

    /// A surface's pushes: sent, and delivered (the rest waited past the app's daily reload budget, and
    /// the newest replaced those still waiting).
    public struct ReloadPushes: Sendable, Codable, Equatable {
        public var sent = 0
        public var delivered = 0
        public var notDelivered: Int { sent - delivered }
    }

    public var seed: UInt64
    /// The settings that reproduce the run, as `key: value` lines.
    public var settings: [String]
    public var devices: Int
    public var hours: Double
    public var startMilliseconds: Int64
    public var versionsPublished: Int
    public var report: FreshnessReport
    public var hourly: [FreshnessReport.Hour]
    /// Pushes sent and background wakes per device, hour by hour.
    public var hourlyPushesPerDevice: [Double]
    public var hourlyWakesPerDevice: [Double]
    public var costs: [Cost]
    public var events: Int
    public var seconds: Double
    public var threads: Int
    public var trace: [ForecastTraceLine]

    init(
        scenario: ForecastScenario, ledger: FreshnessLedger, costs: [ForecastShard.KindCosts], hourlyPushes: [Int],
        hourlyWakes: [Int], events: Int, seconds: Double, threads: Int, trace: [ForecastTraceLine]
    ) {
        let fleet = Double(max(1, scenario.devices))
        hourlyPushesPerDevice = hourlyPushes.map { Double($0) / fleet }
        hourlyWakesPerDevice = hourlyWakes.map { Double($0) / fleet }
        seed = scenario.seed
        devices = scenario.devices
        hours = scenario.hours
        startMilliseconds = scenario.start.milliseconds
        let times = scenario.publications.times(from: scenario.start, until: scenario.end)
        versionsPublished = times.count
        var versions: [Int: Int64] = [:]
        for (index, at) in times.enumerated() { versions[index + 1] = at }
        var installs: [String: Int] = [:]
        for kind in scenario.kinds { installs[kind.name, default: 0] += kind.devices * kind.profile.apps.count }
        var report = ledger.report(versions: versions, hours: scenario.hours, apps: installs)
        for index in report.rows.indices {
            guard let kind = scenario.kinds.first(where: { $0.name == report.rows[index].profile }) else { continue }
            report.rows[index].strategy = kind.profile.strategy
        }
        self.report = report
        hourly = ledger.hourly(
            versions: versions, start: scenario.start.milliseconds, hours: Int(scenario.hours.rounded(.up)))
        var rows: [Cost] = []
        var total = ForecastShard.KindCosts()
        // A broadcast is one POST per channel per version, however many devices (of any kind) follow it.
        func broadcasts(_ apps: [AppProfile]) -> Int {
            var channels: [String: Int] = [:]
            for app in apps { channels[app.bundle_id] = max(channels[app.bundle_id] ?? 0, app.channels) }
            return times.count * channels.values.reduce(0, +)
        }
        for (index, kind) in scenario.kinds.enumerated() {
            total.add(costs[index])
            var cost = Self.cost(kind.name, devices: kind.devices, costs[index], report, hours: scenario.hours)
            cost.broadcastsSent = kind.devices > 0 ? broadcasts(kind.profile.apps) : 0
            rows.append(cost)
        }
        if scenario.kinds.count > 1 {
            var cost = Self.cost("all", devices: scenario.devices, total, report, hours: scenario.hours)
            cost.broadcastsSent = broadcasts(scenario.kinds.filter { $0.devices > 0 }.flatMap(\.profile.apps))
            rows.append(cost)
        }
        self.costs = rows
        self.events = events
        self.seconds = seconds
        self.threads = threads
        self.trace = trace
        settings = Self.describe(scenario)
    }

    static func cost(
        _ name: String, devices: Int, _ costs: ForecastShard.KindCosts, _ report: FreshnessReport, hours: Double
    ) -> Cost {
        let row = report.rows.first { $0.profile == name }
        let deviceDays = max(1e-9, Double(devices) * hours / 24)
        func rules(_ wanted: (Rule) -> Bool) -> Int {
            Rule.allCases.enumerated().filter { wanted($0.element) }.map { costs.rules[$0.offset] }.reduce(0, +)
        }
        let wakes = row.map { $0.wakes.values.reduce(0, +) } ?? 0
        let bytes = row.map { $0.foregroundBytes + $0.backgroundBytes } ?? 0
        var cost = Cost(
            profile: name, devices: devices, pushesSent: costs.pushesSent, silentSent: costs.silentSent,
            alertsSent: costs.alertsSent,
            piggybacked: rules { $0 == .piggybackAlert || $0 == .piggybackKeepAlive },
            coalesced: rules { $0 == .coalescedCollapseID || $0 == .coalescedNewest }, held: rules(\.isHeld),
            deadlineMisses: costs.deadlineMisses, pushesPerDeviceDay: Double(costs.pushesSent) / deviceDays,
            wakesPerDeviceDay: Double(wakes) / deviceDays,
            awakeSecondsPerDeviceDay: Double(costs.awakeMilliseconds) / 1000 / deviceDays,
            megabytesPerDeviceDay: Double(bytes) / 1e6 / deviceDays,
            terminations: row.map { $0.terminations.values.reduce(0, +) } ?? 0)
        cost.liveActivityUpdatesSent = costs.liveActivityUpdatesSent
        for surface in WidgetKitSurface.allCases where costs.reloadPushesSent[surface.index] > 0 {
            cost.reloadPushes[surface.rawValue] = ReloadPushes(
                sent: costs.reloadPushesSent[surface.index], delivered: costs.reloadPushesDelivered[surface.index])
        }
        cost.liveActivityOverBudget = rules { $0 == .liveActivityOverBudget }
        cost.liveActivityUpdatesDropped = costs.liveActivityUpdatesDropped
        cost.broadcastWrites = costs.broadcastWrites
        return cost
    }

    static func describe(_ scenario: ForecastScenario) -> [String] {
        let policy = scenario.policy
        var lines = [
            "seed: \(scenario.seed)",
            "devices: \(scenario.devices) (\(scenario.kinds.map { "\($0.name)=\($0.devices)" }.joined(separator: ",")))",
            "start: \(scenario.start.milliseconds) ms (Unix), hours: \(scenario.hours)",
            "publish every: \(scenario.publications.everySeconds) s"
                + (scenario.publications.hours.map { ", between \($0.start) h and \($0.end) h UTC" } ?? ""),
            "policy: budget \(policy.budgetCapacity), refill \(policy.refillIntervalSeconds) s, completion \(policy.completionDeadlineSeconds) s, held \(policy.heldStorage), piggyback \(policy.alertPiggybackScope.rawValue)",
            "field throttle: budget model \(policy.budgetModel.rawValue), device daily \(policy.deviceDailyCapacity), inactive app after \(policy.inactiveAppDays) days (0: off), herd window \(policy.herdSeconds) s",
            "Live Activity budget: \(policy.liveActivityCapacity), refill \(policy.liveActivityRefillSeconds) s; with frequent updates \(policy.liveActivityFrequentCapacity), refill \(policy.liveActivityFrequentRefillSeconds) s",
            "keep-alive: \(scenario.keepAliveSeconds) s ± \(Int(scenario.keepAliveJitter * 100)) %",
            "link: \(scenario.link.bytesPerSecond) B/s per device (0: unpaced), latency \(scenario.link.latencyMilliseconds) ms\(scenario.link.latencyP90Milliseconds.map { " (p90 \($0) ms)" } ?? ""); item \(scenario.itemBytes) bytes unless the app says",
        ]
        for kind in scenario.kinds {
            lines.append("\(kind.name): iOS \(kind.profile.ios), \(kind.profile.strategy)")
        }
        return lines
    }

    /// One line saying which of the numbers Apple does not publish the answer rests on, and how to try
    /// others.
    public static func assumptions(_ policy: PolicySettings) -> String {
        "It assumes numbers Apple does not publish: policy.budget.model=\(policy.budgetModel.rawValue), "
            + "policy.budget.capacity=\(policy.budgetCapacity) (one more every \(policy.refillIntervalSeconds) s), "
            + "policy.budget.device_daily.capacity=\(policy.deviceDailyCapacity), "
            + "policy.inactive_app_days=\(policy.inactiveAppDays), policy.herd_seconds=\(policy.herdSeconds) — "
            + "pushgate forecast --assume policy.budget.capacity=2,3,5 (any of them) shows whether an answer holds under others."
    }

    /// The cost table for a terminal.
    public var costText: String {
        var lines = [
            "| profile | devices | pushes / device-day | silent / alert sent | held | piggybacked | coalesced | wakes / device-day | awake s / device-day | MB / device-day | terminations | deadline misses |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for cost in costs {
            lines.append(
                "| \(cost.profile) | \(cost.devices) | \(Self.decimal(cost.pushesPerDeviceDay)) | \(cost.silentSent) / \(cost.alertsSent) | \(cost.held) | \(cost.piggybacked) | \(cost.coalesced) | \(Self.decimal(cost.wakesPerDeviceDay)) | \(Self.decimal(cost.awakeSecondsPerDeviceDay)) | \(Self.decimal(cost.megabytesPerDeviceDay)) | \(cost.terminations) | \(cost.deadlineMisses) |"
            )
        }
        if costs.contains(where: { !$0.reloadPushes.isEmpty }) {
            lines += [
                "", "| profile | widget or control | pushes | delivered | held past the reload budget or replaced |",
                "|---|---|---|---|---|",
            ]
            for cost in costs {
                for surface in WidgetKitSurface.allCases {
                    guard let pushes = cost.reloadPushes[surface.rawValue] else { continue }
                    lines.append(
                        "| \(cost.profile) | \(surface.rawValue) | \(pushes.sent) | \(pushes.delivered) | \(pushes.notDelivered) |"
                    )
                }
            }
        }
        if costs.contains(where: { $0.liveActivityUpdatesSent > 0 || $0.broadcastsSent > 0 }) {
            lines += [
                "",
                "| profile | Live Activity updates by token | held over budget | dropped (replaced while held, expired) | broadcasts (writes) |",
                "|---|---|---|---|---|",
            ]
            for cost in costs {
                lines.append(
                    "| \(cost.profile) | \(cost.liveActivityUpdatesSent) | \(cost.liveActivityOverBudget) | \(cost.liveActivityUpdatesDropped) | \(cost.broadcastsSent) (\(cost.broadcastWrites)) |"
                )
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Fresh at open hour by hour, as a text bar chart.
    public var hourlyText: String {
        hourly.map { hour in
            let share = hour.freshAtOpen.map { Int(($0 * 100).rounded()) }
            let bar = String(repeating: "█", count: (share ?? 0) / 4)
            return
                "\(hour.hour < 10 ? " " : "")\(hour.hour) h  \(share.map { "\($0 < 10 ? "  " : $0 < 100 ? " " : "")\($0) %" } ?? "   –")  \(bar)  (\(hour.opens) opens)"
        }.joined(separator: "\n")
    }

    /// The whole summary for a terminal.
    public var summary: String {
        """
        Forecast — \(devices) iPhones, \(Self.decimal(hours)) h of virtual time, seed \(seed)
        \(settings.map { "  " + $0 }.joined(separator: "\n"))
        freshness at open:
        \(report.text)
        what it cost:
        \(costText)
        fresh at open, hour by hour (UTC):
        \(hourlyText)
        \(versionsPublished) versions published; \(events) events in \(Self.decimal(seconds)) s on \(threads) thread\(threads == 1 ? "" : "s") (\(Int(Double(events) / max(seconds, 1e-9)).formatted) events/s)
        """
    }

    public static func decimal(_ value: Double) -> String {
        let tenths = Int((value * 10).rounded())
        return "\(tenths / 10).\(abs(tenths % 10))"
    }
}

extension Int {
    /// Thousands separated by commas.
    var formatted: String {
        let digits = String(Swift.abs(self))
        var out = ""
        for (index, character) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(character)
        }
        return (self < 0 ? "-" : "") + out
    }
}
