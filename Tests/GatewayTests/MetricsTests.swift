import AdminAPI
import DeviceHub
import Foundation
import Gateway
import PushMetrics
import PushModel
import PushPolicy
import TestSupport
import Testing

/// `/metrics` on a real gateway (SQLite store, one device agent): after a scripted set of pushes, the
/// exact counts.
@Suite(.timeLimit(.minutes(5))) struct MetricsTests {
    static let topic = "com.example.metrics"

    @Test func aScriptedSetOfPushesGivesExactCounts() async throws {
        try await GatewayWithDevice.run(
            topic: Self.topic,
            settings: [
                "policy.budget.capacity=2", "devices.keep_alive_seconds=3600", "store.postgres.node_id=test-node",
            ]
        ) { setup in
            let gateway = setup.gateway
            // Three silent pushes (two wake the app, one is held), an alert (it carries the held one), and a
            // push to a token nobody has.
            for _ in 0..<3 { #expect(try await setup.post(silent: true) == 200) }
            #expect(try await setup.post(silent: false) == 200)
            #expect(try await setup.post(silent: false, to: String(repeating: "0", count: 64)) == 400)
            try await eventually("the app completed the three wakes (the held push woke it with the alert)") {
                gateway.services.hub.policyCounters.completedNewData == 3
            }

            let (status, text) = try await setup.admin("/metrics")
            #expect(status == 200)
            let metrics = Self.parse(text)
            let expected: [String: Double] = [
                #"pushgate_provider_requests_total{reason="",status="200"}"#: 4,
                #"pushgate_provider_requests_total{reason="BadDeviceToken",status="400"}"#: 1,
                #"pushgate_provider_requests_total{reason="BadTopic",status="400"}"#: 0,
                "pushgate_provider_request_duration_seconds_count": 5,
                #"pushgate_accepted_total{class="silent",push_type="background"}"#: 3,
                #"pushgate_accepted_total{class="alerting",push_type="alert"}"#: 1,
                #"pushgate_silent_outcomes_total{outcome="woken_on_budget"}"#: 2,
                #"pushgate_silent_outcomes_total{outcome="held"}"#: 1,
                #"pushgate_silent_outcomes_total{outcome="released_on_alert"}"#: 1,
                #"pushgate_silent_outcomes_total{outcome="coalesced"}"#: 0,
                #"pushgate_completions_total{result="new_data"}"#: 3,
                "pushgate_completion_deadline_misses_total": 0,
                "pushgate_held_notifications": 0,
                "pushgate_connected_devices": 1,
                "pushgate_registered_devices": 1,
                "pushgate_delivered_total": 4,
                "pushgate_sent_total": 4,
                #"pushgate_delivery_states_total{state="received"}"#: 4,
                #"pushgate_delivery_states_total{state="delivered_to_device"}"#: 3,
                #"pushgate_delivery_states_total{state="delivered_from_storage"}"#: 1,
                #"pushgate_delivery_states_total{state="stored_power_considerations"}"#: 1,
                #"pushgate_delivery_states_total{state="discarded_coalesced"}"#: 0,
                #"pushgate_node_info{node="test-node"}"#: 1,
            ]
            for (series, value) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(metrics[series] == value, "\(series)")
            }
            #expect((metrics["pushgate_store_commits_total"] ?? 0) >= 1)
            #expect(metrics["pushgate_store_commit_batch_changes_count"] == metrics["pushgate_store_commits_total"])
            #expect(text.contains("# TYPE pushgate_provider_request_duration_seconds histogram"))
            for name in MetricName.allCases {
                #expect(text.contains("# HELP \(name.rawValue) \(name.help)\n# TYPE \(name.rawValue) "), "\(name)")
            }
            #expect(!text.contains(setup.token), "never a token as a label")

            // A second scrape adds nothing that did not happen.
            let again = Self.parse(
                try await AdminClient.get(
                    host: "127.0.0.1", port: gateway.adminPort, path: "/metrics", token: nil
                ).body)
            #expect(again[#"pushgate_silent_outcomes_total{outcome="woken_on_budget"}"#] == 2)

        }
    }

    @Test func theDocumentationListsEveryMetric() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let doc = try String(contentsOf: root.appendingPathComponent("docs/metrics.md"), encoding: .utf8)
        for name in MetricName.allCases {
            #expect(doc.contains("| `\(name.rawValue)` |"), "docs/metrics.md does not list \(name.rawValue)")
        }
    }

    /// Series (labels in name order) to value; a counter never incremented reads 0.
    static func parse(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            var series = String(line[..<space])
            if let open = series.firstIndex(of: "{"), series.hasSuffix("}") {
                let labels = series[series.index(after: open)..<series.index(before: series.endIndex)]
                    .split(separator: ",").sorted()
                series = series[..<open] + "{" + labels.joined(separator: ",") + "}"
            }
            values[series] = value
        }
        return values
    }
}
