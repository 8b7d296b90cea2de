import DeviceRuntime
import PushModel

/// The variants of a comparison or a search side by side, and the sentence that says how one beats what
/// runs today — worded by the figures as printed (`pushgate forecast --compare`, `--search`).
public enum ForecastComparison {
    /// The freshness a search weighs: the share of the fleet's opens that found the content fresh.
    public static func fresh(_ result: ForecastResult) -> Double { result.report.rows.last?.freshAtOpen ?? 0 }
    /// The cost a search weighs freshness against: seconds apps ran in the background per device-day.
    public static func cost(_ result: ForecastResult) -> Double { result.costs.last?.awakeSecondsPerDeviceDay ?? 0 }

    public static func percent(_ share: Double) -> String { "\(Int((share * 100).rounded())) %" }

    /// The variants side by side: freshness next to what it cost. With an objective other than the fleet, its freshness and awake time come
    /// first (they rank the variants and draw the front), the fleet's beside them.
    public static func table(
        _ names: [String], _ results: [ForecastResult], front: [Int]?, objective: ForecastObjective = .fleet
    ) -> String {
        // With Live Activities: how fresh they were when seen, and the updates the budget cost them.
        let live = results.contains { ($0.report.rows.last?.activityViews ?? 0) > 0 }
        // With widgets or controls: how fresh each was when seen, and its reloads.
        let surfaces = WidgetKitSurface.allCases.filter { surface in
            results.contains { $0.report.rows.last?.surfaces[surface.rawValue] != nil }
        }
        let ranked = objective.kinds != nil
        let head = ranked ? " fresh at open (\(objective.name)) | awake s (\(objective.name)) |" : ""
        let surfaceHead = surfaces.map { " \($0.rawValue)s fresh when seen | \($0.rawValue) reloads |" }.joined()
        var lines = [
            "| variant |\(head) fresh at open | age p50 | no content | pushes / device-day | wakes / device-day | awake s / device-day | MB / device-day | terminations |\(live ? " Live Activities fresh when seen | their age p50 | updates dropped |" : "")\(surfaceHead)\(front == nil ? "" : " Pareto front |")",
            "|---|\(ranked ? "---|---|" : "")---|---|---|---|---|---|---|---|\(live ? "---|---|---|" : "")\(String(repeating: "---|---|", count: surfaces.count))\(front == nil ? "" : "---|")",
        ]
        func fresh(_ result: ForecastResult) -> Double { objective.freshness(result) }
        func cost(_ result: ForecastResult) -> Double { objective.cost(result) }
        for (index, result) in results.enumerated() {
            let all = result.report.rows.last
            let cost = result.costs.last
            let age = all?.ageP50Seconds.map { "\(Int($0.rounded())) s" } ?? "–"
            let first =
                ranked
                ? " \(percent(objective.freshness(result))) | \(ForecastResult.decimal(objective.cost(result))) |" : ""
            var line =
                "| \(names[index])\(index == 0 ? " (today)" : "") |\(first) \(percent(Self.fresh(result))) | \(age) | \(all?.opensWithoutContent ?? 0) | \(ForecastResult.decimal(cost?.pushesPerDeviceDay ?? 0)) | \(ForecastResult.decimal(cost?.wakesPerDeviceDay ?? 0)) | \(ForecastResult.decimal(cost?.awakeSecondsPerDeviceDay ?? 0)) | \(ForecastResult.decimal(cost?.megabytesPerDeviceDay ?? 0)) | \(cost?.terminations ?? 0) |"
            if live {
                let seen = all?.activityFreshAtView.map(percent) ?? "–"
                let age = all?.activityAgeP50Seconds.map { "\(Int($0.rounded())) s" } ?? "–"
                line += " \(seen) | \(age) | \(cost?.liveActivityUpdatesDropped ?? 0) |"
            }
            for surface in surfaces {
                let figures = all?.figures(surface)
                line += " \(figures?.freshAtView.map(percent) ?? "–") | \(figures?.reloads ?? 0) |"
            }
            if let front { line += front.contains(index) ? " ★ |" : " |" }
            lines.append(line)
        }
        var text = lines.joined(separator: "\n")
        if let front {
            text +=
                "\n\nPareto front (no other variant is as fresh for less awake time): "
                + front.map {
                    names[$0]
                        + (results[$0].report.rows.last == nil
                            ? "" : " (\(percent(fresh(results[$0]))), \(ForecastResult.decimal(cost(results[$0]))) s)")
                }
                .joined(separator: "; ")
            if ranked { text += " — ranked by \(objective.name)'s freshness and awake time" }
            if front.contains(0) {
                text += "\nWhat runs today is on the front."
            } else if let better = front.filter({ dominates(results[$0], results[0], objective) })
                .max(by: { fresh(results[$0]) < fresh(results[$1]) })
            {
                text +=
                    "\nWhat runs today is not on the front: "
                    + whyBetter(
                        names[better], fresh: (fresh(results[better]), fresh(results[0])),
                        cost: (cost(results[better]), cost(results[0])))
            }
        }
        return text
    }

    /// `a` is at least as fresh as `b` for no more awake time, and better on one (for `objective`).
    public static func dominates(_ a: ForecastResult, _ b: ForecastResult, _ objective: ForecastObjective) -> Bool {
        let (fa, fb, ca, cb) = (objective.freshness(a), objective.freshness(b), objective.cost(a), objective.cost(b))
        return fa >= fb && ca <= cb && (fa > fb || ca < cb)
    }

    /// How `name` beats today, in the figures as printed: a variant is called fresher only when its
    /// printed share is higher, cheaper only when its printed awake time is lower.
    public static func whyBetter(
        _ name: String, fresh: (better: Double, today: Double), cost: (better: Double, today: Double)
    ) -> String {
        let (freshBetter, freshToday) = (percent(fresh.better), percent(fresh.today))
        let (costBetter, costToday) = (ForecastResult.decimal(cost.better), ForecastResult.decimal(cost.today))
        let fresher = freshBetter != freshToday && fresh.better > fresh.today
        let cheaper = costBetter != costToday && cost.better < cost.today
        let freshness = fresher ? "fresher (\(freshBetter) against \(freshToday))" : "as fresh (\(freshBetter))"
        let awake =
            cheaper
            ? "for less awake time (\(costBetter) s per device-day against \(costToday))"
            : "for the same awake time (\(costBetter) s per device-day)"
        if !fresher, !cheaper {
            return
                "\(name) is as fresh (\(freshBetter)) for as much awake time (\(costBetter) s per device-day) as far as the"
                + " figures show; it is ahead only in digits not printed."
        }
        return "\(name) is \(freshness) \(awake)."
    }
}
