import Foundation
import PushModel

/// The run's figures as text for a terminal, and as a self-contained HTML page (inline SVG charts,
/// no scripts or fonts fetched: it opens offline).
public enum BenchReport {
    public static func summary(_ result: BenchResult) -> String {
        let (title, rows) = summaryRows(result)
        return
            ([title]
            + rows.map { row in
                row.value.map { row.name.padding(toLength: 34, withPad: " ", startingAt: 0) + $0 } ?? row.name
            }).joined(separator: "\n")
    }

    /// The summary's title and its rows (name, value; a row without a value heads a section, a name
    /// indented with spaces details the row above), for the terminal and for the page's table.
    static func summaryRows(_ result: BenchResult) -> (title: String, rows: [(name: String, value: String?)]) {
        var rows: [(name: String, value: String?)] = []
        func row(_ name: String, _ value: String) { rows.append((name, value)) }
        let scenario = result.scenario
        let shape =
            scenario.isOpenLoop
            ? "open loop, \(format(scenario.rate ?? 0))/s"
                + (scenario.ramp_to.map { " ramping to \(format($0))/s" } ?? "")
            : "closed loop"
        let title =
            "Pushgate bench — \(result.target), \(shape), \(scenario.effectiveConnections) connections × \(scenario.effectiveStreams) streams"
        row("duration", String(format: "%.1f s", result.seconds))
        row("sent", "\(result.sent)")
        row("accepted (200)", "\(result.accepted)  (\(format(result.acceptedPerSecond))/s)")
        row("rejected", "\(result.rejectedCount)")
        for (reason, count) in result.rejected.sorted(by: { $0.value > $1.value }) { row("  \(reason)", "\(count)") }
        row("no answer", "\(result.failedCount)")
        for (cause, count) in result.failed.sorted(by: { $0.value > $1.value }) { row("  \(cause)", "\(count)") }
        let l = result.latency
        row(
            "POST latency ms",
            String(format: "p50 %.2f  p90 %.2f  p99 %.2f  p99.9 %.2f  max %.2f", l.p50, l.p90, l.p99, l.p999, l.max))
        for kind in result.kinds { row("  \(kind.name)", "sent \(kind.sent), accepted \(kind.accepted)") }
        if let g = result.gateway {
            rows.append(("Gateway (difference of its counters over the run)", nil))
            row("silent accepted", "\(g.silentAccepted)")
            row("  woken on budget", "\(g.wokenOnBudget)")
            row("  held, released with an alert", "\(g.releasedOnAlert)")
            row("  held, released on keep-alive", "\(g.releasedOnKeepAlive)")
            row("  held, released otherwise", "\(g.releasedOtherwise)")
            row("  coalesced", "\(g.coalesced)")
            row("  expired / not stored", "\(g.expired) / \(g.notStored)")
            row("  still held", "\(g.stillHeld)")
            row(
                "completions",
                "newData \(g.completedNewData), noData \(g.completedNoData), failed \(g.completedFailed), late \(g.completedLate)"
            )
            row("deadline misses", "\(g.deadlineMisses)")
            row("connected devices", "\(g.connectedDevices)")
            if let e = g.acceptToDeviceAck {
                row(
                    "accept → device ack ms",
                    String(
                        format: "p50 %.2f  p90 %.2f  p99 %.2f  max %.2f  (%d immediate deliveries)", e.p50, e.p90,
                        e.p99, e.max,
                        e.count))
            }
        }
        if let b = result.broadcasts { broadcastRows(b, into: &rows) }
        return (title, rows)
    }

    /// The fan-outs: how many subscribers each broadcast reached, and its times from the 200 to the
    /// acknowledgements.
    static func broadcastRows(_ b: BroadcastFanouts, into rows: inout [(name: String, value: String?)]) {
        rows.append(("Broadcasts (the gateway's fan-outs, from each 200)", nil))
        func ms(_ value: Double?) -> String { value.map { String(format: "%.1f", $0) } ?? "-" }
        rows.append(("broadcasts measured", "\(b.fanouts.count) (the gateway keeps the last 32)"))
        rows.append(("subscribers reached", "\(b.acknowledged) acknowledged of \(b.written) written"))
        rows.append(
            (
                "200 → device ack ms",
                "first \(ms(b.first))  median \(ms(b.median))  p99 \(ms(b.worstP99))  last \(ms(b.worstLast))  (worst of each)"
            ))
        // The last eight, each by its apns-id's end: reached / written: first / median / p99 / last.
        for fanout in b.fanouts.suffix(8) {
            rows.append(
                (
                    "  …\(fanout.apnsID.suffix(12))",
                    "\(fanout.acknowledged)/\(fanout.written): \(ms(fanout.firstMilliseconds)) / \(ms(fanout.medianMilliseconds)) / \(ms(fanout.p99Milliseconds)) / \(ms(fanout.lastMilliseconds))"
                ))
        }
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
    }

    public static func html(_ result: BenchResult) -> String {
        let (title, rows) = summaryRows(result)
        let throughput = chart(
            title: "Answers per second", unit: "/s",
            series: [
                ("accepted", "#2a7", result.timeline.map { (Double($0.second), Double($0.accepted)) }),
                ("rejected", "#d62", result.timeline.map { (Double($0.second), Double($0.rejected)) }),
                ("no answer", "#888", result.timeline.map { (Double($0.second), Double($0.failed)) }),
            ], xLabel: "second of the run")
        let latency = chart(
            title: "POST latency per second", unit: " ms",
            series: [
                ("p50", "#27a", result.timeline.map { (Double($0.second), $0.p50Milliseconds) }),
                ("p99", "#a27", result.timeline.map { (Double($0.second), $0.p99Milliseconds) }),
                ("max", "#bbb", result.timeline.map { (Double($0.second), $0.maxMilliseconds) }),
            ], xLabel: "second of the run")
        // The percentile curve on HdrHistogram's axis: 1 / (1 - percentile), logarithmic.
        let curve = chart(
            title: "POST latency by percentile", unit: " ms",
            series: [
                (
                    "latency", "#27a",
                    result.percentileCurve.filter { $0.percentile < 100 }.map {
                        (log10(1 / (1 - $0.percentile / 100)), $0.milliseconds)
                    }
                )
            ], xLabel: "percentile (0, 90, 99, 99.9, … on a log scale)",
            xTicks: [(0, "0"), (1, "90"), (2, "99"), (3, "99.9"), (4, "99.99"), (5, "99.999")])
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Pushgate bench — \(result.target)</title>
            <style>\(HTMLTable.style)</style></head><body>
            <h1>Pushgate bench — \(HTMLTable.escape(result.target))</h1>
            <p>Started \(ISO8601DateFormatter().string(from: result.startedAt)), \(String(format: "%.1f", result.seconds)) s.</p>
            <h2>Summary</h2>
            <p>\(HTMLTable.escape(title))</p>
            \(HTMLTable.rows(rows))
            \(throughput)
            \(latency)
            \(curve)
            \(result.fleet?.htmlSection ?? "")
            </body></html>
            """
    }

    /// A line chart as inline SVG.
    public static func chart(
        title: String, unit: String, series: [(String, String, [(Double, Double)])], xLabel: String,
        xTicks: [(Double, String)]? = nil
    ) -> String {
        let width = 760.0
        let height = 260.0
        let left = 60.0
        let bottom = 40.0
        let top = 30.0
        let right = 20.0
        let points = series.flatMap(\.2)
        let maxX = max(points.map(\.0).max() ?? 1, xTicks?.last?.0 ?? 1, 1)
        let maxY = max(points.map(\.1).max() ?? 1, 1e-9) * 1.1
        func x(_ value: Double) -> Double { left + value / maxX * (width - left - right) }
        func y(_ value: Double) -> Double { height - bottom - value / maxY * (height - bottom - top) }
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" role=\"img\">"
        svg += "<text x=\"\(left)\" y=\"18\" font-weight=\"bold\">\(title)</text>"
        svg += "<line x1=\"\(left)\" y1=\"\(y(0))\" x2=\"\(width - right)\" y2=\"\(y(0))\" stroke=\"#999\"/>"
        svg += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(y(0))\" stroke=\"#999\"/>"
        for step in 0...4 {
            let value = maxY / 1.1 * Double(step) / 4
            svg +=
                "<text x=\"\(left - 6)\" y=\"\(y(value) + 4)\" text-anchor=\"end\" font-size=\"11\">\(String(format: value < 10 ? "%.2f" : "%.0f", value))\(unit)</text>"
            svg +=
                "<line x1=\"\(left)\" y1=\"\(y(value))\" x2=\"\(width - right)\" y2=\"\(y(value))\" stroke=\"#eee\"/>"
        }
        let ticks = xTicks ?? (0...5).map { (maxX * Double($0) / 5, String(format: "%.0f", maxX * Double($0) / 5)) }
        for (value, label) in ticks {
            svg +=
                "<text x=\"\(x(value))\" y=\"\(height - bottom + 16)\" text-anchor=\"middle\" font-size=\"11\">\(label)</text>"
        }
        svg +=
            "<text x=\"\(left + (width - left - right) / 2)\" y=\"\(height - 6)\" text-anchor=\"middle\" font-size=\"11\">\(xLabel)</text>"
        for (index, (name, color, values)) in series.enumerated() where !values.isEmpty {
            let path = values.map { String(format: "%.1f,%.1f", x($0.0), y($0.1)) }.joined(separator: " ")
            svg += "<polyline fill=\"none\" stroke=\"\(color)\" stroke-width=\"2\" points=\"\(path)\"/>"
            svg +=
                "<text x=\"\(width - right - 120 + Double(index % 3) * 0)\" y=\"\(top + 14 * Double(index))\" fill=\"\(color)\" font-size=\"12\">\(name)</text>"
        }
        return svg + "</svg>"
    }
}
