import AdminAPI
import ArgumentParser
import ChildProcess
import DeviceHub
import Foundation
import Gateway
import GatewayNodes
import GatewayFiles

#if canImport(Glibc)
    import Glibc
#endif

/// `pushgate fleet`: several gateway nodes on this machine, sharing one PostgreSQL, run as one gateway
/// (docs/store.md, "Several nodes"). Each node is its own `pushgate serve` process with its own log, on
/// consecutive ports; what `fleet up` started is recorded in `<data_dir>/fleet/fleet.json`.
struct FleetCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Several gateway nodes on this machine on one PostgreSQL: up, status, down.",
        subcommands: [FleetUpCommand.self, FleetStatusCommand.self, FleetDownCommand.self])
}

struct FleetUpCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "up",
        abstract: "Start N gateway nodes on one PostgreSQL, each its own process and log, on consecutive ports.",
        discussion: """
            Node i (from 1) takes the configured ports moved up by (i - 1) × the span of the configured ports \
            (with the defaults: node 1 on 2195–2201, node 2 on 2202–2208, …). The nodes share the data \
            directory's provider keys, client certificates, device tokens, development TLS certificate and \
            enrolment secret; each keeps its own directory and log in <data_dir>/fleet/node-<i>. The database \
            is --postgres-url, else store.postgres.url, else a PostgreSQL server started for the fleet with its \
            data in <data_dir>/fleet/postgres (Debian's postgresql package).
            """)

    @OptionGroup var options: ConfigOptions

    @Option(help: "How many nodes (1 to 32).")
    var nodes = 3

    @Option(
        name: .customLong("postgres-url"),
        help:
            "The PostgreSQL database the nodes share (default: store.postgres.url; empty: a server started for the fleet)."
    )
    var postgresURL: String?

    @Option(
        name: .customLong("postgres-port"),
        help: "Port of the PostgreSQL server fleet up starts when no database is given.")
    var postgresPort = 5433

    @Option(name: .customLong("ready-seconds"), help: "How long each node may take to answer /ready.")
    var readySeconds = 60

    func run() async throws {
        guard (1...32).contains(nodes) else { throw ValidationError("--nodes: from 1 to 32, got \(nodes)") }
        guard (1...65535).contains(postgresPort) else {
            throw ValidationError("--postgres-port: from 1 to 65535, got \(postgresPort)")
        }
        let configuration = try failing { try options.load() }
        let request = NodeFleet.Request(
            nodes: nodes, postgresURL: postgresURL ?? configuration.store.postgresURL, postgresPort: postgresPort,
            readySeconds: readySeconds, configPath: options.config, overrides: options.overrides,
            executable: URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path)
        let record = try await asyncFailing {
            try await NodeFleet.up(request, configuration: configuration) { print($0) }
        }
        let base = NodePlan.absolute(configuration.dataDirectory)
        print(NodesReport.nodes(record, databaseShown: NodesReport.redacted(record.postgresURL)))
        print(
            """

            Devices: pushgate simulate --fleet --data-dir \(base) …  (spread over every node; a device whose node goes away moves to the next)
            Providers: pushgate bench --url \(record.nodes.map { $0.providerH2CPort != 0 ? "http://127.0.0.1:\($0.providerH2CPort)" : "https://127.0.0.1:\($0.providerTLSPort)" }.joined(separator: ",")) …  (or POST to any node)
            Then: pushgate fleet status; pushgate fleet down
            """)
    }
}

struct FleetStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Each node of the fleet: running, ready, connected devices, pushes per second, its lease.")

    @OptionGroup var options: ConfigOptions

    @Option(name: .customLong("sample-seconds"), help: "How long to watch the counters for the rates.")
    var sampleSeconds = 1.0

    func run() async throws {
        let (base, recorded, token) = try NodeRecord.recorded(options)
        guard let state = recorded else {
            throw NodesFailure(
                "no fleet is recorded in \(NodeRecord.path(dataDirectory: base)): pushgate fleet up starts one")
        }
        let first = await NodesReport.sample(state, token: token)
        try? await Task.sleep(for: .milliseconds(Int(max(0.1, sampleSeconds) * 1000)))  // clock-ok: the rates' span
        let second = await NodesReport.sample(state, token: token)
        let leases = await NodesReport.leases(url: state.postgresURL)
        print(
            NodesReport.status(
                state, first: first, second: second, seconds: max(0.1, sampleSeconds), leases: leases,
                databaseShown: NodesReport.redacted(state.postgresURL)))
    }
}

struct FleetDownCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "down",
        abstract:
            "Stop the fleet's nodes (SIGTERM: each drains as serve does; SIGKILL past the grace) and its own PostgreSQL."
    )

    @OptionGroup var options: ConfigOptions

    @Option(name: .customLong("grace-seconds"), help: "How long the nodes may take to drain before they are killed.")
    var graceSeconds = 30

    func run() async throws {
        let (base, recorded, _) = try NodeRecord.recorded(options)
        guard let state = recorded else {
            print("No fleet is recorded in \(NodeRecord.path(dataDirectory: base)): nothing to stop.")
            return
        }
        for (node, stopped) in try await NodeFleet.down(state, dataDirectory: base, graceSeconds: graceSeconds) {
            let how =
                switch stopped {
                case .notRunning: "was not running"
                case .killed: "killed after \(graceSeconds) s"
                case .stopped: "stopped"
                }
            print("\(node.name) (pid \(node.pid)): \(how)")
        }
        if let own = state.ownPostgres {
            print("PostgreSQL in \(own.directory): stopped (its data stays; fleet up starts it again)")
        }
    }
}

extension NodeRecord {
    /// The data directory the options name (absolute), the fleet recorded there, if any, and the nodes'
    /// `admin.token` (their admin requests, `/ready` too, carry it).
    static func recorded(_ options: ConfigOptions) throws -> (
        dataDirectory: String, state: NodeRecord?, adminToken: String?
    ) {
        let configuration = try failing { try options.load() }
        let base = NodePlan.absolute(configuration.dataDirectory)
        return (base, try read(dataDirectory: base), configuration.adminToken)
    }
}
