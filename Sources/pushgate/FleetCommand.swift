import AdminAPI
import ArgumentParser
import ChildProcess
import DeviceHub
import Foundation
import Gateway
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
        let plan = try failing { try FleetPlan(configuration: configuration, nodes: nodes) }
        let base = plan.dataDirectory
        if let running = try FleetState.read(dataDirectory: base), running.nodes.contains(where: \.isRunning) {
            throw FleetFailure(
                "a fleet is up already (\(running.nodes.filter(\.isRunning).count) of \(running.nodes.count) nodes running, recorded in \(FleetState.path(dataDirectory: base))): pushgate fleet down first"
            )
        }
        try FileManager.default.createDirectory(atPath: plan.fleetDirectory, withIntermediateDirectories: true)
        let log = plan.fleetDirectory + "/fleet.log"

        // The database.
        var own: FleetState.OwnPostgres?
        var url = postgresURL ?? configuration.store.postgresURL
        if url.isEmpty {
            let server = LocalPostgres(directory: plan.fleetDirectory + "/postgres", port: postgresPort)
            print("Starting PostgreSQL for the fleet in \(server.directory) on 127.0.0.1:\(postgresPort) …")
            url = try server.start(log: log)
            own = FleetState.OwnPostgres(directory: server.directory, port: postgresPort)
        }

        // What the nodes share: made once here, so that two nodes starting together do not both make them.
        let secret = try configuration.hub.enrolmentSecret ?? EnrolmentSecret.ensure(dataDirectory: base)
        var shared = plan.sharedFiles
        if plan.needsTLS, configuration.tls.certificate.isEmpty {
            let development = DevelopmentCertificates(dataDirectory: base)
            _ = try development.ensure()
            shared["provider.tls.certificate"] = development.serverCertificatePath
            shared["provider.tls.private_key"] = development.serverKeyPath
            if configuration.tls.clientCA.isEmpty { shared["provider.tls.client_ca"] = development.caCertificatePath }
        }

        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().path
        var started: [FleetState.Node] = []
        var processes: [ChildProcess] = []
        func stopStarted() {
            for process in processes { process.kill(SIGKILL) }
            for process in processes { process.waitUntilExit() }
            if let own { try? LocalPostgres(directory: own.directory, port: own.port).stop(log: log) }
        }
        for index in 0..<nodes {
            let node = plan.node(index)
            try FileManager.default.createDirectory(atPath: node.dataDirectory, withIntermediateDirectories: true)
            var arguments = ["serve"]
            if let config = options.config { arguments += ["--config", config] }
            for override in options.overrides { arguments += ["--set", override] }
            for (key, value) in plan.overrides(for: node).merging(shared, uniquingKeysWith: { a, _ in a })
                .sorted(by: { $0.key < $1.key })
            {
                arguments += ["--set", "\(key)=\(value)"]
            }
            do {
                // The database URL and the secret through the environment, not the command line (which
                // every user of the machine can read).
                let process = try ChildProcess(
                    executable, arguments, stdout: .file(node.log), stderr: .file(node.log),
                    environment: ["PUSHGATE_STORE_POSTGRES_URL": url, "PUSHGATE_DEVICES_ENROLMENT_SECRET": secret],
                    newSession: true)
                processes.append(process)
                var record = node
                record.pid = process.pid
                started.append(record)
            } catch {
                stopStarted()
                throw FleetFailure("cannot start \(node.name): \(error)")
            }
        }
        // Each node ready (listeners bound, store answering, the nodes' listening connection up).
        for (node, process) in zip(started, processes) {
            let ready = await Self.waitReady(node, process: process, seconds: readySeconds)
            guard ready else {
                let tail = Self.tail(of: node.log)
                stopStarted()
                throw FleetFailure(
                    "\(node.name) did not get ready in \(readySeconds) s (its log, \(node.log), ends:)\n\(tail)\nevery node started is stopped again"
                )
            }
        }
        let state = FleetState(nodes: started, postgresURL: url, ownPostgres: own)
        try state.write(dataDirectory: base)
        print(FleetReport.nodes(state, databaseShown: FleetReport.redacted(url)))
        print(
            """

            Devices: pushgate simulate --fleet --data-dir \(base) …  (spread over every node; a device whose node goes away moves to the next)
            Providers: pushgate bench --url \(started.map { $0.providerH2CPort != 0 ? "http://127.0.0.1:\($0.providerH2CPort)" : "https://127.0.0.1:\($0.providerTLSPort)" }.joined(separator: ",")) …  (or POST to any node)
            Then: pushgate fleet status; pushgate fleet down
            """)
    }

    /// Polls the node's /ready until it answers 200, the process exits, or the time is up.
    static func waitReady(_ node: FleetState.Node, process: ChildProcess, seconds: Int) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
        while ContinuousClock.now < deadline {
            guard process.isRunning else { return false }
            if let answer = try? await AdminClient.get(
                host: "127.0.0.1", port: node.adminPort, path: "/ready", token: nil),
                answer.status == 200
            {
                return true
            }
            try? await Task.sleep(for: .milliseconds(100))  // clock-ok: waiting for a real process, bounded
        }
        return false
    }

    static func tail(of path: String, lines: Int = 15) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
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
        let (base, recorded) = try FleetState.recorded(options)
        guard let state = recorded else {
            throw FleetFailure(
                "no fleet is recorded in \(FleetState.path(dataDirectory: base)): pushgate fleet up starts one")
        }
        let first = await FleetReport.sample(state)
        try? await Task.sleep(for: .milliseconds(Int(max(0.1, sampleSeconds) * 1000)))  // clock-ok: the rates' span
        let second = await FleetReport.sample(state)
        let leases = await FleetReport.leases(url: state.postgresURL)
        print(
            FleetReport.status(
                state, first: first, second: second, seconds: max(0.1, sampleSeconds), leases: leases,
                databaseShown: FleetReport.redacted(state.postgresURL)))
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
        let (base, recorded) = try FleetState.recorded(options)
        guard let state = recorded else {
            print("No fleet is recorded in \(FleetState.path(dataDirectory: base)): nothing to stop.")
            return
        }
        let running = state.nodes.filter(\.isRunning)
        for node in running { _ = kill(node.pid, SIGTERM) }
        let deadline = ContinuousClock.now.advanced(by: .seconds(graceSeconds))
        while running.contains(where: \.isRunning), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(100))  // clock-ok: waiting for real processes, bounded
        }
        let killed = running.filter(\.isRunning)
        for node in killed { _ = kill(node.pid, SIGKILL) }
        while killed.contains(where: \.isRunning) {
            try? await Task.sleep(for: .milliseconds(20))  // clock-ok: SIGKILL cannot be refused
        }
        for node in state.nodes {
            let how =
                !running.contains(node)
                ? "was not running" : killed.contains(node) ? "killed after \(graceSeconds) s" : "stopped"
            print("\(node.name) (pid \(node.pid)): \(how)")
        }
        if let own = state.ownPostgres {
            try LocalPostgres(directory: own.directory, port: own.port).stop(
                log: FleetState.directory(dataDirectory: base) + "/fleet.log")
            print("PostgreSQL in \(own.directory): stopped (its data stays; fleet up starts it again)")
        }
        FleetState.remove(dataDirectory: base)
    }
}

extension FleetState {
    /// The data directory the options name (absolute) and the fleet recorded there, if any.
    static func recorded(_ options: ConfigOptions) throws -> (dataDirectory: String, state: FleetState?) {
        let configuration = try failing { try options.load() }
        let base = FleetPlan.absolute(configuration.dataDirectory)
        return (base, try read(dataDirectory: base))
    }
}
