import AdminAPI
import Foundation
import GatewayFiles
import NIOCore
import NIOHPACK
import ProviderAuth
import PushModel
import TestSupport
import Testing
import WallClock

#if canImport(Glibc)
    import Glibc
#endif

/// A provider connection that never reads its answers is bounded: the gateway stops reading its
/// requests once its unsent answers pass `provider.http2.output_limit_bytes` (so the client's own
/// writes block: the real event this waits for), counts it, and closes the connection after
/// `stalled_close_seconds`. Before, it read on and queued every answer in memory.
@Suite(.serialized) struct NeverReadingProviderTests {
    static let topic = "com.example.neverreads"

    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func aConnectionThatNeverReadsIsPausedThenClosed() async throws {
        let (directory, signer) = try gatewayDirectory(
            prefix: "pushgate-neverreads", team: "READTEAM01", keyID: "READKEY001", topic: Self.topic)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let token = DeviceToken(String(repeating: "ab", count: 32))!
        try RegistryFiles.registerToken(token, bundleID: Self.topic, in: directory + "/device-tokens.yaml")
        let log = directory + "/gateway.log"
        let gateway = try GatewayProcess(
            arguments: GatewayProcess.serve(
                dataDirectory: directory,
                [
                    "--set", "store.backend=memory", "--set", "provider.rate.device_token.per_second=0",
                    "--set", "provider.rate.team.per_second=0", "--set", "provider.http2.output_limit_bytes=65536",
                    "--set", "provider.http2.stalled_close_seconds=2",
                    // The kernel's own send buffer (autotuned to 4 MiB) would otherwise hold ~80,000
                    // answers before the gateway's bound counts one: fixed small, the pause comes after
                    // a few thousand requests however slowly the gateway runs.
                    "--set", "provider.http2.socket_send_buffer_bytes=16384",
                    // A client that never reads never learns the stream limit: high, so the output bound acts.
                    "--set", "provider.http2.max_concurrent_streams=1000000",
                ]),
            logPath: log)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: log)

        let client = try BlockingSocket(port: ports.provider, receiveBuffer: 4096)
        defer { client.close() }
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let headers: HPACKHeaders = [
            ":method": "POST", ":scheme": "http", ":path": "/3/device/\(token.hex)", ":authority": "127.0.0.1",
            "authorization": "bearer " + (try signer.token(issuedAt: UnixTime.now())), "apns-topic": Self.topic,
            "apns-push-type": "alert",
        ]
        let body = Array(#"{"aps":{"alert":"x"}}"#.utf8)
        // The preface, our SETTINGS, and the acknowledgement of the gateway's SETTINGS (sent as the
        // connection opens; unread, but acknowledged, so its stream limit applies).
        let preface =
            Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8) + Self.frame(type: 0x4, flags: 0, stream: 0, [])
            + Self.frame(type: 0x4, flags: 0x1, stream: 0, [])
        #expect(client.write(preface) == preface.count)

        func metric(_ outcome: String) async throws -> Double? {
            try await metricValue(
                #"pushgate_provider_stalled_connections_total{outcome="\#(outcome)"}"#, adminPort: ports.admin)
        }

        // Requests as fast as the socket takes them, until the gateway says it stopped reading this
        // connection (bounded: a gateway that read on would take all 400,000 and hold every answer).
        var pending: [UInt8] = []
        var sent = 0
        var stream: UInt32 = 1
        var paused = false
        for _ in 0..<600 {
            while true {
                if pending.isEmpty {
                    guard sent < 400_000 else { break }
                    var block = ByteBuffer()
                    try encoder.encode(headers: headers, to: &block)
                    pending =
                        Self.frame(type: 0x1, flags: 0x4, stream: stream, Array(block.readableBytesView))
                        + Self.frame(type: 0x0, flags: 0x1, stream: stream, body)
                    sent += 1
                    stream += 2
                }
                let written = client.write(pending)
                guard written > 0 else { break }
                pending.removeFirst(written)
            }
            if try await metric("paused") == 1 {
                paused = true
                break
            }
            client.waitWritable(milliseconds: 100)
        }
        #expect(paused, "the gateway read on: \(sent) requests")
        #expect(sent < 400_000)
        try await eventually("and closed after stalled_close_seconds") { try await metric("closed") == 1 }
        try await eventually("the client sees the close") { client.isClosedByPeer }
        // The gateway goes on serving others.
        let ready = try await AdminClient.get(host: "127.0.0.1", port: ports.admin, path: "/ready", token: nil)
        #expect(ready.status == 200)
    }

    static func frame(type: UInt8, flags: UInt8, stream: UInt32, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count
        return [UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff), type, flags]
            + [UInt8(stream >> 24 & 0x7f), UInt8(stream >> 16 & 0xff), UInt8(stream >> 8 & 0xff), UInt8(stream & 0xff)]
            + payload
    }
}
