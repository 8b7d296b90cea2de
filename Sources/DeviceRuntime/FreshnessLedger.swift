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
        case .appState, .complete, .cancelTransfer, .moveToBackgroundSession, .conditions: break
        }
    }

    /// Every open counted once, against `versions` (number → publish time, ms).
    public func report(versions: [Int: Int64], hours: Double, apps: Int) -> FreshnessReport {
        let published = versions.sorted { $0.key < $1.key }
        var byProfile: [String: [Open]] = [:]
        for open in opens { byProfile[open.profile, default: []].append(open) }
        var rows = byProfile.keys.sorted().map { name in
            row(name, byProfile[name]!, published, counts[name] ?? [:], hours: hours, apps: apps)
        }
        if byProfile.count > 1 {
            var total: [String: Int] = [:]
            for table in counts.values { for (key, value) in table { total[key, default: 0] += value } }
            rows.append(row("all", opens, published, total, hours: hours, apps: apps))
        }
        return FreshnessReport(rows: rows)
    }

    private func row(
        _ name: String, _ opens: [Open], _ published: [(key: Int, value: Int64)], _ counts: [String: Int],
        hours: Double, apps: Int
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
        func percentile(_ p: Double) -> Double? {
            guard !ages.isEmpty else { return nil }
            return Double(ages[min(ages.count - 1, Int(Double(ages.count) * p))]) / 1000
        }
        let perAppHour = hours > 0 && apps > 0 ? 1 / (hours * Double(apps)) : 0
        let silent = counts["wake.silent_push", default: 0]
        return FreshnessReport.Row(
            profile: name, opens: opens.count, freshAtOpen: opens.isEmpty ? nil : Double(fresh) / Double(opens.count),
            ageP50Seconds: percentile(0.5), ageP90Seconds: percentile(0.9), ageP99Seconds: percentile(0.99),
            opensWithoutContent: withoutContent,
            wakesPerAppHour: counts.filter { $0.key.hasPrefix("wake.") }.mapValues { Double($0) * perAppHour },
            terminations: counts.filter { $0.key.hasPrefix("terminated.") }.reduce(into: [:]) {
                $0[String($1.key.dropFirst("terminated.".count))] = $1.value
            },
            relaunches: counts["relaunched", default: 0], wakesRefused: counts["wake_refused", default: 0],
            silentWakes: silent, silentWakesWithNewContent: counts["content.silent_push", default: 0],
            backgroundTransfers: counts["transfer.background", default: 0],
            foregroundTransfers: counts["transfer.foreground", default: 0])
    }
}

/// The freshness table: per profile (and all), every open counted once.
public struct FreshnessReport: Sendable, Equatable, Encodable {
    public struct Row: Sendable, Equatable, Encodable {
        public var profile: String
        public var opens: Int
        /// Share of opens at which the app held the newest published version.
        public var freshAtOpen: Double?
        /// Age of the content held at open (now − its publish time), in seconds.
        public var ageP50Seconds: Double?
        public var ageP90Seconds: Double?
        public var ageP99Seconds: Double?
        /// Opens at which the app held no content at all (though some was published).
        public var opensWithoutContent: Int
        public var wakesPerAppHour: [String: Double]
        public var terminations: [String: Int]
        public var relaunches: Int
        public var wakesRefused: Int
        public var silentWakes: Int
        /// Silent wakes whose download brought a new version (the rest were wasted wakes).
        public var silentWakesWithNewContent: Int
        public var backgroundTransfers: Int
        public var foregroundTransfers: Int
    }

    public var rows: [Row]

    /// The table for a terminal.
    public var text: String {
        func seconds(_ value: Double?) -> String { value.map { String(Int($0.rounded())) + " s" } ?? "–" }
        var lines = [
            "| profile | opens | fresh at open | age p50 | p90 | p99 | no content | silent wakes (new content) | terminations | relaunches |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for row in rows {
            let share = row.freshAtOpen.map { "\(Int(($0 * 100).rounded())) %" } ?? "–"
            let terminations = row.terminations.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
                .joined(separator: ", ")
            lines.append(
                "| \(row.profile) | \(row.opens) | \(share) | \(seconds(row.ageP50Seconds)) | \(seconds(row.ageP90Seconds)) | \(seconds(row.ageP99Seconds)) | \(row.opensWithoutContent) | \(row.silentWakes) (\(row.silentWakesWithNewContent)) | \(terminations.isEmpty ? "0" : terminations) | \(row.relaunches) |"
            )
        }
        return lines.joined(separator: "\n")
    }
}
