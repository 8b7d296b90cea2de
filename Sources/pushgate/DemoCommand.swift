import ArgumentParser
import DeviceAgent
import Foundation
import Gateway
import LoadGenerator
import Logging
import NIOPosix
import Synchronization

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Everything at once: a gateway on its embedded defaults, a simulated fleet, and a load test with a realistic mix.",
        discussion: """
            Runs in one process on loopback, on free ports, with a fresh data directory, and prints what the \
            load generator measured and what the gateway did with the pushes (woken on budget, held and \
            piggybacked, coalesced, deadline misses, accept-to-device latency).
            """)

    @Option(help: "Simulated devices.")
    var devices = 1000

    @Option(help: "Pushes per second (open loop).")
    var rate: Double = 1000

    @Option(help: "Seconds of load.")
    var duration: Double = 20

    @Option(help: "Scenario: a name in Config/scenarios or a YAML file (default: the embedded 'realistic').")
    var scenario: String?

    @Option(help: "Keep-alive interval the devices are given, in seconds (short, so keep-alive piggybacks show).")
    var keepAlive = 10

    @Option(help: "Device behaviour profile: a name in Config/profiles or a YAML file.")
    var profile = "default"

    @Option(help: "Write every figure as JSON here.")
    var json: String?

    @Option(help: "Write a self-contained HTML report here.")
    var html: String?

    @Flag(
        inversion: .prefixedNo,
        help: "After the load, keep the gateway and the fleet up for the live dashboard until interrupted (default: when the output is a terminal)."
    )
    var dashboard: Bool = isatty(STDOUT_FILENO) != 0

    func validate() throws {
        guard (1...15_000).contains(devices) else { throw ValidationError("--devices must be between 1 and 15000") }
        guard rate > 0 else { throw ValidationError("--rate must be > 0") }
        guard duration > 0 else { throw ValidationError("--duration must be > 0") }
        guard keepAlive >= 1 else { throw ValidationError("--keep-alive must be at least 1 second") }
    }

    func run() async throws {
        var scenario = try loadScenario(scenario)
        scenario.rate = rate
        scenario.duration_seconds = duration
        scenario.count = nil
        let profile = try loadProfile(profile)
        let bundle = "com.example.app"

        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        // One thread each for the gateway, the fleet and the load generator.
        let gatewayGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let fleetGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let benchGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Free loopback ports and a fresh data directory: the demo never disturbs a running gateway.
        let gateway = try await failing {
            try await LocalGateway.start(
                topic: bundle, settings: ["devices.keep_alive_seconds=\(keepAlive)"], group: gatewayGroup,
                logger: Logger(label: "pushgate"))
        }
        let devicePort = gateway.devicePort
        print(
            "gateway: provider API http://127.0.0.1:\(gateway.providerPort), devices ws://127.0.0.1:\(devicePort), admin http://127.0.0.1:\(gateway.adminPort)"
        )
        print("dashboard (live): http://127.0.0.1:\(gateway.adminPort)/dashboard")

        let fleet = SimulatedFleet(
            host: "127.0.0.1", port: devicePort, devices: devices, apps: [bundle], profile: profile,
            enrolment: gateway.services.hub.settings.enrolmentSecret, group: fleetGroup)
        fleet.start()
        let connecting = ContinuousClock.now
        while !fleet.allInstalled {
            guard ContinuousClock.now - connecting < .seconds(120) else {
                throw ValidationError(
                    "only \(fleet.counters.snapshot.connected) of \(devices) devices connected in 120 s")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let took = ContinuousClock.now - connecting
        print(
            "\(devices) simulated devices connected and installed \(bundle) in "
                + String(format: "%.1f s", Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18)
        )

        var options = BenchOptions(
            host: "127.0.0.1", port: gateway.providerPort, tls: false, scenario: scenario,
            targets: fleet.tokenLines.map {
                let fields = $0.split(separator: " ")
                return PushTarget(token: String(fields[0]), topic: String(fields[1]))
            })
        options.signer = gateway.signer
        let result = try await runBench(options, group: benchGroup, admin: ("127.0.0.1", gateway.adminPort, nil))
        print("devices: \(fleet.counters.snapshot.line)")
        try write(result, json: json, html: html)
        if dashboard {
            print(
                "the gateway and its \(devices) devices stay up: http://127.0.0.1:\(gateway.adminPort)/dashboard (lookups: pushgate lookup … --set admin.port=\(gateway.adminPort)); Ctrl-C stops"
            )
            await interrupted()
        }

        fleet.stop()
        try await gateway.stop()
        for group in [benchGroup, fleetGroup, gatewayGroup] { try await group.shutdownGracefully() }
    }
}

/// Returns on SIGINT or SIGTERM (the demo's dashboard mode waits here).
func interrupted() async {
    let resumed = Mutex(false)
    var sources: [any DispatchSourceSignal] = []
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        sources = [SIGINT, SIGTERM].map { signal in
            Foundation.signal(signal, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signal, queue: .global())
            source.setEventHandler {
                guard resumed.withLock({ done in defer { done = true }; return !done }) else { return }
                continuation.resume()
            }
            source.resume()
            return source
        }
    }
    for source in sources { source.cancel() }
}
