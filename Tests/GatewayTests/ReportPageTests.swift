import DeviceRuntime
import Foundation
import PushModel
import TestSupport
import Testing

@testable import LoadGenerator

/// The HTML report (`bench`, `demo`, `simulate --html`) in a real browser 1,400 pixels wide: its summary
/// and the freshness table are HTML tables with their cells (not text with Markdown pipes), and nothing
/// runs past the right edge. A screenshot is kept (`.build/test-artifacts/report.png`).
@Suite struct ReportPageTests {
    @Test(
        .enabled(
            if: HeadlessChromium.binary != nil,
            "needs Debian's chromium (apt-get install chromium); .ci/run installs it"))
    func theReportsTablesAreTablesAndNothingIsClipped() async throws {
        var recorder = BenchRecorder(kinds: 1)
        for millisecond in 1...200 {
            recorder.sent(kind: 0, at: 0)
            recorder.completed(
                kind: 0, .accepted, latencyNanoseconds: Int64(millisecond) * 1_000_000,
                at: Int64(millisecond) * 1_000_000)
        }
        recorder.sent(kind: 0, at: 0)
        recorder.completed(
            kind: 0, .rejected(status: 400, reason: "BadDeviceToken"), latencyNanoseconds: 1_000_000, at: 300_000_000)
        recorder.finish(at: 2_000_000_000)
        var result = BenchResult(
            recorder: recorder, mix: [PushKind.builtIn[0]], scenario: Scenario(mix: [PushKind.builtIn[0]]),
            target: "127.0.0.1:2198", startedAt: Date(), seconds: 2)
        var ledger = FreshnessLedger()
        for at: Int64 in [1_000, 2_000, 3_000] {
            ledger.record(.opened(app: 0, contentVersion: 1), at: UnixTime(milliseconds: at), profile: "news")
        }
        ledger.record(.opened(app: 0, contentVersion: nil), at: UnixTime(milliseconds: 4_000), profile: "chat")
        result.fleet = FleetFigures(
            devices: 2, seconds: 10,
            report: ledger.report(versions: [1: 500], hours: 1, apps: ["news": 1, "chat": 1]),
            timeline: [], published: [.init(version: 1, publishedAt: 500)], announcements: [])

        let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let page = artifacts.appendingPathComponent("report.html")
        try BenchReport.html(result).write(to: page, atomically: true, encoding: .utf8)

        let browser = try HeadlessChromium(width: 1400, height: 900)
        defer { browser.close() }
        try await browser.open(page.absoluteString)
        func text(_ expression: String) async throws -> String {
            "\(try await browser.evaluate("String(\(expression))") ?? "")"
        }
        // A new page starts as about:blank, whose readyState is "complete" too: wait for this one.
        try await eventually("the page loaded") {
            try await text("location.href + ' ' + document.readyState") == page.absoluteString + " complete"
        }
        // Two tables at least: the summary's and the freshness table, each with its cells.
        let cells = try await text(
            "[...document.querySelectorAll('table')].map(t => t.querySelectorAll('td').length).join(',')")
        let counts = cells.split(separator: ",").compactMap { Int($0) }
        #expect(counts.count >= 2 && counts.allSatisfy { $0 > 0 }, "cells per table: \(cells)")
        #expect(try await text("document.querySelector('table').innerText").contains("accepted (200)"))
        let freshness = try await text(
            "[...document.querySelectorAll('table')].find(t => t.innerText.includes('fresh at open'))?.innerText")
        #expect(freshness.contains("news") && freshness.contains("100 %"), "\(freshness)")
        // No Markdown left, no monospaced dump, nothing past the right edge.
        #expect(try await text("document.body.innerText.includes('|---')") == "false")
        #expect(try await text("document.querySelectorAll('pre').length") == "0")
        #expect(try await text("document.documentElement.scrollWidth <= window.innerWidth") == "true")
        #expect(
            try await text(
                "[...document.querySelectorAll('table, svg')].every(e => e.getBoundingClientRect().right <= window.innerWidth)"
            )
                == "true")

        let screenshot = try await browser.screenshot()
        try screenshot.write(to: artifacts.appendingPathComponent("report.png"))
        #expect(screenshot.count > 10_000)
    }
}
