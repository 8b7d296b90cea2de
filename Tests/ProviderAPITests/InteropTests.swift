import ChildProcess
import Foundation
import GatewayFiles
import PushModel
import Testing
import TestSupport

@testable import ProviderAPI

/// Real HTTP/2 peers: curl and nghttp (Debian's nghttp2-client) send to the gateway. Skipped, with a
/// message, where the tool is not installed; `.ci/run` installs both.
@Suite struct InteropTests {
    static func which(_ tool: String) -> String? {
        for directory in ["/usr/bin", "/usr/local/bin", "/bin"]
        where FileManager.default.isExecutableFile(atPath: "\(directory)/\(tool)") {
            return "\(directory)/\(tool)"
        }
        return nil
    }

    /// Runs a tool and returns what it printed, bounded in time.
    func run(_ path: String, _ arguments: [String]) throws -> String {
        let output = Pipe()
        let process = try ChildProcess(
            path, arguments, stdout: .descriptor(output.fileHandleForWriting.fileDescriptor),
            stderr: .descriptor(output.fileHandleForWriting.fileDescriptor))
        try output.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test(.enabled(if: which("curl") != nil, "curl is not installed (apt-get install curl)"))
    func curlOverH2CAndTLS() async throws {
        let curl = try #require(Self.which("curl"))
        try await TestGateway.with { gateway in
            let authorization = gateway.bearer()
            let common = [
                "-s", "--max-time", "10", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "-H",
                "authorization: \(authorization)",
                "-H", "apns-topic: \(Fixture.bundle)", "-d", #"{"aps":{"alert":"curl"}}"#,
            ]
            let h2c = try run(
                curl,
                common + [
                    "--http2-prior-knowledge", "http://127.0.0.1:\(gateway.h2cPort)/3/device/\(Fixture.token.hex)",
                ])
            #expect(h2c == "200 2")
            let tls = try run(
                curl,
                common + [
                    "--http2", "--cacert", gateway.certificates.caCertificatePath,
                    "https://localhost:\(gateway.tlsPort)/3/device/\(Fixture.token.hex)",
                ])
            #expect(tls == "200 2")
            let gone = try run(
                curl,
                [
                    "-s", "--max-time", "10", "--http2-prior-knowledge", "-H", "authorization: \(authorization)", "-H",
                    "apns-topic: \(Fixture.bundle)",
                    "-d", #"{"aps":{"alert":"curl"}}"#,
                    "http://127.0.0.1:\(gateway.h2cPort)/3/device/\(Fixture.uninstalledToken.hex)",
                ])
            #expect(gone == #"{"reason":"Unregistered","timestamp":\#(Fixture.uninstalledAt.milliseconds)}"#)
            #expect(gateway.intake.notifications.count == 2)
        }
    }

    @Test(.enabled(if: which("nghttp") != nil, "nghttp is not installed (apt-get install nghttp2-client)"))
    func nghttpOverH2CAndTLS() async throws {
        let nghttp = try #require(Self.which("nghttp"))
        try await TestGateway.with { gateway in
            let body = gateway.directory + "/body.json"
            try #"{"aps":{"content-available":1}}"#.write(toFile: body, atomically: true, encoding: .utf8)
            let arguments = [
                "-v", "-t", "10", "-d", body, "-H", "authorization: \(gateway.bearer())", "-H",
                "apns-topic: \(Fixture.bundle)",
                "-H", "apns-push-type: background", "-H", "apns-priority: 5",
            ]
            for url in ["http://127.0.0.1:\(gateway.h2cPort)", "https://127.0.0.1:\(gateway.tlsPort)"] {
                let output = try run(nghttp, arguments + ["\(url)/3/device/\(Fixture.token.hex)"])
                #expect(output.contains(":status: 200"), "\(output)")
                #expect(output.contains("apns-id:"))
            }
            #expect(gateway.intake.notifications.map(\.notificationClass) == [.silent, .silent])
        }
    }
}
