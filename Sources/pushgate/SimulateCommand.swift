import ArgumentParser
import DeviceAgent
import DeviceProtocol
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Yams

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

    func validate() throws {
        guard devices > 0 else { throw ValidationError("--devices must be at least 1") }
    }

    /// Reads the profile: Config/profiles/NAME.yaml, or a path.
    func loadProfile() throws -> AgentProfile {
        let path = profile.contains("/") || profile.hasSuffix(".yaml") ? profile : "Config/profiles/\(profile).yaml"
        guard FileManager.default.fileExists(atPath: path) else {
            if profile == "default" { return AgentProfile() }
            throw ValidationError("--profile: no profile at \(path)")
        }
        let loaded: AgentProfile
        do {
            loaded = try YAMLDecoder().decode(
                AgentProfile.self, from: try String(contentsOfFile: path, encoding: .utf8))
        } catch {
            throw ValidationError("--profile \(path): \(error)")
        }
        if let problem = loaded.problem() { throw ValidationError("--profile \(path): \(problem)") }
        return loaded
    }

    func run() async throws {
        let profile = try loadProfile()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let counters = SimulationCounters()
        let bundles = apps.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        let behaviour = profile.behaviour
        let agents = (0..<devices).map { _ in
            DeviceAgent(
                host: host, port: port, apps: bundles, behaviour: behaviour, group: group,
                onEvent: { counters.record($0) })
        }
        for agent in agents { agent.start() }
        let lifeEvents = agents.map { agent in
            LifeEvents.schedule(agent, apps: bundles, profile: profile, on: group.next())
        }

        let start = ContinuousClock.now
        var wroteTokens = false
        let interactive = isatty(STDOUT_FILENO) != 0
        while duration == 0 || ContinuousClock.now - start < .seconds(duration) {
            try await Task.sleep(for: .seconds(1))
            let snapshot = counters.snapshot
            if !wroteTokens, agents.allSatisfy({ $0.tokens.count == bundles.count }) {
                let lines = agents.flatMap { agent in agent.tokens.map { "\($0.value) \($0.key)" } }.sorted()
                try (lines.joined(separator: "\n") + "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)
                wroteTokens = true
                print("\(lines.count) tokens written to \(tokensFile)")
            }
            if interactive {
                print("\u{1B}[2K\r\(snapshot.line)", terminator: "")
                fflush(nil)
            }
        }
        print(interactive ? "\n\(counters.snapshot.line)" : counters.snapshot.line)
        for task in lifeEvents { task.cancel() }
        for agent in agents { agent.stop() }
        try await group.shutdownGracefully()
    }
}

/// Counters across every simulated device.
final class SimulationCounters: Sendable {
    struct Snapshot {
        var connected = 0
        var received = 0
        var viaKeepAlive = 0
        var completed: [String: Int] = [:]
        var leftUncompleted = 0
        var closed = 0

        var line: String {
            "connected \(connected)  received \(received) (\(viaKeepAlive) on keep-alive)  completed newData \(completed["newData", default: 0]) noData \(completed["noData", default: 0]) failed \(completed["failed", default: 0])  never completed \(leftUncompleted)  closings \(closed)"
        }
    }

    private let state = Mutex(Snapshot())

    func record(_ event: AgentEvent) {
        state.withLock { state in
            switch event {
            case .welcomed: state.connected += 1
            case .disconnected: state.connected -= 1
            case .delivered(_, let viaKeepAlive):
                state.received += 1
                if viaKeepAlive { state.viaKeepAlive += 1 }
            case .completed(_, let result): state.completed[result, default: 0] += 1
            case .leftUncompleted: state.leftUncompleted += 1
            case .closing: state.closed += 1
            default: break
            }
        }
    }

    var snapshot: Snapshot { state.withLock { $0 } }
}

/// App-state changes and Low Power Mode periods over time, as the profile says: checked once a minute per
/// device, each an independent chance.
enum LifeEvents {
    static func schedule(_ agent: DeviceAgent, apps: [String], profile: AgentProfile, on loop: any EventLoop)
        -> RepeatedTask
    {
        let minute = TimeAmount.seconds(60)
        return loop.scheduleRepeatedTask(initialDelay: minute, delay: minute) { _ in
            if let app = apps.randomElement(), Double.random(in: 0..<1) < profile.force_quit_per_hour / 60 {
                agent.send(.appState(bundleID: app, state: "force_quit"))
                loop.scheduleTask(in: .seconds(profile.reopen_after_seconds)) {
                    agent.send(.appState(bundleID: app, state: "foreground"))
                }
            }
            if Double.random(in: 0..<1) < profile.low_power_per_hour / 60 {
                agent.send(.conditions(lowPowerMode: true, backgroundAppRefreshOff: false))
                loop.scheduleTask(in: .seconds(profile.low_power_seconds)) {
                    agent.send(.conditions(lowPowerMode: false, backgroundAppRefreshOff: false))
                }
            }
        }
    }
}
