import PushModel

/// What a fleet's simulated iPhones did, and the headline figure: how fresh the content was when users
/// opened their apps. Fed every runtime action with its time and the device's profile name; the report
/// is made against the content server's publish times.
public struct FreshnessLedger: Sendable {
    struct Open: Sendable {
        var at: Int64
        var held: Int?
        var profile: String
    }

    private var opens: [Open] = []
    /// Counts by profile: wakes by kind, terminations by cause, and the rest.
    private var counts: [String: [String: Int]] = [:]
    /// Ended transfers by profile.
    private var transfers: [String: Transfers] = [:]

    struct Transfers: Sendable {
        var foregroundBytes: Int64 = 0
        var backgroundBytes: Int64 = 0
        var failed = 0
        var milliseconds: [Int64] = []

        mutating func add(_ other: Transfers) {
            foregroundBytes += other.foregroundBytes
            backgroundBytes += other.backgroundBytes
            failed += other.failed
            milliseconds += other.milliseconds
        }
    }

    public init() {}

    public mutating func record(_ action: RuntimeAction, at now: UnixTime, profile: String) {
        func count(_ key: String) { counts[profile, default: [:]][key, default: 0] += 1 }
        switch action {
        case .opened(_, let version): opens.append(Open(at: now.milliseconds, held: version, profile: profile))
        case .woken(_, let kind): count("wake." + kind.name)
        case .terminated(_, let cause): count("terminated." + cause.rawValue)
        case .relaunched: count("relaunched")
        case .wakeRefused: count("wake_refused")
        case .contentUpdated(_, _, let by): count("content." + (by?.name ?? "foreground"))
        case .startTransfer(let request):
            if case .background = request.session { count("transfer.background") } else { count("transfer.foreground") }
        case .appState, .complete, .cancelTransfer, .pauseTransfer, .resumeTransfer, .moveToBackgroundSession,
            .conditions:
            break
        }
    }

    /// A transfer that ended: its bytes, how long it took, whether it brought what it went for.
    public mutating func recordTransfer(
        background: Bool, bytes: Int64, milliseconds: Int64, succeeded: Bool, profile: String
    ) {
        var entry = transfers[profile, default: Transfers()]
        if background { entry.backgroundBytes += bytes } else { entry.foregroundBytes += bytes }
        if !succeeded { entry.failed += 1 }
        entry.milliseconds.append(milliseconds)
        transfers[profile] = entry
    }

    /// Opens recorded so far (every one is in exactly one profile's row).
    public var openCount: Int { opens.count }

    /// Every open counted once, against `versions` (number → publish time, ms).
    /// `apps`: app installs per profile (devices × apps), for wakes per app-hour.
    public func report(versions: [Int: Int64], hours: Double, apps: [String: Int]) -> FreshnessReport {
        let published = versions.sorted { $0.key < $1.key }
        var byProfile: [String: [Open]] = [:]
        for open in opens { byProfile[open.profile, default: []].append(open) }
        let names = Set(byProfile.keys).union(counts.keys).union(transfers.keys).sorted()
        var rows = names.map { name in
            row(
                name, byProfile[name] ?? [], published, counts[name] ?? [:], transfers[name] ?? Transfers(),
                hours: hours, apps: apps[name] ?? 1)
        }
        if names.count > 1 {
            var total: [String: Int] = [:]
            for table in counts.values { for (key, value) in table { total[key, default: 0] += value } }
            var moved = Transfers()
            for entry in transfers.values { moved.add(entry) }
            rows.append(
                row("all", opens, published, total, moved, hours: hours, apps: apps.values.reduce(0, +)))
        }
        return FreshnessReport(rows: rows)
    }

    private func row(
        _ name: String, _ opens: [Open], _ published: [(key: Int, value: Int64)], _ counts: [String: Int],
        _ moved: Transfers, hours: Double, apps: Int
    ) -> FreshnessReport.Row {
        var ages: [Int64] = []
        var fresh = 0
        var withoutContent = 0
        for open in opens {
            // The newest version published by then; nothing published: fresh by definition.
            guard let newest = published.last(where: { $0.value <= open.at }) else {
                fresh += 1
                continue
            }
            if let held = open.held, held >= newest.key { fresh += 1 }
            if let held = open.held, let at = published.first(where: { $0.key == held })?.value {
                ages.append(open.at - at)
            } else {
                withoutContent += 1
            }
        }
        ages.sort()
        let durations = moved.milliseconds.sorted()
        func percentile(_ values: [Int64], _ p: Double) -> Double? {
            guard !values.isEmpty else { return nil }
            return Double(values[min(values.count - 1, Int(Double(values.count) * p))]) / 1000
        }
        let perAppHour = hours > 0 && apps > 0 ? 1 / (hours * Double(apps)) : 0
        let silent = counts["wake.silent_push", default: 0]
        return FreshnessReport.Row(
            profile: name, opens: opens.count, freshOpens: fresh,
            freshAtOpen: opens.isEmpty ? nil : Double(fresh) / Double(opens.count),
            ageP50Seconds: percentile(ages, 0.5), ageP90Seconds: percentile(ages, 0.9),
            ageP99Seconds: percentile(ages, 0.99),
            opensWithoutContent: withoutContent,
            wakes: counts.filter { $0.key.hasPrefix("wake.") }.reduce(into: [:]) {
                $0[String($1.key.dropFirst("wake.".count))] = $1.value
            },
            wakesPerAppHour: counts.filter { $0.key.hasPrefix("wake.") }.reduce(into: [:]) {
                $0[String($1.key.dropFirst("wake.".count))] = Double($1.value) * perAppHour
            },
            terminations: counts.filter { $0.key.hasPrefix("terminated.") }.reduce(into: [:]) {
                $0[String($1.key.dropFirst("terminated.".count))] = $1.value
            },
            relaunches: counts["relaunched", default: 0], wakesRefused: counts["wake_refused", default: 0],
            silentWakes: silent, silentWakesWithNewContent: counts["content.silent_push", default: 0],
            backgroundTransfers: counts["transfer.background", default: 0],
            foregroundTransfers: counts["transfer.foreground", default: 0],
            foregroundBytes: moved.foregroundBytes, backgroundBytes: moved.backgroundBytes,
            failedTransfers: moved.failed, transferP50Seconds: percentile(durations, 0.5),
            transferP90Seconds: percentile(durations, 0.9))
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
        return lines.joined(separator: "\n")
    }
}
