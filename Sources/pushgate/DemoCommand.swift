import IPhoneFleet
import AdminAPI
import ArgumentParser
import DeviceAgent
import DeviceHub
import DeviceRuntime
import Forecast
import Foundation
import Gateway
import LoadGenerator
import Logging
import NIOCore
import NIOPosix
import ProviderClient
import PushModel
import Synchronization
import UnixSignals

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract:
            "Everything at once: a gateway on its embedded defaults, a simulated fleet, and a load test with a realistic mix.",
        discussion: """
            Runs in one process on loopback, on free ports, with a fresh data directory, and prints what the \
            load generator measured and what the gateway did with the pushes (woken on budget, held and \
            piggybacked, coalesced, deadline misses, accept-to-device latency). The devices are simulated \
            iPhones (Config/iphone) fetching from a built-in content server that publishes a version every \
            --publish-every seconds (5 here), each announced with the pushes its apps' backends send; the \
            freshness of their content at every open is reported with the rest, on /metrics and on the \
            dashboard.
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

    @OptionGroup var iphone: IPhoneOptions

    @Option(help: "Plain agents instead of iPhones: a behaviour profile in Config/profiles or a YAML file.")
    var profile: String?

    @Option(help: "Write every figure as JSON here.")
    var json: String?

    @Option(help: "Write a self-contained HTML report here.")
    var html: String?

    @Flag(
        inversion: .prefixedNo,
        help:
            "After the load, keep the gateway and the fleet up for the live dashboard until interrupted (default: when the output is a terminal)."
    )
    var dashboard: Bool = isatty(STDOUT_FILENO) != 0

    func validate() throws {
        guard (1...15_000).contains(devices) else { throw ValidationError("--devices must be between 1 and 15000") }
        guard rate > 0 else { throw ValidationError("--rate must be > 0") }
        guard duration > 0 else { throw ValidationError("--duration must be > 0") }
        guard keepAlive >= 1 else { throw ValidationError("--keep-alive must be at least 1 second") }
        try iphone.check()
    }

    func run() async throws {
        var scenario = try loadScenario(scenario)
        scenario.rate = rate
        scenario.duration_seconds = duration
        scenario.count = nil
        let plain = try profile.map { try loadProfile($0) }
        let plainBundle = "com.example.app"
        let (mix, _) = try iphone.mix(devices: devices, opensPerHour: 0)
        let topics = plain == nil ? mix.strategies.keys.sorted() : [plainBundle]

        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .warning
            return handler
        }
        // One thread each for the gateway, the fleet and the load generator.
        let gatewayGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let fleetGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let benchGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Free loopback ports and a fresh data directory: the demo never disturbs a running gateway. The
        // gateway runs the services `serve` runs, in the same group, until the demo is over.
        try await asyncFailing {
            try await LocalGateway.run(
                topics: topics, settings: ["devices.keep_alive_seconds=\(keepAlive)"], group: gatewayGroup,
                logger: Logger(label: "pushgate")
            ) { gateway in
                try await demo(
                    on: gateway, scenario: scenario, plain: plain, plainBundle: plainBundle, mix: mix, topics: topics,
                    fleetGroup: fleetGroup, benchGroup: benchGroup)
            }
        }
        for group in [benchGroup, fleetGroup, gatewayGroup] { try await group.shutdownGracefully() }
    }

    /// The demo's fleet, content and load against `gateway`, and the reports.
    private func demo(
        on gateway: LocalGateway, scenario: Scenario, plain: AgentProfile?, plainBundle: String, mix: IPhoneMix,
        topics: [String], fleetGroup: MultiThreadedEventLoopGroup, benchGroup: MultiThreadedEventLoopGroup
    ) async throws {
        let devicePort = gateway.devicePort
        print(
            "gateway: provider API http://127.0.0.1:\(gateway.providerPort), devices ws://127.0.0.1:\(devicePort), admin http://127.0.0.1:\(gateway.adminPort)"
        )
        print("dashboard (live): http://127.0.0.1:\(gateway.adminPort)/dashboard")

        let enrolment = gateway.services.hub.settings.enrolmentSecret
        let fleet: SimulatedFleet
        var content: FleetRun.Content?
        if let plain {
            fleet = SimulatedFleet(
                host: "127.0.0.1", port: devicePort, devices: devices, apps: [plainBundle], profile: plain,
                enrolment: enrolment, seed: iphone.seed, group: fleetGroup)
        } else {
            let channelPort = gateway.channelPorts.last
            let started = try await iphone.start(
                devices: devices, endpoints: [.init(host: "127.0.0.1", port: devicePort)], enrolment: enrolment,
                opensPerHour: iphone.opensPerHour ?? 60,
                channels: channelPort.map { port in
                    { mix in
                        try await asyncFailing {
                            try await FleetChannels.create(
                                for: mix, url: "http://127.0.0.1:\(port)", flag: "channels.h2c.port",
                                signer: gateway.signer, group: fleetGroup)
                        }
                    }
                }, group: fleetGroup)
            // The first version once every app can be told of it; then one every --publish-every.
            content = FleetRun.Content(
                scenario: started.0, mix: started.2, channels: started.3,
                provider: .init(
                    host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, signer: gateway.signer),
                publishEvery: iphone.publishEvery ?? 5)
            fleet = started.1
            print("content: \(started.0.originURL)/manifest (\(mix.kinds.map(\.name).joined(separator: ", ")))")
            attach(fleet, started.0, to: gateway)
        }
        defer { gateway.services.attached.detach() }
        let connecting = ContinuousClock.now
        do {
            try await FleetRun.run(fleet, content: content, installSeconds: SimulateCommand.connectSeconds) {
                let took = ContinuousClock.now - connecting
                print(
                    "\(devices) simulated devices connected and installed \(topics.joined(separator: ", ")) in "
                        + String(
                            format: "%.1f s",
                            Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18))
                try await live(
                    on: gateway, fleet: fleet, content: content?.scenario, scenario: scenario, mix: mix,
                    benchGroup: benchGroup)
            }
        } catch let problem as FleetError {
            throw CommandFailure(problem.explained(host: "127.0.0.1", port: devicePort, dataDir: nil))
        }
    }

    /// The live part: load through the provider API while the fleet runs (and its content, if any), the
    /// figures, and a forecast of a day of the same fleet.
    private func live(
        on gateway: LocalGateway, fleet: SimulatedFleet, content: ContentScenario?, scenario: Scenario, mix: IPhoneMix,
        benchGroup: MultiThreadedEventLoopGroup
    ) async throws {
        var options = BenchOptions(
            host: "127.0.0.1", port: gateway.providerPort, tls: false, scenario: scenario,
            targets: fleet.tokenLines.map {
                let fields = $0.split(separator: " ")
                return PushTarget(token: String(fields[0]), topic: String(fields[1]))
            })
        options.signer = gateway.signer
        var result = try await runBench(options, group: benchGroup, admin: ("127.0.0.1", gateway.adminPort, nil))
        print("devices: \(fleet.counters.snapshot.line)")
        result.fleet = content?.figures(fleet)
        if let figures = result.fleet {
            print("LIVE — \(duration) s of real time over real sockets:")
            print(figures.summary)
            // A few seconds say little of freshness (habits, budgets and fetches work over hours): a day of
            // the same fleet, forecast in virtual time.
            let day = ForecastScenario(
                kinds: mix.counts(devices: devices).map {
                    ForecastScenario.Kind(name: $0.name, profile: $0.profile, devices: $0.devices)
                },
                start: UnixTime(milliseconds: ForecastCommand.epochDay), hours: 24,
                publications: PublicationSchedule(everySeconds: 600), seed: iphone.seed)
            let forecast = await ForecastCommand.run(
                day, threads: ProcessInfo.processInfo.activeProcessorCount, label: nil)
            print(
                "\nFORECAST — a day of the same \(devices) iPhones in virtual time (pushgate forecast: the users' own habits, a version every 10 minutes, the gateway's default policy; \(ForecastResult.decimal(forecast.seconds)) s):"
            )
            print(forecast.report.text)
            print(forecast.costText)
            print(ForecastResult.assumptions(day.policy))
        }
        try write(result, json: json, html: html)
        if dashboard {
            print(
                "the gateway and its \(devices) devices stay up: http://127.0.0.1:\(gateway.adminPort)/dashboard (lookups: pushgate lookup … --set admin.port=\(gateway.adminPort)); Ctrl-C stops"
            )
            await interrupted()
        }

    }

    /// The fleet's freshness on the gateway's admin port: `/v1/fleet`, more `/metrics`, the dashboard's table.
    private func attach(_ fleet: SimulatedFleet, _ content: ContentScenario, to gateway: LocalGateway) {
        let metrics = FleetMetrics()
        gateway.services.attached.attach(
            .init(
                json: { (try? content.figures(fleet)?.json()).map { String(decoding: $0, as: UTF8.self) } ?? "{}" },
                metrics: { content.figures(fleet).map { metrics.text($0.report) } ?? "" }))
    }
}

/// Returns on SIGINT or SIGTERM, or when the task is cancelled (the demo's dashboard mode and
/// `simulate --duration 0` wait here).
func interrupted() async {
    for await _ in await UnixSignalsSequence(trapping: .sigint, .sigterm) { return }
}
