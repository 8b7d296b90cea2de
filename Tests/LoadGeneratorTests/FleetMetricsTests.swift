import DeviceRuntime
import Foundation
import PushModel
import Testing

@testable import LoadGenerator

/// Two apps, by slot.
private let a: AppSlot = 0
private let b: AppSlot = 1

@Suite struct FleetMetricsTests {
    /// The fleet's Prometheus text: counters move by what changed between scrapes; "all" is left to
    /// Prometheus.
    @Test func fleetMetricsCountWhatChanged() {
        var ledger = FreshnessLedger()
        ledger.record(.opened(app: a, contentVersion: 1), at: .init(milliseconds: 2000), profile: "news")
        ledger.record(.opened(app: b, contentVersion: nil), at: .init(milliseconds: 2000), profile: "chat")
        ledger.record(.terminated(app: a, cause: .watchdog), at: .init(milliseconds: 0), profile: "news")
        let metrics = FleetMetrics()
        let first = metrics.text(ledger.report(versions: [1: 1000], hours: 1, apps: ["news": 1, "chat": 1]))
        #expect(first.contains(#"pushgate_fleet_opens_total{profile="news"} 1"#))
        #expect(first.contains(#"pushgate_fleet_fresh_at_open_ratio{profile="news"} 1.0"#))
        #expect(first.contains(#"pushgate_fleet_terminations_total{profile="news",cause="watchdog"} 1"#))
        #expect(first.contains(#"pushgate_fleet_content_age_at_open_seconds{profile="news",quantile="0.5"} 1.0"#))
        #expect(!first.contains(#"profile="all""#))
        ledger.record(.opened(app: a, contentVersion: 1), at: .init(milliseconds: 3000), profile: "news")
        let second = metrics.text(ledger.report(versions: [1: 1000], hours: 1, apps: ["news": 1, "chat": 1]))
        #expect(second.contains(#"pushgate_fleet_opens_total{profile="news"} 2"#))
        #expect(second.contains("# HELP pushgate_fleet_opens_total"))
    }

    @Test func docsListEveryFleetMetric() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/metrics.md"), encoding: .utf8)
        for name in FleetMetrics.Name.allCases {
            #expect(doc.contains("| `\(name.rawValue)` |"), "docs/metrics.md does not list \(name.rawValue)")
        }
    }
}
