import Foundation
import TestSupport
import Testing

/// A fleet the gateway refuses says why and ends: a wrong enrolment secret is an error naming the flag
/// and the secret's file, with a non-zero exit, well before `--duration`; a gateway that is not there is
/// an error after the connect timeout, never a silent run.
@Suite(.serialized) struct RefusedFleetTests {
    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func aWrongEnrolmentSecretIsRefusedWithItsFix() async throws {
        let directory = try temporaryDirectory("pushgate-refused")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/gateway.log"
        let gateway = try GatewayProcess(
            arguments: GatewayProcess.serve(dataDirectory: directory, ["--ephemeral"]), logPath: log)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: log)

        // Plain agents and iPhones alike; --duration is far longer than the refusal takes.
        for mode in [["--profile", "default"], []] {
            let output = directory + "/simulate.txt"
            let simulate = try GatewayProcess(
                arguments: [
                    "simulate", "--port", "\(ports.devices)", "--devices", "4", "--duration", "600",
                    "--enrolment-secret", "not-the-secret", "--tokens-file", directory + "/tokens.txt",
                ] + mode, logPath: output)
            defer { simulate.kill(SIGKILL) }
            let status = await simulate.exitStatus(within: 60)
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            #expect(status != nil && status != 0, "\(mode): \(String(describing: status)) \(text)")
            #expect(text.contains("auth_failed"), "\(mode): \(text)")
            #expect(
                text.contains("--enrolment-secret") && text.contains("devices.enrolment_secret"), "\(mode): \(text)")
            #expect(!text.contains("connected -"), "a negative count: \(text)")
            // The fleet ends at the first refusal it sees: how many of the four were refused by then varies.
            #expect(
                text.range(of: #"refused [1-4] \(auth_failed\)"#, options: .regularExpression) != nil,
                "\(mode): \(text)")
        }
    }

    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func aFleetWithNoGatewayFailsAfterItsTimeout() async throws {
        let directory = try temporaryDirectory("pushgate-nogateway")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Port 1: nobody listens there.
        let output = directory + "/simulate.txt"
        let simulate = try GatewayProcess(
            arguments: [
                "simulate", "--port", "1", "--devices", "2", "--duration", "600", "--connect-timeout", "2",
                "--enrolment-secret", "any", "--profile", "default",
            ], logPath: output)
        defer { simulate.kill(SIGKILL) }
        let status = await simulate.exitStatus(within: 60)
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        #expect(status == 1, "\(String(describing: status)) \(text)")
        #expect(text.contains("only 0 of 2 devices connected") && text.contains("--port"), "\(text)")
    }
}
