import AdminAPI
import DeviceRuntime
import Foundation
import Gateway
import LoadGenerator
import PushModel
import TestSupport
import Testing

/// The live dashboard in a real browser: headless Chromium loads `/dashboard` from a real gateway while
/// pushes flow, the live figures appear and change, a token lookup answers, and a screenshot is kept
/// (`.build/test-artifacts/dashboard.png`).
@Suite(.timeLimit(.minutes(5))) struct DashboardTests {
    static let topic = "com.example.dashboard"

    @Test(
        .enabled(
            if: HeadlessChromium.binary != nil,
            "needs Debian's chromium (apt-get install chromium); .ci/run installs it"))
    func theLiveFiguresAppearAndChangeWhilePushesFlow() async throws {
        try await GatewayWithDevice.run(
            topic: Self.topic, settings: ["devices.keep_alive_seconds=3600"]
        ) { setup in
            let token = setup.token

            // A fleet in the gateway's process (as the demo attaches one): its freshness table shows.
            var ledger = FreshnessLedger()
            for at: Int64 in [1_000, 2_000, 3_000] {
                ledger.record(
                    .opened(app: 0, contentVersion: 1), at: UnixTime(milliseconds: at), profile: "news")
            }
            ledger.record(
                .opened(app: 0, contentVersion: nil), at: UnixTime(milliseconds: 4_000), profile: "chat")
            let figures = FleetFigures(
                devices: 2, seconds: 10,
                report: ledger.report(versions: [1: 500], hours: 1, apps: ["news": 1, "chat": 1]),
                timeline: [], published: [.init(version: 1, publishedAt: 500)], announcements: [])
            let json = String(decoding: try figures.json(), as: UTF8.self)
            setup.gateway.services.attached.attach(.init(json: { json }, metrics: { "" }))

            let browser = try HeadlessChromium()
            defer { browser.close() }
            try await browser.open("http://127.0.0.1:\(setup.gateway.adminPort)/dashboard")
            func accepted() async throws -> [Int] {
                (try await browser.evaluate("document.body.dataset.accepted") as? String ?? "")
                    .split(separator: ",").compactMap { Int($0) }
            }
            try await eventually("a live update reached the page") { try await !accepted().isEmpty }
            // Pushes flow while the page is open (an alert and a silent push in turn): the page's accepted
            // total grows, update by update. (Sent once the page shows its first figures, however long
            // the browser took to start.)
            let before = try await accepted().last ?? 0
            for n in 0..<20 { #expect(try await setup.post(silent: n % 2 == 1) == 200) }
            try await eventually("the accepted total grows on the page while pushes flow") {
                let figures = try await accepted()
                return figures.count >= 3 && (figures.last ?? 0) >= before + 20
            }
            #expect(try await browser.evaluate("document.getElementById('connected').textContent") as? String == "1")
            let rate = try await browser.evaluate("document.getElementById('rate-total').textContent") as? String
            #expect(rate != nil && rate != "–")
            try await eventually("the fleet's freshness table appeared") {
                try await browser.evaluate("document.body.dataset.fleetOpens") as? String == "4"
            }
            let table =
                try await browser.evaluate("document.getElementById('fleet-table').textContent") as? String ?? ""
            #expect(table.contains("news") && table.contains("100 %"), "\(table)")

            // The lookup box finds the device behind the token.
            _ = try await browser.evaluate(
                """
                document.getElementById('query').value = '\(token)';
                document.getElementById('lookup').requestSubmit(); true
                """)
            try await eventually("the lookup answered") {
                (try await browser.evaluate("document.getElementById('lookup-result').textContent") as? String ?? "")
                    .contains(Self.topic)
            }

            let screenshot = try await browser.screenshot()
            let artifacts = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
                .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts")
            try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
            try screenshot.write(to: artifacts.appendingPathComponent("dashboard.png"))
            #expect(screenshot.count > 10_000)
        }
    }
}
