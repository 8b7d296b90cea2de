import AdminAPI
import ChildProcess
import Foundation
import Gateway
import Testing
import TestSupport

/// After SIGTERM the gateway drains: the admin API keeps answering until the process exits, `/ready`
/// with 503 and the failing check, `/health` with 200, as orchestrators expect.
@Suite(.serialized) struct DrainingTests {
    static let curl = ["/usr/bin/curl", "/usr/local/bin/curl"].first {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: DrainingTests.curl != nil, "needs curl (apt-get install curl) to hold a request open"))
    func theAdminAPIAnswersWhileTheGatewayDrains() async throws {
        let directory = try temporaryDirectory("pushgate-drain")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/gateway.log"
        let gateway = try GatewayProcess(
            arguments: GatewayProcess.serve(
                dataDirectory: directory, ["--ephemeral", "--set", "shutdown.grace_seconds=60"]),
            logPath: log)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: log)
        func get(_ path: String) async -> (status: Int, body: String)? {
            try? await AdminClient.get(host: "127.0.0.1", port: ports.admin, path: path, token: nil)
        }
        try await eventually("ready") { await get("/ready")?.status == 200 }

        // A request whose body never ends (curl uploading from a pipe kept open) holds the drain.
        let input = Pipe()
        let client = try ChildProcess(
            Self.curl!,
            [
                "--http2-prior-knowledge", "-sS", "-o", "/dev/null", "-X", "POST", "-T", "-",
                "http://127.0.0.1:\(ports.provider)/3/device/\(String(repeating: "ab", count: 32))",
            ], stdin: .descriptor(input.fileHandleForReading.fileDescriptor))
        try input.fileHandleForReading.close()
        defer { client.kill(SIGTERM) }
        input.fileHandleForWriting.write(Data(#"{"aps":"#.utf8))
        try await eventually("the request's connection is open") {
            await AdminClient.counters(port: ports.admin)?.providerConnections == 1
        }

        gateway.kill(SIGTERM)
        try await eventually("draining: not ready, still alive") {
            guard let ready = await get("/ready"), ready.status == 503 else { return false }
            return ready.body.contains(#""not_draining" : false"#)
        }
        #expect(await get("/health")?.status == 200)
        #expect(gateway.process.isRunning, "still draining while the request is open")

        // The request ends: the drain completes and the process exits cleanly.
        try input.fileHandleForWriting.close()
        let status = await gateway.exitStatus(within: 30)
        #expect(status == 0, "exit status \(String(describing: status)); log: \(log)")
    }
}
