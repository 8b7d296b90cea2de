import PushModel

/// What a fleet's simulated iPhones did, and the headline figure: how fresh the content was when users
/// opened their apps. Fed every runtime action with its time and the device's profile name; the report
/// is made against the content server's publish times.
public struct FreshnessLedger: Sendable {
    /// 16 bytes an open: a day of 100,000 iPhones records about a million of them. A Live Activity, a
    /// widget or a control seen when the screen came on is kept the same way (`sample`), and reported apart.
    struct Open: Sendable {
        var at: Int64
        /// The version held (-1: none).
        var held: Int32
        var profile: UInt16
        var sample = Sample.open

        var view: Bool { sample != .open }
    }

    /// What a freshness sample is of.
    enum Sample: UInt8, Sendable {
        case open, activity, widget, control

        init(_ surface: WidgetKitSurface) {
            switch surface {
            case .widget: self = .widget
            case .control: self = .control
            }
        }

        /// The WidgetKit surface it is of (nil: an open or a Live Activity).
        var surface: WidgetKitSurface? {
            switch self {
            case .open, .activity: nil
            case .widget: .widget
            case .control: .control
            }
        }
    }

    /// What one profile's devices did, by kind: counted in place (a forecast records tens of millions).
    struct Tally: Sendable {
        var wakes = [Int](repeating: 0, count: WakeKind.names.count)
        var terminations = [Int](repeating: 0, count: TerminationCause.allCases.count)
        /// Content updates by what brought them: a wake kind, or the foreground (the last).
        var content = [Int](repeating: 0, count: WakeKind.names.count + 1)
        var relaunched = 0
        var wakeRefused = 0
        var backgroundTransfers = 0
        var foregroundTransfers = 0
        var foregroundBytes: Int64 = 0
        var backgroundBytes: Int64 = 0
        var failedTransfers = 0
        var durations = DurationHistogram()
        /// Live Activity updates the devices applied (older ones, ignored, not counted).
        var activityUpdates = 0
        /// Widget and control reloads the devices applied.
        var reloads = [Int](repeating: 0, count: WidgetKitSurface.allCases.count)

        mutating func add(_ other: Tally) {
            for index in wakes.indices { wakes[index] += other.wakes[index] }
            for index in terminations.indices { terminations[index] += other.terminations[index] }
            for index in content.indices { content[index] += other.content[index] }
            relaunched += other.relaunched
            wakeRefused += other.wakeRefused
            backgroundTransfers += other.backgroundTransfers
            foregroundTransfers += other.foregroundTransfers
            foregroundBytes += other.foregroundBytes
            backgroundBytes += other.backgroundBytes
            failedTransfers += other.failedTransfers
            durations.add(other.durations)
            activityUpdates += other.activityUpdates
            for index in reloads.indices { reloads[index] += other.reloads[index] }
        }
    }

    /// One profile's opens reduced to what the report needs: counts, and each content age (ms).
    struct OpenSummary: Sendable, Equatable {
        var opens = 0
        var fresh = 0
        var withoutContent = 0
        /// The age of the content held at each open that had some (ms, capped at 49 days).
        var ages: [UInt32] = []

        mutating func add(_ other: OpenSummary) {
            opens += other.opens
            fresh += other.fresh
            withoutContent += other.withoutContent
            ages += other.ages
        }
    }

    /// Opens folded as they come, when the publications are known in advance (a forecast): 4 bytes an
    /// open with content instead of 16 bytes an open kept to the end.
    struct Folded: Sendable {
        /// Version n was published at `publishTimes[n - 1]` (ms), in publish order.
        let publishTimes: [Int64]
        let start: Int64
        var hourOpens: [Int]
        var hourFresh: [Int]
        /// By profile index.
        var summaries: [OpenSummary] = []
        /// Live Activities seen, by profile index.
        var viewSummaries: [OpenSummary] = []
        /// Widgets and controls seen, by surface (`WidgetKitSurface.allCases`'s order), then profile index.
        var surfaceSummaries: [[OpenSummary]] = WidgetKitSurface.allCases.map { _ in [] }
    }

    private var opens: [Open] = []
    private var folded: Folded?
    /// Profile names, by the index their opens and tallies use.
    public private(set) var profiles: [String] = []
    private var tallies: [Tally] = []

    /// A ledger that keeps every open, for a report against versions known only at the end (a real run).
    public init() {}

    /// A ledger that folds each open as it comes, against publications known in advance (version n at
    /// `publishTimes[n - 1]`), with fresh at open hour by hour for `hours` hours from `start` (ms): what
    /// a forecast of a million iPhones can keep. Its report is the same as a keeping ledger's.
    public init(publishTimes: [Int64], start: Int64, hours: Int) {
        let hours = max(0, hours)
        folded = Folded(
            publishTimes: publishTimes, start: start, hourOpens: Array(repeating: 0, count: hours),
            hourFresh: Array(repeating: 0, count: hours))
    }

    /// The index `record(_:at:profileIndex:)` takes for `name` (added when new).
    public mutating func profileIndex(_ name: String) -> Int {
        if let index = profiles.firstIndex(of: name) { return index }
        profiles.append(name)
        tallies.append(Tally())
        folded?.summaries.append(OpenSummary())
        folded?.viewSummaries.append(OpenSummary())
        for index in WidgetKitSurface.allCases.indices { folded?.surfaceSummaries[index].append(OpenSummary()) }
        return profiles.count - 1
    }

    public mutating func record(_ action: RuntimeAction, at now: UnixTime, profile: String) {
        record(action, at: now, profileIndex: profileIndex(profile))
    }

    public mutating func record(_ action: RuntimeAction, at now: UnixTime, profileIndex profile: Int) {
        switch action {
        case .opened(_, let version):
            let open = Open(at: now.milliseconds, held: version.map { Int32($0) } ?? -1, profile: UInt16(profile))
            if folded != nil { fold(open) } else { opens.append(open) }
        case .woken(_, let kind): tallies[profile].wakes[kind.index] += 1
        case .terminated(_, let cause): tallies[profile].terminations[cause.index] += 1
        case .relaunched: tallies[profile].relaunched += 1
        case .wakeRefused: tallies[profile].wakeRefused += 1
        case .contentUpdated(_, _, let by): tallies[profile].content[by?.index ?? WakeKind.names.count] += 1
        case .activityViewed(_, _, let version):
            let view = Open(
                at: now.milliseconds, held: version.map { Int32($0) } ?? -1, profile: UInt16(profile),
                sample: .activity)
            if folded != nil { fold(view) } else { opens.append(view) }
        case .widgetKitViewed(_, let surface, let version):
            let view = Open(
                at: now.milliseconds, held: version.map { Int32($0) } ?? -1, profile: UInt16(profile),
                sample: Sample(surface))
            if folded != nil { fold(view) } else { opens.append(view) }
        case .activityUpdated: tallies[profile].activityUpdates += 1
        case .widgetKitReloaded(_, let surface, _): tallies[profile].reloads[surface.index] += 1
        case .startTransfer(let request):
            if case .background = request.session {
                tallies[profile].backgroundTransfers += 1
            } else {
                tallies[profile].foregroundTransfers += 1
            }
        case .appState, .complete, .cancelTransfer, .pauseTransfer, .resumeTransfer, .moveToBackgroundSession,
            .conditions, .rebooted:
            break
        }
    }

    /// A transfer that ended: its bytes, how long it took, whether it brought what it went for.
    public mutating func recordTransfer(
        background: Bool, bytes: Int64, milliseconds: Int64, succeeded: Bool, profile: String
    ) {
        recordTransfer(
            background: background, bytes: bytes, milliseconds: milliseconds, succeeded: succeeded,
            profileIndex: profileIndex(profile))
    }

    public mutating func recordTransfer(
        background: Bool, bytes: Int64, milliseconds: Int64, succeeded: Bool, profileIndex profile: Int
    ) {
        if background { tallies[profile].backgroundBytes += bytes } else { tallies[profile].foregroundBytes += bytes }
        if !succeeded { tallies[profile].failedTransfers += 1 }
        tallies[profile].durations.record(milliseconds)
    }

    /// Folds one open: fresh or not against the newest version published by then, its content's age.
    /// (Changed in place through `folded?`: no copy of its arrays.)
    private mutating func fold(_ open: Open) {
        guard let times = folded?.publishTimes, let start = folded?.start else { return }
        let newest = times.countAtOrBefore(open.at)
        let fresh = newest == 0 || Int(open.held) >= newest
        let profile = Int(open.profile)
        let age: UInt32? =
            open.held >= 1 && Int(open.held) <= times.count
            ? UInt32(clamping: open.at - times[Int(open.held) - 1]) : nil
        func count(_ summary: inout OpenSummary) {
            summary.opens += 1
            if fresh { summary.fresh += 1 }
            guard newest > 0 else { return }
            if let age { summary.ages.append(age) } else { summary.withoutContent += 1 }
        }
        if open.sample == .activity { return count(&folded!.viewSummaries[profile]) }
        if let surface = open.sample.surface {
            return count(&folded!.surfaceSummaries[surface.index][profile])
        }
        count(&folded!.summaries[profile])
        let hour = open.at >= start ? Int((open.at - start) / 3_600_000) : -1
        if hour >= 0, hour < folded?.hourOpens.count ?? 0 {
            folded?.hourOpens[hour] += 1
            if fresh { folded?.hourFresh[hour] += 1 }
        }
    }

    /// Adds what another ledger recorded (a forecast's shards, each its own ledger; both folding, or
    /// both keeping their opens).
    public mutating func merge(_ other: FreshnessLedger) {
        var map: [UInt16] = []
        for (index, name) in other.profiles.enumerated() {
            let mine = profileIndex(name)
            map.append(UInt16(mine))
            tallies[mine].add(other.tallies[index])
        }
        if folded != nil, let theirs = other.folded {
            for (index, summary) in theirs.summaries.enumerated() { folded?.summaries[Int(map[index])].add(summary) }
            for (index, summary) in theirs.viewSummaries.enumerated() {
                folded?.viewSummaries[Int(map[index])].add(summary)
            }
            for (surface, summaries) in theirs.surfaceSummaries.enumerated() {
                for (index, summary) in summaries.enumerated() {
                    folded?.surfaceSummaries[surface][Int(map[index])].add(summary)
                }
            }
            for hour in theirs.hourOpens.indices where hour < folded?.hourOpens.count ?? 0 {
                folded?.hourOpens[hour] += theirs.hourOpens[hour]
                folded?.hourFresh[hour] += theirs.hourFresh[hour]
            }
            return
        }
        opens.reserveCapacity(opens.count + other.opens.count)
        for open in other.opens {
            opens.append(Open(at: open.at, held: open.held, profile: map[Int(open.profile)], sample: open.sample))
        }
    }

    /// Opens recorded so far (every one is in exactly one profile's row).
    public var openCount: Int {
        folded.map { $0.summaries.reduce(0) { $0 + $1.opens } } ?? opens.count { !$0.view }
    }

    /// Every open counted once, against `versions` (number → publish time, ms).
    /// `apps`: app installs per profile (devices × apps), for wakes per app-hour.
    public func report(versions: [Int: Int64], hours: Double, apps: [String: Int]) -> FreshnessReport {
        var summaries: [OpenSummary]
        var views: [OpenSummary]
        /// By surface, then profile.
        var surfaces: [[OpenSummary]]
        if let folded {
            summaries = folded.summaries
            views = folded.viewSummaries
            surfaces = folded.surfaceSummaries
        } else {
            let published = versions.sorted { $0.key < $1.key }
            var bySample = [[[Open]]](repeating: [[Open]](repeating: [], count: profiles.count), count: 4)
            for open in opens { bySample[Int(open.sample.rawValue)][Int(open.profile)].append(open) }
            summaries = bySample[0].map { Self.summary(of: $0, published) }
            views = bySample[1].map { Self.summary(of: $0, published) }
            surfaces = WidgetKitSurface.allCases.map { surface in
                bySample[Int(Sample(surface).rawValue)].map { Self.summary(of: $0, published) }
            }
        }
        let order = profiles.indices.sorted { profiles[$0] < profiles[$1] }
        var rows = order.map { index in
            row(
                profiles[index], summaries[index], views[index], surfaces.map { $0[index] }, tallies[index],
                hours: hours, apps: apps[profiles[index]] ?? 1)
        }
        if profiles.count > 1 {
            var total = Tally()
            for tally in tallies { total.add(tally) }
            func sum(_ all: [OpenSummary]) -> OpenSummary {
                var total = OpenSummary()
                for summary in all { total.add(summary) }
                return total
            }
            rows.append(
                row(
                    "all", sum(summaries), sum(views), surfaces.map(sum), total, hours: hours,
                    apps: apps.values.reduce(0, +)))
        }
        return FreshnessReport(rows: rows)
    }

    /// Fresh at open hour by hour from `start` (ms), for `hours` hours: per hour, the opens in it and the
    /// share of them fresh, for all profiles together.
    public func hourly(versions: [Int: Int64], start: Int64, hours: Int) -> [FreshnessReport.Hour] {
        let published = versions.sorted { $0.key < $1.key }
        var opens = [Int](repeating: 0, count: max(0, hours))
        var fresh = [Int](repeating: 0, count: max(0, hours))
        if let folded, folded.start == start, folded.hourOpens.count == opens.count {
            opens = folded.hourOpens
            fresh = folded.hourFresh
        }
        for open in self.opens where !open.view {
            let hour = Int((open.at - start) / 3_600_000)
            guard open.at >= start, hour < hours else { continue }
            opens[hour] += 1
            if Self.isFresh(open, published) { fresh[hour] += 1 }
        }
        return opens.indices.map {
            FreshnessReport.Hour(
                hour: $0, opens: opens[$0], freshAtOpen: opens[$0] == 0 ? nil : Double(fresh[$0]) / Double(opens[$0]))
        }
    }

    /// Whether the app held the newest version published by the open (nothing published: fresh).
    private static func isFresh(_ open: Open, _ published: [(key: Int, value: Int64)]) -> Bool {
        guard let newest = Self.newest(at: open.at, published) else { return true }
        return open.held >= 0 && Int(open.held) >= newest.key
    }

    /// The newest version published at or before `at` (`published` is in version order, which is
    /// publish order).
    private static func newest(at: Int64, _ published: [(key: Int, value: Int64)]) -> (key: Int, value: Int64)? {
        var low = 0
        var high = published.count
        while low < high {
            let middle = (low + high) / 2
            if published[middle].value <= at { low = middle + 1 } else { high = middle }
        }
        return low == 0 ? nil : published[low - 1]
    }

    /// Kept opens reduced as a folding ledger reduces them as they come.
    private static func summary(of opens: [Open], _ published: [(key: Int, value: Int64)]) -> OpenSummary {
        var summary = OpenSummary()
        var publishedAt: [Int: Int64] = [:]
        for (version, at) in published { publishedAt[version] = at }
        for open in opens {
            summary.opens += 1
            // The newest version published by then; nothing published: fresh by definition.
            guard Self.newest(at: open.at, published) != nil else {
                summary.fresh += 1
                continue
            }
            if Self.isFresh(open, published) { summary.fresh += 1 }
            if open.held >= 0, let at = publishedAt[Int(open.held)] {
                summary.ages.append(UInt32(clamping: open.at - at))
            } else {
                summary.withoutContent += 1
            }
        }
        return summary
    }

    private func row(
        _ name: String, _ summary: OpenSummary, _ views: OpenSummary, _ surfaces: [OpenSummary], _ tally: Tally,
        hours: Double, apps: Int
    ) -> FreshnessReport.Row {
        let ages = summary.ages.sorted()
        let viewAges = views.ages.sorted()
        let fresh = summary.fresh
        let withoutContent = summary.withoutContent
        let opens = summary.opens
        func percentile(_ values: [UInt32], _ p: Double) -> Double? {
            guard !values.isEmpty else { return nil }
            return Double(values[min(values.count - 1, Int(Double(values.count) * p))]) / 1000
        }
        let perAppHour = hours > 0 && apps > 0 ? 1 / (hours * Double(apps)) : 0
        var wakes: [String: Int] = [:]
        var wakesPerAppHour: [String: Double] = [:]
        for (index, name) in WakeKind.names.enumerated() where tally.wakes[index] > 0 {
            wakes[name] = tally.wakes[index]
            wakesPerAppHour[name] = Double(tally.wakes[index]) * perAppHour
        }
        var terminations: [String: Int] = [:]
        for (index, cause) in TerminationCause.allCases.enumerated() where tally.terminations[index] > 0 {
            terminations[cause.rawValue] = tally.terminations[index]
        }
        let silent = WakeKind.silentPush(apnsID: APNsID(high: 0, low: 0)).index
        var shown: [String: FreshnessReport.SurfaceFigures] = [:]
        for (index, surface) in WidgetKitSurface.allCases.enumerated() {
            let seen = surfaces[index]
            let reloads = tally.reloads[index]
            guard seen.opens > 0 || reloads > 0 else { continue }
            shown[surface.rawValue] = FreshnessReport.SurfaceFigures(
                views: seen.opens, freshAtView: seen.opens == 0 ? nil : Double(seen.fresh) / Double(seen.opens),
                ageP50Seconds: percentile(seen.ages.sorted(), 0.5), reloads: reloads)
        }
        return FreshnessReport.Row(
            profile: name, opens: opens, freshOpens: fresh,
            freshAtOpen: opens == 0 ? nil : Double(fresh) / Double(opens),
            ageP50Seconds: percentile(ages, 0.5), ageP90Seconds: percentile(ages, 0.9),
            ageP99Seconds: percentile(ages, 0.99),
            opensWithoutContent: withoutContent,
            wakes: wakes, wakesPerAppHour: wakesPerAppHour, terminations: terminations,
            relaunches: tally.relaunched, wakesRefused: tally.wakeRefused,
            silentWakes: tally.wakes[silent], silentWakesWithNewContent: tally.content[silent],
            backgroundTransfers: tally.backgroundTransfers,
            foregroundTransfers: tally.foregroundTransfers,
            foregroundBytes: tally.foregroundBytes, backgroundBytes: tally.backgroundBytes,
            failedTransfers: tally.failedTransfers, transferP50Seconds: tally.durations.percentile(0.5),
            transferP90Seconds: tally.durations.percentile(0.9), activityViews: views.opens,
            activityFreshAtView: views.opens == 0 ? nil : Double(views.fresh) / Double(views.opens),
            activityAgeP50Seconds: percentile(viewAges, 0.5), activityAgeP90Seconds: percentile(viewAges, 0.9),
            activityAgeP99Seconds: percentile(viewAges, 0.99), activityViewsWithoutContent: views.withoutContent,
            activityUpdates: tally.activityUpdates, surfaces: shown)
    }
}

extension WakeKind {
    /// Every kind's name, in the order of `index`.
    static let names = [WakeKind.silentPush(apnsID: APNsID(high: 0, low: 0)), .fetch, .location, .sessionEvents].map(
        \.name)

    var index: Int {
        switch self {
        case .silentPush: 0
        case .fetch: 1
        case .location: 2
        case .sessionEvents: 3
        }
    }
}

extension TerminationCause {
    var index: Int {
        switch self {
        case .wakeOverrun: 0
        case .unendedTask: 1
        case .watchdog: 2
        case .sessionHandlerNotCalled: 3
        case .memoryPressure: 4
        case .reboot: 5
        }
    }
}

/// The freshness table: per profile (and all), every open counted once.
public struct FreshnessReport: Sendable, Equatable, Codable {
    public struct Row: Sendable, Equatable, Codable {
        public var profile: String
        public var opens: Int
        /// Opens at which the app held the newest published version.
        public var freshOpens: Int
        /// Share of opens at which the app held the newest published version.
        public var freshAtOpen: Double?
        /// Age of the content held at open (now − its publish time), in seconds.
        public var ageP50Seconds: Double?
        public var ageP90Seconds: Double?
        public var ageP99Seconds: Double?
        /// Opens at which the app held no content at all (though some was published).
        public var opensWithoutContent: Int
        /// Wakes by kind (`silent_push`, `fetch`, `location`, `session_events`), and per app per hour.
        public var wakes: [String: Int]
        public var wakesPerAppHour: [String: Double]
        public var terminations: [String: Int]
        public var relaunches: Int
        public var wakesRefused: Int
        public var silentWakes: Int
        /// Silent wakes whose download brought a new version (the rest were wasted wakes).
        public var silentWakesWithNewContent: Int
        public var backgroundTransfers: Int
        public var foregroundTransfers: Int
        /// Bytes the transfers that ended moved, by session kind.
        public var foregroundBytes: Int64
        public var backgroundBytes: Int64
        public var failedTransfers: Int
        /// How long transfers took, from start to end (a discretionary one's delay not counted).
        public var transferP50Seconds: Double?
        public var transferP90Seconds: Double?
        /// What the profile's backend sends when it publishes, and its apps' fetch (the fleet fills it in).
        public var strategy: String?
        /// Live Activities seen when the screen came on (each activity at each screen-on), the share that
        /// showed the newest version published by then, and the age of what they showed.
        public var activityViews = 0
        public var activityFreshAtView: Double?
        public var activityAgeP50Seconds: Double?
        public var activityAgeP90Seconds: Double?
        public var activityAgeP99Seconds: Double?
        /// Seen showing nothing yet (though some content was published).
        public var activityViewsWithoutContent = 0
        /// Live Activity updates the devices applied.
        public var activityUpdates = 0
        /// Widgets and controls (by `WidgetKitSurface`'s name), for a surface the profile's apps have.
        public var surfaces: [String: SurfaceFigures] = [:]

        /// The figures of one surface (all zero when its apps have none).
        public func figures(_ surface: WidgetKitSurface) -> SurfaceFigures {
            surfaces[surface.rawValue] ?? SurfaceFigures()
        }
    }

    /// A widget's or a control's: seen when the screen came on (each at each screen-on), the share that
    /// showed the newest version published by then, the age of what they showed, and the reloads the
    /// devices applied.
    public struct SurfaceFigures: Sendable, Equatable, Codable {
        public var views = 0
        public var freshAtView: Double?
        public var ageP50Seconds: Double?
        public var reloads = 0
    }

    /// One hour of the curve of fresh-at-open.
    public struct Hour: Sendable, Equatable, Codable {
        public var hour: Int
        public var opens: Int
        public var freshAtOpen: Double?
    }

    public var rows: [Row]

    public init(rows: [Row]) { self.rows = rows }

    /// The table for a terminal.
    public var text: String {
        func seconds(_ value: Double?) -> String { value.map { String(Int($0.rounded())) + " s" } ?? "–" }
        func tenths(_ value: Double?) -> String { value.map { decimal($0) + " s" } ?? "–" }
        /// One decimal, without Foundation's formatting.
        func decimal(_ value: Double) -> String {
            let tenths = Int((value * 10).rounded())
            return "\(tenths / 10).\(abs(tenths % 10))"
        }
        var lines = [
            "| profile | strategy | opens | fresh at open | age p50 | p90 | p99 | no content | wakes / app-hour | silent wakes (new content) | terminations | relaunches | transfers fg / bg (MB) | transfer p50 / p90 |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows {
            let share = row.freshAtOpen.map { "\(Int(($0 * 100).rounded())) %" } ?? "–"
            let terminations = row.terminations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                .joined(separator: ", ")
            let wakes = row.wakesPerAppHour.sorted { $0.key < $1.key }.map { "\($0.key) \(decimal($0.value))" }
                .joined(separator: ", ")
            let megabytes =
                "\(decimal(Double(row.foregroundBytes) / 1e6)) / \(decimal(Double(row.backgroundBytes) / 1e6))"
            lines.append(
                "| \(row.profile) | \(row.strategy ?? "–") | \(row.opens) | \(share) | \(seconds(row.ageP50Seconds)) | \(seconds(row.ageP90Seconds)) | \(seconds(row.ageP99Seconds)) | \(row.opensWithoutContent) | \(wakes.isEmpty ? "0" : wakes) | \(row.silentWakes) (\(row.silentWakesWithNewContent)) | \(terminations.isEmpty ? "0" : terminations) | \(row.relaunches) | \(megabytes) | \(tenths(row.transferP50Seconds)) / \(tenths(row.transferP90Seconds)) |"
            )
        }
        if rows.contains(where: { $0.activityViews > 0 || $0.activityUpdates > 0 }) {
            lines += [
                "",
                "| profile | Live Activities seen | fresh when seen | age p50 | p90 | p99 | showing nothing | updates applied |",
                "|---|---|---|---|---|---|---|---|",
            ]
            for row in rows {
                let share = row.activityFreshAtView.map { "\(Int(($0 * 100).rounded())) %" } ?? "–"
                lines.append(
                    "| \(row.profile) | \(row.activityViews) | \(share) | \(seconds(row.activityAgeP50Seconds)) | \(seconds(row.activityAgeP90Seconds)) | \(seconds(row.activityAgeP99Seconds)) | \(row.activityViewsWithoutContent) | \(row.activityUpdates) |"
                )
            }
        }
        if rows.contains(where: { !$0.surfaces.isEmpty }) {
            lines += [
                "", "| profile | widget or control | seen | fresh when seen | age p50 | reloads |",
                "|---|---|---|---|---|---|",
            ]
            for row in rows {
                for surface in WidgetKitSurface.allCases {
                    guard let figures = row.surfaces[surface.rawValue] else { continue }
                    let share = figures.freshAtView.map { "\(Int(($0 * 100).rounded())) %" } ?? "–"
                    lines.append(
                        "| \(row.profile) | \(surface.rawValue) | \(figures.views) | \(share) | \(seconds(figures.ageP50Seconds)) | \(figures.reloads) |"
                    )
                }
            }
        }
        return lines.joined(separator: "\n")
    }
}

extension Array where Element == Int64 {
    /// In ascending order: how many elements are at or before `value` (publish times: the number of the
    /// newest version published by then, 0 for none).
    public func countAtOrBefore(_ value: Int64) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if self[middle] <= value { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
