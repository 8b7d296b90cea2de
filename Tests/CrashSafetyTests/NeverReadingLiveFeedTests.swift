import AdminAPI
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A live-feed client (`/v1/live`, the dashboard's stream) that never reads is bounded: once its socket
/// stops taking events, at most one waits for it (the next are skipped and counted), and after
/// `admin.live.stalled_close_seconds` it is closed. Before, one event a second queued for it for ever.
@Suite(.serialized) struct NeverReadingLiveFeedTests {
    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func aLiveFeedClientThatNeverReadsIsSkippedThenClosed() async throws {
        let directory = try temporaryDirectory("pushgate-livefeed")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/gateway.log"
        let gateway = try GatewayProcess(
            arguments: GatewayProcess.serve(
                dataDirectory: directory,
                [
                    "--set", "store.backend=memory",
                    // Ten events a second fill the kernel's buffers for a non-reading client in seconds.
                    "--set", "admin.live.interval_ms=100", "--set", "admin.live.stalled_close_seconds=2",
                ]),
            logPath: log)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: log)

        let client = try BlockingSocket(port: ports.admin, receiveBuffer: 4096)
        defer { client.close() }
        let request = Array("GET /v1/live HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n\r\n".utf8)
        #expect(client.write(request) == request.count)

        func metric(_ outcome: String) async throws -> Double? {
            try await metricValue(#"pushgate_admin_live_stalled_total{outcome="\#(outcome)"}"#, adminPort: ports.admin)
        }
        // The events fill the client's and the kernel's buffers; then they are skipped, then it is closed.
        try await eventually("events skipped for the client that does not read") {
            try await metric("skipped") ?? 0 >= 1
        }
        try await eventually("and closed after stalled_close_seconds") { try await metric("closed") == 1 }
        try await eventually("the client sees the close") { client.isClosedByPeer }
        // Another follower is served as before.
        let ready = try await AdminClient.get(host: "127.0.0.1", port: ports.admin, path: "/ready", token: nil)
        #expect(ready.status == 200)
    }
}
