import DeviceRuntime
import Forecast
import Foundation
import LoadGenerator

/// `pushgate forecast --html`: a page of its own with the freshness and cost tables as HTML tables, every
/// variant as a point of freshness against cost (the Pareto front marked), the recommendation across
/// assumptions (`--assume`), and charts of fresh-at-open and of cost over the simulated day. Variants are
/// numbered: a search's names share long prefixes, so the charts name them by number, and the list under
/// the scatter gives each number its name.
enum ForecastPage {
    static let colours = ["#27a", "#d62", "#2a7", "#a27", "#aa2", "#2aa", "#72a", "#888"]

    static func html(
        names: [String], results: [ForecastResult], front: [Int]?, objective: ForecastObjective = .fleet,
        robust: String? = nil
    ) -> String {
        let first = results[0]
        // The hour-by-hour charts: today's and the front's (at most eight lines), each by its number.
        let charted = Array(
            ([0] + (front ?? Array(results.indices.dropFirst()))).reduce(into: [Int]()) {
                if !$0.contains($1) { $0.append($1) }
            }.prefix(8))
        func series(_ values: (ForecastResult) -> [(Double, Double)]) -> [(String, String, [(Double, Double)])] {
            charted.enumerated().map { line, index in
                ("\(index + 1)\(index == 0 ? " (today)" : "")", colours[line % colours.count], values(results[index]))
            }
        }
        let fresh = series { result in
            result.hourly.compactMap { hour in hour.freshAtOpen.map { (Double(hour.hour), $0 * 100) } }
        }
        let pushes = series { result in
            result.hourlyPushesPerDevice.enumerated().map { (Double($0.offset), $0.element) }
        }
        let wakes = series { result in result.hourlyWakesPerDevice.enumerated().map { (Double($0.offset), $0.element) }
        }
        var comparison = ""
        if results.count > 1 {
            comparison =
                "<h2>Variants</h2>"
                + scatter(names: names, results: results, front: front ?? [], objective: objective)
                + "<ol>" + names.map { "<li>" + HTMLTable.escape($0) + "</li>" }.joined() + "</ol>"
                + HTMLTable.fromMarkdown(
                    ForecastComparison.table(names, results, front: front, objective: objective))
        }
        let assumptions =
            robust.map { "<h2>Under each assumption</h2>" + HTMLTable.fromMarkdown($0) } ?? ""
        let lines = results.count > 1 ? " (numbered as in the list above)" : ""
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Pushgate forecast</title>
            <style>\(HTMLTable.style)td:nth-child(2){text-align:left}</style></head><body>
            <h1>Pushgate forecast — \(first.devices) iPhones, \(ForecastResult.decimal(first.hours)) h of virtual time</h1>
            <ul>\(first.settings.map { "<li>" + HTMLTable.escape($0) + "</li>" }.joined())</ul>
            \(comparison)
            \(assumptions)
            <h2>Freshness at open\(results.count > 1 ? " (as configured)" : "")</h2>
            \(HTMLTable.fromMarkdown(first.report.text))
            <h2>What it cost</h2>
            \(HTMLTable.fromMarkdown(first.costText))
            \(BenchReport.chart(title: "Fresh at open, hour by hour\(lines)", unit: " %", series: fresh, xLabel: "hour of the run"))
            \(BenchReport.chart(title: "Pushes sent per device, hour by hour", unit: "", series: pushes, xLabel: "hour of the run"))
            \(BenchReport.chart(title: "Background wakes per device, hour by hour", unit: "", series: wakes, xLabel: "hour of the run"))
            <p>\(first.versionsPublished) versions published; \(first.events) events in \(ForecastResult.decimal(first.seconds)) s on \(first.threads) thread(s).</p>
            </body></html>
            """
    }

    /// Every variant as a numbered point: fresh at open (up) against awake seconds per device-day (right),
    /// for the objective; the front's points filled and joined, the others hollow.
    static func scatter(names: [String], results: [ForecastResult], front: [Int], objective: ForecastObjective)
        -> String
    {
        let (width, height, left, bottom, top, right) = (760.0, 360.0, 60.0, 44.0, 30.0, 30.0)
        let points = results.map { (objective.cost($0), objective.freshness($0) * 100) }
        let maxX = max(points.map(\.0).max() ?? 1, 1e-9) * 1.1
        let minY = max(0, (points.map(\.1).min() ?? 0) - 5)
        let maxY = min(100, (points.map(\.1).max() ?? 100) + 5)
        func x(_ value: Double) -> Double { left + value / maxX * (width - left - right) }
        func y(_ value: Double) -> Double {
            height - bottom - (value - minY) / max(1e-9, maxY - minY) * (height - bottom - top)
        }
        var svg =
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(height))\" role=\"img\">"
        svg +=
            "<text x=\"\(left)\" y=\"18\" font-weight=\"bold\">Fresh at open (\(HTMLTable.escape(objective.name))) against awake time: filled points are the Pareto front</text>"
        svg += "<line x1=\"\(left)\" y1=\"\(y(minY))\" x2=\"\(width - right)\" y2=\"\(y(minY))\" stroke=\"#999\"/>"
        svg += "<line x1=\"\(left)\" y1=\"\(top)\" x2=\"\(left)\" y2=\"\(y(minY))\" stroke=\"#999\"/>"
        for step in 0...4 {
            let value = minY + (maxY - minY) * Double(step) / 4
            svg +=
                "<text x=\"\(left - 6)\" y=\"\(y(value) + 4)\" text-anchor=\"end\" font-size=\"11\">\(String(format: "%.0f", value)) %</text>"
            let cost = maxX / 1.1 * Double(step) / 4
            svg +=
                "<text x=\"\(x(cost))\" y=\"\(height - bottom + 16)\" text-anchor=\"middle\" font-size=\"11\">\(String(format: cost < 10 ? "%.1f" : "%.0f", cost))</text>"
        }
        svg +=
            "<text x=\"\(left + (width - left - right) / 2)\" y=\"\(height - 6)\" text-anchor=\"middle\" font-size=\"11\">awake s per device-day</text>"
        let frontPath = front.sorted { points[$0].0 < points[$1].0 }
            .map { String(format: "%.1f,%.1f", x(points[$0].0), y(points[$0].1)) }.joined(separator: " ")
        svg += "<polyline fill=\"none\" stroke=\"#d62\" stroke-dasharray=\"4 3\" points=\"\(frontPath)\"/>"
        for (index, point) in points.enumerated() {
            let onFront = front.contains(index)
            let (cx, cy) = (x(point.0), y(point.1))
            svg +=
                "<circle cx=\"\(String(format: "%.1f", cx))\" cy=\"\(String(format: "%.1f", cy))\" r=\"5\" fill=\"\(onFront ? "#d62" : "white")\" stroke=\"\(index == 0 ? "#27a" : "#d62")\" stroke-width=\"2\"><title>\(HTMLTable.escape(names[index]))</title></circle>"
            svg +=
                "<text x=\"\(String(format: "%.1f", cx + 7))\" y=\"\(String(format: "%.1f", cy - 6))\" font-size=\"11\">\(index + 1)</text>"
        }
        return svg + "</svg>"
    }
}
