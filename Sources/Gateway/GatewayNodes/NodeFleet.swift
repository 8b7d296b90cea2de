import AdminAPI
import ChildProcess
import DeviceHub
import Foundation
import Gateway
import GatewayFiles

#if canImport(Glibc)
    import Glibc
#endif

/// Several gateway nodes on this machine on one PostgreSQL (`pushgate fleet up` and `down`): each node its
/// own `pushgate serve` process with its own directory and log, on consecutive ports (`NodePlan`); what
/// was started is recorded in `<data_dir>/fleet/fleet.json` (`NodeRecord`). docs/store.md, "Several nodes".
public enum NodeFleet {
    /// What `up` is asked for, beside the configuration the nodes share.
    public struct Request: Sendable {
        /// How many nodes (1 to 32).
        public var nodes: Int
        /// The database the nodes share; empty: a PostgreSQL server started for the fleet on `postgresPort`.
        public var postgresURL: String
        public var postgresPort: Int
        /// How long each node may take to answer `/ready`.
        public var readySeconds: Int
        /// What each node is started with besides its own settings: the configuration file and the flags'
        /// overrides (`--config`, `--set`).
        public var configPath: String?
        public var overrides: [String]
        /// The `pushgate` binary the nodes run.
        public var executable: String

        public init(
            nodes: Int, postgresURL: String, postgresPort: Int, readySeconds: Int, configPath: String?,
            overrides: [String], executable: String
        ) {
            self.nodes = nodes
            self.postgresURL = postgresURL
            self.postgresPort = postgresPort
            self.readySeconds = readySeconds
            self.configPath = configPath
            self.overrides = overrides
            self.executable = executable
        }
    }

    /// Starts the nodes (and the fleet's own PostgreSQL when no database is given), waits until each is
    /// ready, and records them. A node that does not get ready stops every node started. `progress` is
    /// told each step worth saying.
    public static func up(
        _ request: Request, configuration: GatewayConfiguration, progress: (String) -> Void
    ) async throws -> NodeRecord {
        let plan = try NodePlan(configuration: configuration, nodes: request.nodes)
        let base = plan.dataDirectory
        if let running = try NodeRecord.read(dataDirectory: base), running.nodes.contains(where: \.isRunning) {
            throw NodesFailure(
                "a fleet is up already (\(running.nodes.filter(\.isRunning).count) of \(running.nodes.count) nodes running, recorded in \(NodeRecord.path(dataDirectory: base))): pushgate fleet down first"
            )
        }
        try FileManager.default.createDirectory(atPath: plan.fleetDirectory, withIntermediateDirectories: true)
        let log = plan.fleetDirectory + "/fleet.log"

        // The database.
        var own: NodeRecord.OwnPostgres?
        var url = request.postgresURL
        if url.isEmpty {
            let server = LocalPostgres(directory: plan.fleetDirectory + "/postgres", port: request.postgresPort)
            progress("Starting PostgreSQL for the fleet in \(server.directory) on 127.0.0.1:\(request.postgresPort) …")
            url = try server.start(log: log)
            own = NodeRecord.OwnPostgres(directory: server.directory, port: request.postgresPort)
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

        var started: [NodeRecord.Node] = []
        var processes: [ChildProcess] = []
        func stopStarted() {
            for process in processes { process.kill(SIGKILL) }
            for process in processes { process.waitUntilExit() }
            if let own { try? LocalPostgres(directory: own.directory, port: own.port).stop(log: log) }
        }
        for index in 0..<request.nodes {
            let node = plan.node(index)
            try FileManager.default.createDirectory(atPath: node.dataDirectory, withIntermediateDirectories: true)
            var arguments = ["serve"]
            if let config = request.configPath { arguments += ["--config", config] }
            for override in request.overrides { arguments += ["--set", override] }
            for (key, value) in plan.overrides(for: node).merging(shared, uniquingKeysWith: { a, _ in a })
                .sorted(by: { $0.key < $1.key })
            {
                arguments += ["--set", "\(key)=\(value)"]
            }
            do {
                // The database URL and the secret through the environment, not the command line (which
                // every user of the machine can read).
                let process = try ChildProcess(
                    request.executable, arguments, stdout: .file(node.log), stderr: .file(node.log),
                    environment: ["PUSHGATE_STORE_POSTGRES_URL": url, "PUSHGATE_DEVICES_ENROLMENT_SECRET": secret],
                    newSession: true)
                processes.append(process)
                var record = node
                record.pid = process.pid
                started.append(record)
            } catch {
                stopStarted()
                throw NodesFailure("cannot start \(node.name): \(error)")
            }
        }
        // Each node ready (listeners bound, store answering, the nodes' listening connection up).
        for (node, process) in zip(started, processes) {
            let ready = await waitReady(
                node, process: process, seconds: request.readySeconds, token: configuration.adminToken)
            guard ready else {
                let tail = tail(of: node.log)
                stopStarted()
                throw NodesFailure(
                    "\(node.name) did not get ready in \(request.readySeconds) s (its log, \(node.log), ends:)\n\(tail)\nevery node started is stopped again"
                )
            }
        }
        let record = NodeRecord(nodes: started, postgresURL: url, ownPostgres: own)
        try record.write(dataDirectory: base)
        return record
    }

    /// How `down` left each node.
    public enum Stopped: Sendable, Equatable {
        case notRunning
        case stopped
        case killed
    }

    /// Stops the recorded nodes (SIGTERM: each drains as `serve` does; SIGKILL past `graceSeconds`) and
    /// the fleet's own PostgreSQL, and forgets the record. Each node with how it stopped.
    public static func down(
        _ record: NodeRecord, dataDirectory base: String, graceSeconds: Int
    ) async throws -> [(node: NodeRecord.Node, stopped: Stopped)] {
        let running = record.nodes.filter(\.isRunning)
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
        if let own = record.ownPostgres {
            try LocalPostgres(directory: own.directory, port: own.port).stop(
                log: NodeRecord.directory(dataDirectory: base) + "/fleet.log")
        }
        NodeRecord.remove(dataDirectory: base)
        return record.nodes.map { node in
            (node, !running.contains(node) ? .notRunning : killed.contains(node) ? .killed : .stopped)
        }
    }

    /// Polls the node's /ready until it answers 200, the process exits, or the time is up. `token`: the
    /// nodes' `admin.token`, which every admin request of theirs, `/ready` too, must then carry.
    static func waitReady(
        _ node: NodeRecord.Node, process: ChildProcess, seconds: Int, token: String?
    ) async -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
        while ContinuousClock.now < deadline {
            guard process.isRunning else { return false }
            // Ready only when the node itself answers: another process on its admin port is not the node.
            if await AdminClient.isReady(port: node.adminPort, pid: process.pid, token: token) { return true }
            try? await Task.sleep(for: .milliseconds(100))  // clock-ok: waiting for a real process, bounded
        }
        return false
    }

    static func tail(of path: String, lines: Int = 15) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}
