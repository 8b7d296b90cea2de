import DeviceRuntime
import Prometheus
import Synchronization

/// A simulated fleet's freshness figures in Prometheus's text format, per kind of iPhone (`profile`
/// label): what `/metrics` shows beside the gateway's own in `pushgate demo`, and on `pushgate simulate
/// --metrics-port`. Totals are counters (moved by what changed since the last scrape); the share fresh
/// at open and the content age percentiles are gauges.
public final class FleetMetrics: Sendable {
    /// Every metric the fleet exposes, with its help text.
    enum Name: String, CaseIterable {
        case opens = "pushgate_fleet_opens_total"
        case freshOpens = "pushgate_fleet_fresh_opens_total"
        case opensWithoutContent = "pushgate_fleet_opens_without_content_total"
        case freshAtOpen = "pushgate_fleet_fresh_at_open_ratio"
        case contentAge = "pushgate_fleet_content_age_at_open_seconds"
        case wakes = "pushgate_fleet_wakes_total"
        case silentWakesWithNewContent = "pushgate_fleet_silent_wakes_with_new_content_total"
        case terminations = "pushgate_fleet_terminations_total"
        case relaunches = "pushgate_fleet_relaunches_total"
        case transferBytes = "pushgate_fleet_transfer_bytes_total"
        case failedTransfers = "pushgate_fleet_failed_transfers_total"

        /// The whole name as one component (the table above is the one place it is spelled).
        var descriptor: MetricNameDescriptor {
            MetricNameDescriptor(metricName: rawValue, unitName: "", helpText: help)
        }

        var help: String {
            switch self {
            case .opens: "App opens by the simulated users"
            case .freshOpens: "Opens at which the app held the newest published version"
            case .opensWithoutContent: "Opens at which the app held no content though some was published"
            case .freshAtOpen: "Share of opens so far at which the app held the newest version"
            case .contentAge: "Age of the content held at open (now minus its publish time), by quantile, so far"
            case .wakes: "Background wakes by kind (silent_push, fetch, location, session_events)"
            case .silentWakesWithNewContent: "Silent-push wakes that brought a new version (the rest were wasted)"
            case .terminations: "Apps terminated by the simulated iOS, by cause"
            case .relaunches: "Apps relaunched in the background for their background session's events"
            case .transferBytes: "Bytes moved by transfers that ended, by session (foreground, background)"
            case .failedTransfers: "Transfers that failed"
            }
        }
    }

    private let registry = PrometheusCollectorRegistry()
    private let seen = Mutex<[String: Int64]>([:])

    public init() {}

    /// The exposition text for `report` (every row but "all": Prometheus sums labels itself).
    public func text(_ report: FreshnessReport) -> String {
        seen.withLock { seen in
            for row in report.rows where row.profile != "all" {
                let profile = ("profile", row.profile)
                func count(_ name: Name, _ total: Int64, _ labels: [(String, String)] = []) {
                    let labels = [profile] + labels
                    let key = name.rawValue + labels.map { "\($0.0)=\($0.1)" }.joined(separator: ",")
                    let counter = registry.makeCounter(descriptor: name.descriptor, labels: labels)
                    let before = seen[key] ?? 0
                    if total > before { counter.increment(by: total - before) }
                    seen[key] = max(before, total)
                }
                func gauge(_ name: Name, _ value: Double?, _ labels: [(String, String)] = []) {
                    guard let value else { return }
                    registry.makeGauge(descriptor: name.descriptor, labels: [profile] + labels).set(value)
                }
                count(.opens, Int64(row.opens))
                count(.freshOpens, Int64(row.freshOpens))
                count(.opensWithoutContent, Int64(row.opensWithoutContent))
                gauge(.freshAtOpen, row.freshAtOpen)
                gauge(.contentAge, row.ageP50Seconds, [("quantile", "0.5")])
                gauge(.contentAge, row.ageP90Seconds, [("quantile", "0.9")])
                gauge(.contentAge, row.ageP99Seconds, [("quantile", "0.99")])
                for (kind, total) in row.wakes { count(.wakes, Int64(total), [("kind", kind)]) }
                count(.silentWakesWithNewContent, Int64(row.silentWakesWithNewContent))
                for (cause, total) in row.terminations { count(.terminations, Int64(total), [("cause", cause)]) }
                count(.relaunches, Int64(row.relaunches))
                count(.transferBytes, row.foregroundBytes, [("session", "foreground")])
                count(.transferBytes, row.backgroundBytes, [("session", "background")])
                count(.failedTransfers, Int64(row.failedTransfers))
            }
        }
        return registry.emitToString()
    }
}
