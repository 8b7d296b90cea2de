import AdminAPI
import Foundation
import PushStore

/// What `pushgate fleet up` and `fleet status` print, and the figures status reads from each node's
/// admin API and from the database's leases.
public enum NodesReport {
    /// One node's counters at one instant (nil when its admin API did not answer).
    public struct Sample: Sendable {
        public var ready: Bool
        public var connectedDevices: Int
        public var accepted: Int
        public var delivered: Int
        /// The node's cap on device connections (`devices.max_connections` as resolved; 0: none).
        public var deviceLimit: Int
    }

    public static func redacted(_ url: String) -> String { PostgresStore.redacted(url) }

    public static func nodes(_ state: NodeRecord, databaseShown: String) -> String {
        var lines = [
            "Fleet: \(state.nodes.count) nodes on \(databaseShown)\(state.ownPostgres.map { " (started for the fleet in \($0.directory))" } ?? "")",
            "| node | pid | provider h2c | provider TLS | devices | devices TLS | channels h2c | channels TLS | admin | log |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for node in state.nodes {
            lines.append(
                "| \(node.name) | \(node.pid) | \(port(node.providerH2CPort)) | \(port(node.providerTLSPort)) | \(port(node.devicesPort)) | \(port(node.devicesTLSPort)) | \(port(node.channelsH2CPort)) | \(port(node.channelsTLSPort)) | \(port(node.adminPort)) | \(node.log) |"
            )
        }
        return lines.joined(separator: "\n")
    }

    public static func status(
        _ state: NodeRecord, first: [Sample?], second: [Sample?], seconds: Double,
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
        if let line = capacity(limits: second.compactMap { $0?.deviceLimit }, devices: totals.devices) {
            lines.append(line)
        }
        if case .failure(let error) = leases { lines.append("leases: the database did not answer (\(error))") }
        return lines.joined(separator: "\n")
    }

    /// Whether the answering nodes' device connections would hold every connected device with one of
    /// them gone (the one with the largest cap): a lost node's devices reconnect to the others, and those
    /// a full node refuses keep retrying. Nil when a node has no cap or none answered.
    public static func capacity(limits: [Int], devices: Int) -> String? {
        guard !limits.isEmpty, !limits.contains(0) else { return nil }
        let total = limits.reduce(0, +)
        let survivors = total - limits.max()!
        let verdict =
            survivors >= devices
            ? "room for every device if one node is lost"
            : "one node lost, \(devices - survivors) devices would find no room: add a node (or raise devices.max_connections where the descriptors allow)"
        return
            "capacity: \(total) device connections on \(limits.count) nodes, \(survivors) without the largest; \(devices) connected — \(verdict)"
    }

    /// Each node's counters now, read from its admin API (nil for a node that does not answer). `token`:
    /// the nodes' `admin.token`, when they have one.
    public static func sample(_ state: NodeRecord, token: String?) async -> [Sample?] {
        var samples: [Sample?] = []
        for node in state.nodes {
            guard node.isRunning, let figures = await AdminClient.counters(port: node.adminPort, token: token) else {
                samples.append(nil)
                continue
            }
            let ready = await AdminClient.isReady(port: node.adminPort, pid: node.pid, token: token)
            samples.append(
                Sample(
                    ready: ready, connectedDevices: figures.connectedDevices, accepted: figures.accepted,
                    delivered: figures.delivered, deviceLimit: figures.deviceConnectionLimit))
        }
        return samples
    }

    /// The nodes' leases, from the database (bounded: a database that does not answer is reported).
    public static func leases(url: String) async -> Result<[String: Int64], any Error> {
        do {
            let store = try PostgresStore(url: url, nodeID: "pushgate-fleet-status")
            return .success(
                try await store.withRunning {
                    try await withThrowingTaskGroup(of: [String: Int64].self) { group in
                        group.addTask { try await store.leaseAges() }
                        group.addTask {
                            try await Task.sleep(for: .seconds(5))  // clock-ok: the status command's deadline
                            throw NodesFailure("no answer in 5 s")
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
