import ArgumentParser
import DeviceAgent
import DeviceProtocol
import Foundation
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

    @Option(help: "Milliseconds a background wake's work takes before the app completes.")
    var workMilliseconds: Int64 = 200

    @Option(help: "Fraction of wakes answered 'failed'.")
    var failedFraction = 0.05

    @Option(help: "Fraction of wakes never completed (the app is terminated at the deadline).")
    var neverFraction = 0.01

    @Option(help: "Stop after this many seconds (0: run until interrupted).")
    var duration: Int = 0

    @Option(help: "Event-loop threads for the devices.")
    var threads = 2

    func validate() throws {
        guard devices > 0 else { throw ValidationError("--devices must be at least 1") }
        guard (0...1).contains(failedFraction), (0...1).contains(neverFraction), failedFraction + neverFraction <= 1
        else {
            throw ValidationError(
                "--failed-fraction and --never-fraction must be between 0 and 1 and add up to at most 1")
        }
    }

    func run() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let counters = SimulationCounters()
        let bundles = apps.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        let work = workMilliseconds
        let failed = failedFraction
        let never = neverFraction
        let behaviour = AgentBehaviour { _ in
            let roll = Double.random(in: 0..<1)
            if roll < never { return .never }
            return .complete(
                result: roll < never + failed ? "failed" : (Bool.random() ? "newData" : "noData"),
                afterMilliseconds: work)
        }
        let agents = (0..<devices).map { _ in
            DeviceAgent(
                host: host, port: port, apps: bundles, behaviour: behaviour, group: group,
                onEvent: { counters.record($0) })
        }
        for agent in agents { agent.start() }

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
        var closed = 0

        var line: String {
            "connected \(connected)  received \(received) (\(viaKeepAlive) on keep-alive)  completed newData \(completed["newData", default: 0]) noData \(completed["noData", default: 0]) failed \(completed["failed", default: 0])  closings \(closed)"
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
            case .closing: state.closed += 1
            default: break
            }
        }
    }

    var snapshot: Snapshot { state.withLock { $0 } }
}
