import DeviceRuntime
import Foundation

/// What a fleet of simulated iPhones showed over a run: the freshness report at the end, the freshness
/// figures sampled over time (per kind of iPhone), the versions published, and what each publication's
/// announcement sent. `pushgate simulate` and `demo` write it in `--json` and draw it in `--html`.
public struct FleetFigures: Codable, Sendable, Equatable {
    /// One sample of one kind's figures (or "all"), at `second` of the run.
    public struct Sample: Codable, Sendable, Equatable {
        public var second: Double
        public var profile: String
        public var opens: Int
        public var freshAtOpen: Double?
        public var ageP50Seconds: Double?
        public var ageP90Seconds: Double?

        public init(second: Double, row: FreshnessReport.Row) {
            self.second = second
            profile = row.profile
            opens = row.opens
            freshAtOpen = row.freshAtOpen
            ageP50Seconds = row.ageP50Seconds
            ageP90Seconds = row.ageP90Seconds
        }
    }

    public struct Published: Codable, Sendable, Equatable {
        public var version: Int
        /// Milliseconds since 1970.
        public var publishedAt: Int64
        public init(version: Int, publishedAt: Int64) {
            self.version = version
            self.publishedAt = publishedAt
        }
    }

    public var devices: Int
    public var seconds: Double
    public var report: FreshnessReport
    public var timeline: [Sample]
    public var published: [Published]
    public var announcements: [ContentAnnouncer.Outcome]

    public init(
        devices: Int, seconds: Double, report: FreshnessReport, timeline: [Sample], published: [Published],
        announcements: [ContentAnnouncer.Outcome]
    ) {
        self.devices = devices
        self.seconds = seconds
        self.report = report
        self.timeline = timeline
        self.published = published
        self.announcements = announcements
    }

    /// The summary for a terminal: the table, then the publications and their announcements.
    public var summary: String {
        var lines = ["freshness at open (\(devices) iPhones, \(Int(seconds.rounded())) s):", report.text]
        let silent = announcements.map(\.silent).reduce(0, +)
        let alerts = announcements.map(\.alerts).reduce(0, +)
        let accepted = announcements.map(\.accepted).reduce(0, +)
        var refused: [String: Int] = [:]
        for outcome in announcements { refused.merge(outcome.refused, uniquingKeysWith: +) }
        let updates = announcements.map(\.liveActivityUpdates).reduce(0, +)
        let broadcasts = announcements.map(\.broadcasts).reduce(0, +)
        let widgets = announcements.map(\.widgets).reduce(0, +)
        let controls = announcements.map(\.controls).reduce(0, +)
        let live =
            (updates + broadcasts > 0 ? ", \(updates) Live Activity updates, \(broadcasts) broadcasts" : "")
            + (widgets > 0 ? ", \(widgets) widget pushes" : "") + (controls > 0 ? ", \(controls) control pushes" : "")
        var line =
            "\(published.count) versions published; announcements: \(silent) silent, \(alerts) alerts\(live), \(accepted) accepted"
        if !refused.isEmpty {
            line +=
                ", refused: "
                + refused.sorted { $0.key < $1.key }.map { "\($0.key) ×\($0.value)" }.joined(separator: ", ")
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        return try encoder.encode(self)
    }

    /// The HTML section: the table and the fresh-at-open share over time per kind.
    public var htmlSection: String {
        let colours = ["#27a", "#2a7", "#d62", "#a27", "#aa2", "#2aa", "#72a", "#888"]
        let kinds = Array(Set(timeline.map(\.profile))).sorted { ($0 == "all" ? "~" : $0) < ($1 == "all" ? "~" : $1) }
        let series = kinds.enumerated().map { index, kind in
            (
                kind, colours[index % colours.count],
                timeline.filter { $0.profile == kind }.compactMap { sample in
                    sample.freshAtOpen.map { (sample.second, $0 * 100) }
                }
            )
        }
        let ages = kinds.enumerated().map { index, kind in
            (
                kind, colours[index % colours.count],
                timeline.filter { $0.profile == kind }.compactMap { sample in
                    sample.ageP50Seconds.map { (sample.second, $0) }
                }
            )
        }
        return """
            <h2>Freshness at open</h2>
            \(HTMLTable.fromMarkdown(summary))
            \(BenchReport.chart(title: "Fresh at open (share of opens so far), per kind of iPhone", unit: " %", series: series, xLabel: "second of the run"))
            \(BenchReport.chart(title: "Content age at open, p50 so far", unit: " s", series: ages, xLabel: "second of the run"))
            """
    }

    /// A page of its own (`pushgate simulate --html`).
    public var html: String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><title>Pushgate simulate — freshness</title>
        <style>\(HTMLTable.style)</style></head><body>
        <h1>Pushgate simulate — \(devices) iPhones</h1>
        \(htmlSection)
        </body></html>
        """
    }
}
