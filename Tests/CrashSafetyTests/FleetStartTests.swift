import AdminAPI
import ChildProcess
import Foundation
import Testing
import TestSupport

/// `pushgate fleet up` where a newcomer runs it: from a directory only its owner can enter (a fresh
/// `mktemp -d`, anything under `/root`), with its own PostgreSQL; and with one of a node's ports already
/// held by another process, which answers `/ready` as a gateway would.
@Suite(.serialized) struct FleetStartTests {
    /// Debian's PostgreSQL server, as `fleet up` looks for it.
    static let serverInstalled: Bool = {
        let root = "/usr/lib/postgresql"
        return ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).contains {
            FileManager.default.isExecutableFile(atPath: "\(root)/\($0)/bin/initdb")
        }
    }()

    /// A directory only its owner may enter, as `mktemp -d` makes.
    static func privateDirectory() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushgate-fleet-start-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(
            atPath: path, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        return path
    }

    static func fleet(_ arguments: [String], log: String) async throws -> Int32? {
        try await GatewayProcess(arguments: ["fleet"] + arguments, logPath: log).exitStatus(within: 180)
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: serverInstalled, "needs Debian's postgresql (initdb), which fleet up starts"))
    func aFleetStartsItsOwnPostgreSQLFromAPrivateDirectory() async throws {
        let directory = try Self.privateDirectory()
        let data = directory + "/data"
        let cluster = data + "/fleet/postgres"
        defer {
            // The cluster's files, where they went (as root, the postgres user's home: the link says).
            let real = (cluster as NSString).resolvingSymlinksInPath
            if real != cluster { try? FileManager.default.removeItem(atPath: real) }
            try? FileManager.default.removeItem(atPath: directory)
        }
        let base = 21_000 + Int.random(in: 0..<400) * 10
        let settings = GatewayProcess.fleetSettings(data: data, base: base)
        let upLog = directory + "/up.log"
        let up = try await Self.fleet(
            ["up", "--nodes", "1", "--postgres-port", "\(base + 9)"] + settings, log: upLog)
        let downLog = directory + "/down.log"
        let down = try await Self.fleet(["down"] + settings, log: downLog)
        #expect(up == 0, "fleet up: \((try? String(contentsOfFile: upLog, encoding: .utf8)) ?? "")")
        #expect(down == 0, "fleet down: \((try? String(contentsOfFile: downLog, encoding: .utf8)) ?? "")")
        #expect(FileManager.default.fileExists(atPath: cluster + "/PG_VERSION"))
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aPortHeldByAnotherProcessStopsFleetUpNamingIt() async throws {
        let directory = try Self.privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = directory + "/data"
        let base = 21_000 + Int.random(in: 400..<800) * 10
        let admin = base + 2
        // Another process on node 1's admin port that answers 200 to anything, `/ready` too.
        let impostor = try ChildProcess(
            "/usr/bin/python3",
            [
                "-c",
                """
                import http.server
                class H(http.server.BaseHTTPRequestHandler):
                    def do_GET(self):
                        self.send_response(200); self.send_header("content-type", "application/json"); self.end_headers()
                        self.wfile.write(b'{"status":"ready","checks":{}}')
                    def log_message(self, *a): pass
                http.server.HTTPServer(("127.0.0.1", \(admin)), H).serve_forever()
                """,
            ], stdout: .file(directory + "/impostor.log"), stderr: .file(directory + "/impostor.log"))
        defer { impostor.kill(SIGKILL) }
        try await eventually("the other process answers on the admin port") {
            (try? await AdminClient.get(host: "127.0.0.1", port: admin, path: "/ready", token: nil))?.status == 200
        }
        let url = try await TestPostgres.makeDatabase(prefix: "pushgate_fleet_start")
        let settings = GatewayProcess.fleetSettings(data: data, base: base)
        let upLog = directory + "/up.log"
        let up = try await Self.fleet(["up", "--nodes", "1", "--postgres-url", url] + settings, log: upLog)
        let said = (try? String(contentsOfFile: upLog, encoding: .utf8)) ?? ""
        let nodeLog = (try? String(contentsOfFile: data + "/fleet/node-1.log", encoding: .utf8)) ?? ""
        #expect(up != 0, "fleet up took the other process for its node: \(said)")
        #expect(
            (said + nodeLog).contains("cannot listen on 127.0.0.1:\(admin) (admin.port)"),
            "the failure names the address and the setting: \(said)\n\(nodeLog)")
        _ = try? await Self.fleet(["down"] + settings, log: directory + "/down.log")
        await TestPostgres.dropDatabase(url)
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aFleetWithAnAdminTokenGetsReadyAndShowsItsNodes() async throws {
        let directory = try Self.privateDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = directory + "/data"
        let base = 21_000 + Int.random(in: 800..<1150) * 10  // below the ephemeral ports (32768 on)
        let url = try await TestPostgres.makeDatabase(prefix: "pushgate_fleet_token")
        // Every admin request of the nodes, `/ready` among them, must carry the token.
        let settings = GatewayProcess.fleetSettings(data: data, base: base, ["admin.token=fleet-admin-secret"])
        let upLog = directory + "/up.log"
        let up = try await Self.fleet(["up", "--nodes", "1", "--postgres-url", url] + settings, log: upLog)
        let unauthorized = try? await AdminClient.get(host: "127.0.0.1", port: base + 2, path: "/ready", token: nil)
        let statusLog = directory + "/status.log"
        let status = try await Self.fleet(["status", "--sample-seconds", "0.1"] + settings, log: statusLog)
        let shown = (try? String(contentsOfFile: statusLog, encoding: .utf8)) ?? ""
        let down = try await Self.fleet(["down"] + settings, log: directory + "/down.log")
        await TestPostgres.dropDatabase(url)
        #expect(up == 0, "fleet up: \((try? String(contentsOfFile: upLog, encoding: .utf8)) ?? "")")
        #expect(unauthorized?.status == 401, "the node's /ready without the token")
        #expect(status == 0 && down == 0)
        #expect(
            shown.contains("| node-1 | ") && shown.contains(" | running | yes | "),
            "fleet status reads the node's /ready and counters with the token: \(shown)")
    }
}
