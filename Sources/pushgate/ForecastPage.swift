import DeviceRuntime
import Forecast
import LoadGenerator

/// `pushgate forecast --html`: a page of its own with the freshness and cost tables as HTML tables, and
/// charts of fresh-at-open and of cost (pushes and wakes per device) over the simulated day, a line
/// per variant.
enum ForecastPage {
    static let colours = ["#27a", "#d62", "#2a7", "#a27", "#aa2", "#2aa", "#72a", "#888"]

    static func html(names: [String], results: [ForecastResult], front: [Int]?) -> String {
        let first = results[0]
        func series(_ values: (ForecastResult) -> [(Double, Double)]) -> [(String, String, [(Double, Double)])] {
            results.enumerated().prefix(8).map { index, result in
                (names[index], colours[index % colours.count], values(result))
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
        let comparison =
            results.count > 1
            ? "<h2>Variants</h2>" + HTMLTable.fromMarkdown(ForecastCommand.comparison(names, results, front: front))
            : ""
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Pushgate forecast</title>
            <style>\(HTMLTable.style)td:nth-child(2){text-align:left}</style></head><body>
            <h1>Pushgate forecast — \(first.devices) iPhones, \(ForecastResult.decimal(first.hours)) h of virtual time</h1>
            <ul>\(first.settings.map { "<li>" + HTMLTable.escape($0) + "</li>" }.joined())</ul>
            \(comparison)
            <h2>Freshness at open\(results.count > 1 ? " (as configured)" : "")</h2>
            \(HTMLTable.fromMarkdown(first.report.text))
            <h2>What it cost</h2>
            \(HTMLTable.fromMarkdown(first.costText))
            \(BenchReport.chart(title: "Fresh at open, hour by hour", unit: " %", series: fresh, xLabel: "hour of the run"))
            \(BenchReport.chart(title: "Pushes sent per device, hour by hour", unit: "", series: pushes, xLabel: "hour of the run"))
            \(BenchReport.chart(title: "Background wakes per device, hour by hour", unit: "", series: wakes, xLabel: "hour of the run"))
            <p>\(first.versionsPublished) versions published; \(first.events) events in \(ForecastResult.decimal(first.seconds)) s on \(first.threads) thread(s).</p>
            </body></html>
            """
    }
}
