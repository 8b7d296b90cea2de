import AdminAPI
import Foundation
import PushStore

/// What `pushgate fleet up` and `fleet status` print, and the figures status reads from each node's
/// admin API and from the database's leases.
enum FleetReport {
    /// One node's counters at one instant (nil when its admin API did not answer).
    struct Sample: Sendable {
        var ready: Bool
        var connectedDevices: Int
        var accepted: Int
        var delivered: Int
    }

    static func redacted(_ url: String) -> String { PostgresStore.redacted(url) }

    static func nodes(_ state: FleetState, databaseShown: String) -> String {
        var lines = [
            "Fleet: \(state.nodes.count) nodes on \(databaseShown)\(state.ownPostgres.map { " (started for the fleet in \($0.directory))" } ?? "")",
            "| node | pid | provider h2c | provider TLS | devices | devices TLS | admin | log |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for node in state.nodes {
            lines.append(
                "| \(node.name) | \(node.pid) | \(port(node.providerH2CPort)) | \(port(node.providerTLSPort)) | \(port(node.devicesPort)) | \(port(node.devicesTLSPort)) | \(port(node.adminPort)) | \(node.log) |"
            )
        }
        return lines.joined(separator: "\n")
    }

    static func status(
        _ state: FleetState, first: [Sample?], second: [Sample?], seconds: Double,
        leases: Result<[String: Int64], any Error>,
        databaseShown: String
    ) -> String {
        var lines = [
            "Fleet: \(state.nodes.count) nodes on \(databaseShown)",
            "| node | pid | process | ready | devices | accepted/s | delivered/s | lease age | admin |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        var totals = (devices: 0, accepted: 0.0, delivered: 0.0)
        for (index, node) in state.nodes.enumerated() {
            let running = node.isRunning
            let now = second[index]
            let before = first[index]
            var ready = "–"
            var devices = "–"
            var accepted = "–"
            var delivered = "–"
            if let now {
                ready = now.ready ? "yes" : "no"
                devices = String(now.connectedDevices)
                totals.devices += now.connectedDevices
                if let before {
                    let a = Double(now.accepted - before.accepted) / seconds
                    let d = Double(now.delivered - before.delivered) / seconds
                    totals.accepted += a
                    totals.delivered += d
                    accepted = String(format: "%.0f", a)
                    delivered = String(format: "%.0f", d)
                }
            } else if running {
                ready = "no answer"
            }
            let lease: String
            switch leases {
            case .success(let ages):
                lease = ages[node.name].map { String(format: "%.1f s", Double($0) / 1000) } ?? "none"
            case .failure: lease = "?"
            }
            lines.append(
                "| \(node.name) | \(node.pid) | \(running ? "running" : "stopped") | \(ready) | \(devices) | \(accepted) | \(delivered) | \(lease) | 127.0.0.1:\(node.adminPort) |"
            )
        }
        lines.append(
            "| all | | \(state.nodes.filter(\.isRunning).count) of \(state.nodes.count) | | \(totals.devices) | \(String(format: "%.0f", totals.accepted)) | \(String(format: "%.0f", totals.delivered)) | | |"
        )
        if case .failure(let error) = leases { lines.append("leases: the database did not answer (\(error))") }
        return lines.joined(separator: "\n")
    }

    /// Each node's counters now, read from its admin API (nil for a node that does not answer).
    static func sample(_ state: FleetState) async -> [Sample?] {
        var samples: [Sample?] = []
        for node in state.nodes {
            guard node.isRunning,
                let counters = try? await AdminClient.get(
                    host: "127.0.0.1", port: node.adminPort, path: "/v1/counters", token: nil),
                counters.status == 200,
                let json = try? JSONSerialization.jsonObject(with: Data(counters.body.utf8)) as? [String: Any]
            else {
                samples.append(nil)
                continue
            }
            let ready =
                (try? await AdminClient.get(host: "127.0.0.1", port: node.adminPort, path: "/ready", token: nil))?
                .status == 200
            let hub = json["hub"] as? [String: Any] ?? [:]
            let policy = json["policy"] as? [String: Any] ?? [:]
            func number(_ dictionary: [String: Any], _ key: String) -> Int {
                (dictionary[key] as? NSNumber)?.intValue ?? 0
            }
            samples.append(
                Sample(
                    ready: ready, connectedDevices: number(json, "connectedDevices"),
                    accepted: ["alertingAccepted", "silentAccepted", "otherAccepted"].reduce(0) {
                        $0 + number(policy, $1)
                    },
                    delivered: number(hub, "delivered")))
        }
        return samples
    }

    /// The nodes' leases, from the database (bounded: a database that does not answer is reported).
    static func leases(url: String) async -> Result<[String: Int64], any Error> {
        do {
            let store = try PostgresStore(url: url, nodeID: "pushgate-fleet-status")
            return .success(
                try await store.withRunning {
                    try await withThrowingTaskGroup(of: [String: Int64].self) { group in
                        group.addTask { try await store.leaseAges() }
                        group.addTask {
                            try await Task.sleep(for: .seconds(5))  // clock-ok: the status command's deadline
                            throw FleetFailure("no answer in 5 s")
                        }
                        defer { group.cancelAll() }
                        return try await group.next()!
                    }
                })
        } catch {
            return .failure(error)
        }
    }

    private static func port(_ port: Int) -> String { port == 0 ? "off" : String(port) }
}
