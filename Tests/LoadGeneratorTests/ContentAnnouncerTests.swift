import DeviceRuntime
import Foundation
import LoadGenerator
import Testing

@Suite struct ContentAnnouncerTests {
    /// Each app's backend sends what its strategy says, to each of its tokens; apps without one get nothing.
    @Test func theAnnouncementFollowsEachAppsStrategy() {
        let targets = [
            PushTarget(token: "aa", topic: "news"), PushTarget(token: "bb", topic: "chat"),
            PushTarget(token: "cc", topic: "both"), PushTarget(token: "dd", topic: "quiet"),
            PushTarget(token: "ee", topic: "unknown"),
        ]
        let pushes = ContentAnnouncer.pushes(
            version: 7, targets: targets,
            strategies: [
                "news": .init(silent: true, alert: false), "chat": .init(silent: false, alert: true),
                "both": .init(silent: true, alert: true), "quiet": .init(silent: false, alert: false),
            ])
        #expect(pushes.map(\.target.token) == ["aa", "bb", "cc", "cc"])
        #expect(pushes.map(\.silent) == [true, false, true, false])
        let silent = pushes[0]
        #expect(silent.headers.contains { $0 == ("apns-push-type", "background") })
        #expect(silent.headers.contains { $0 == ("apns-priority", "5") })
        #expect(String(decoding: silent.body, as: UTF8.self) == #"{"aps":{"content-available":1},"version":7}"#)
        #expect(pushes[1].headers.contains { $0 == ("apns-push-type", "alert") })
        #expect(String(decoding: pushes[1].body, as: UTF8.self).contains(#""alert":{"#))
    }

    /// The fleet's Prometheus text: counters move by what changed between scrapes; "all" is left to
    /// Prometheus.
    @Test func fleetMetricsCountWhatChanged() {
        var ledger = FreshnessLedger()
        ledger.record(.opened(bundleID: "a", contentVersion: 1), at: .init(milliseconds: 2000), profile: "news")
        ledger.record(.opened(bundleID: "b", contentVersion: nil), at: .init(milliseconds: 2000), profile: "chat")
        ledger.record(.terminated(bundleID: "a", cause: .watchdog), at: .init(milliseconds: 0), profile: "news")
        let metrics = FleetMetrics()
        let first = metrics.text(ledger.report(versions: [1: 1000], hours: 1, apps: ["news": 1, "chat": 1]))
        #expect(first.contains(#"pushgate_fleet_opens_total{profile="news"} 1"#))
        #expect(first.contains(#"pushgate_fleet_fresh_at_open_ratio{profile="news"} 1.0"#))
        #expect(first.contains(#"pushgate_fleet_terminations_total{profile="news",cause="watchdog"} 1"#))
        #expect(first.contains(#"pushgate_fleet_content_age_at_open_seconds{profile="news",quantile="0.5"} 1.0"#))
        #expect(!first.contains(#"profile="all""#))
        ledger.record(.opened(bundleID: "a", contentVersion: 1), at: .init(milliseconds: 3000), profile: "news")
        let second = metrics.text(ledger.report(versions: [1: 1000], hours: 1, apps: ["news": 1, "chat": 1]))
        #expect(second.contains(#"pushgate_fleet_opens_total{profile="news"} 2"#))
        #expect(second.contains("# HELP pushgate_fleet_opens_total"))
    }
}
