import ArgumentParser
import DeviceAgent
import DeviceProtocol
import Foundation
import Gateway
import GatewayFiles
import NIOCore
import NIOPosix
import Synchronization

struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Run simulated devices against a gateway's device port and write their tokens for backends.")

    @Option(help: "Device port host.")
    var host = "127.0.0.1"

    @Option(help: "Device port (plain WebSocket).")
    var port = 2199

    @Option(help: "How many devices.")
    var devices = 100

    @Option(help: "Bundle ids every device installs (comma-separated).")
    var apps = "com.example.app"

    @Option(help: "Where to write 'token bundle_id' lines once every device has its tokens.")
    var tokensFile = "simulated-tokens.txt"

    @Option(help: "Behaviour profile: a name in Config/profiles (default, misbehaving) or a YAML file's path.")
    var profile = "default"

    @Option(help: "Stop after this many seconds (0: run until interrupted).")
    var duration: Int = 0

    @Option(help: "Event-loop threads for the devices.")
    var threads = 2

    @Option(
        help: ArgumentHelp(
            "The gateway's enrolment secret (devices.enrolment_secret); default: the one in --data-dir.",
            valueName: "secret"))
    var enrolmentSecret: String?

    @Option(help: "The gateway's data directory, where it keeps its enrolment secret when none is configured.")
    var dataDir = "./data"

    func validate() throws {
        guard devices > 0 else { throw ValidationError("--devices must be at least 1") }
    }

    func run() async throws {
        let profile = try loadProfile(profile)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let bundles = apps.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        guard let enrolment = enrolmentSecret ?? EnrolmentSecret.read(dataDirectory: dataDir) else {
            throw ValidationError(
                "no enrolment secret: give --enrolment-secret (the gateway's devices.enrolment_secret), or --data-dir where the gateway keeps \(EnrolmentSecret.fileName)"
            )
        }
        let fleet = SimulatedFleet(
            host: host, port: port, devices: devices, apps: bundles, profile: profile, enrolment: enrolment,
            group: group)
        fleet.start()

        let start = ContinuousClock.now
        var wroteTokens = false
        let interactive = isatty(STDOUT_FILENO) != 0
        while duration == 0 || ContinuousClock.now - start < .seconds(duration) {
            try await Task.sleep(for: .seconds(1))
            if !wroteTokens, fleet.allInstalled {
                let lines = fleet.tokenLines
                try (lines.joined(separator: "\n") + "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)
                wroteTokens = true
                print("\(lines.count) tokens written to \(tokensFile)")
            }
            if interactive {
                print("\u{1B}[2K\r\(fleet.counters.snapshot.line)", terminator: "")
                fflush(nil)
            }
        }
        print(interactive ? "\n\(fleet.counters.snapshot.line)" : fleet.counters.snapshot.line)
        fleet.stop()
        try await group.shutdownGracefully()
    }
}

/// Reads a behaviour profile: Config/profiles/NAME.yaml, or a path.
func loadProfile(_ name: String) throws -> AgentProfile {
    let loaded = try loadNamedYAML(
        name, directory: "Config/profiles", flag: "--profile", embedded: ("default", AgentProfile()))
    if let problem = loaded.problem() { throw ValidationError("--profile \(name): \(problem)") }
    return loaded
}
