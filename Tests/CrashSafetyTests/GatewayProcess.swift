import AdminAPI
import ChildProcess
import Crypto
import Foundation
import GatewayFiles
import ProviderAuth
import Testing
import TestSupport

/// A `pushgate serve` child process on loopback ports, for tests that kill it.
final class GatewayProcess: @unchecked Sendable {
    /// The `pushgate` binary `swift test` built beside the tests, when there is one.
    static let binary: String? = {
        let directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [directory, directory.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent("pushgate").path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }()

    let process: ChildProcess

    static let enrolment = "test-fleet-enrolment"

    /// Starts the binary with `arguments`, its output and errors appended to `logPath`; in the network
    /// namespace `namespace` when given (`ip netns exec`, which runs the binary in its own place: the
    /// process is the gateway's).
    init(arguments: [String], logPath: String, namespace: String? = nil) throws {
        // Every gateway these tests start enrols devices with one known secret.
        let arguments =
            arguments.first == "serve"
            ? arguments + ["--set", "devices.enrolment_secret=\(Self.enrolment)"] : arguments
        if let namespace {
            process = try ChildProcess(
                "ip", ["netns", "exec", namespace, Self.binary!] + arguments, stdout: .file(logPath),
                stderr: .file(logPath))
        } else {
            process = try ChildProcess(Self.binary!, arguments, stdout: .file(logPath), stderr: .file(logPath))
        }
    }

    func kill(_ signal: Int32) { process.kill(signal) }

    /// Waits for the exit (bounded) and returns the status (the exit code, or 128 + the signal), or nil
    /// if it did not exit in time.
    func exitStatus(within seconds: Int) async -> Int32? {
        for _ in 0..<(seconds * 50) {
            if let status = process.exitStatus { return status }
            try? await Task.sleep(for: .milliseconds(20))  // clock-ok: waiting for a real process, bounded
        }
        return nil
    }

    /// The ports a child started with port 0 bound, from its log's "… listening" lines (info level for
    /// the provider, devices and admin modules).
    func boundPorts(logPath: String) async throws -> (provider: Int, devices: Int, admin: Int) {
        var found: [String: Int] = [:]
        let names = ["provider API listening", "device port listening", "admin API listening"]
        for _ in 0..<600 where found.count < names.count && process.isRunning {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            for line in log.split(separator: "\n") {
                guard let name = names.first(where: { line.contains($0) }),
                    let address = line.firstMatch(of: /address=\S*:(\d+)/), let port = Int(address.1)
                else { continue }
                found[name] = port
            }
            guard found.count < names.count else { continue }
            try await Task.sleep(for: .milliseconds(50))  // clock-ok: a process starting
        }
        guard let provider = found[names[0]], let devices = found[names[1]], let admin = found[names[2]] else {
            // Not yet in the caller's hands (its cleanup stops the gateways it got): stopped here, so that a
            // failed start leaves no process behind.
            process.kill(SIGKILL)
            throw NotListening(log: logPath, found: found)
        }
        return (provider, devices, admin)
    }

    /// The port of the listener whose start the log reports with `message` (nil if it never does).
    func listeningPort(_ message: String, logPath: String) async -> Int? {
        for _ in 0..<600 where process.isRunning {
            let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            for line in log.split(separator: "\n") where line.contains(message) {
                if let address = line.firstMatch(of: /address=\S*:(\d+)/) { return Int(address.1) }
            }
            try? await Task.sleep(for: .milliseconds(50))  // clock-ok: a process starting
        }
        return nil
    }

}

struct NotListening: Error, CustomStringConvertible {
    var log: String
    var found: [String: Int]
    var description: String { "the gateway did not report its listeners (found \(found)); see \(log)" }
}

/// Until the gateway whose admin API is on `host`:`adminPort` (with `token`, if it has one) answers
/// `/ready` with 200.
func waitUntilReady(host: String = "127.0.0.1", adminPort: Int, token: String? = nil) async throws {
    try await eventually("the gateway is ready") {
        await AdminClient.isReady(host: host, port: adminPort, token: token)
    }
}

/// The value of one series (`name{labels}`, exactly as Prometheus prints it) on a gateway's admin port's
/// `/metrics`; nil when it is not there.
func metricValue(_ series: String, adminPort: Int) async throws -> Double? {
    let text = try await AdminClient.get(host: "127.0.0.1", port: adminPort, path: "/metrics", token: nil).body
    let prefix = series + " "
    return text.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { Double($0.dropFirst(prefix.count)) }
}

/// A fresh data directory for a gateway under test, with a provider key for `topic` in its keys file;
/// returns the directory and a signer of that key's tokens. The caller removes the directory.
func gatewayDirectory(prefix: String, team: String, keyID: String, topic: String) throws
    -> (path: String, signer: ProviderTokenSigner)
{
    let directory = try temporaryDirectory(prefix)
    let key = P256.Signing.PrivateKey()
    let signer = ProviderTokenSigner(teamID: team, keyID: keyID, privateKey: key)
    try RegistryFiles.addKey(
        .init(
            team_id: team, key_id: keyID, public_key: key.publicKey.pemRepresentation, topics: [topic],
            environment: nil),
        to: directory + "/provider-keys.yaml")
    return (directory, signer)
}

extension GatewayProcess {
    /// `serve` on loopback ports the kernel picks (read back with `boundPorts`), h2c only, plain device
    /// port, logging what `boundPorts` reads; `extra` adds or overrides settings.
    static func serve(dataDirectory: String, _ extra: [String] = []) -> [String] {
        [
            "serve", "--set", "data_dir=\(dataDirectory)", "--set", "provider.tls.enabled=false",
            "--set", "provider.h2c.port=0", "--set", "devices.port=0", "--set", "devices.tls.enabled=false",
            "--set", "admin.port=0", "--set", "log.level=notice",
            "--set", "log.modules=provider=info,devices=info,admin=info", "--set", "channels.tls.enabled=false",
            "--set", "channels.h2c.enabled=false",
        ] + extra
    }

    /// `--set` arguments for `pushgate fleet` on fixed loopback ports from `base` (fleet up numbers the
    /// nodes' ports from them: provider h2c, devices, admin, channels h2c), TLS listeners off; `extra` adds
    /// or overrides settings.
    static func fleetSettings(data: String, base: Int, _ extra: [String] = []) -> [String] {
        ([
            "data_dir=\(data)", "provider.tls.enabled=false", "devices.tls.enabled=false",
            "provider.h2c.port=\(base)", "devices.port=\(base + 1)", "admin.port=\(base + 2)",
            "channels.tls.enabled=false", "channels.h2c.port=\(base + 3)", "log.level=notice",
        ] + extra).flatMap { ["--set", $0] }
    }
}

/// A new directory under the temporary directory; the caller removes it.
func temporaryDirectory(_ prefix: String) throws -> String {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(8))").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory
}
