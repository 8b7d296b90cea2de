import IPhoneFleet
import ArgumentParser
import DeviceAgent
import DeviceProtocol
import Foundation
import Gateway
import GatewayNodes
import GatewayFiles
import LoadGenerator
import NIOCore
import NIOPosix
import ProviderClient
import PushModel
import Synchronization

struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract:
            "Run simulated iPhones against a gateway's device port, and report how fresh their content was at every open.",
        discussion: """
            Each device plays iOS's background rules (docs/device-runtime.md) for a kind of iPhone in \
            Config/iphone, with its apps and its users, and fetches real content from a content server (a \
            built-in one, or --origin). Versions are published every --publish-every seconds; with --provider, \
            each is announced with the pushes each app's backend sends. --profile runs plain agents instead, \
            which answer wakes as a profile in Config/profiles says.
            """)

    @Option(help: "Device port host.")
    var host = "127.0.0.1"

    @Option(help: "Device port (plain WebSocket).")
    var port = 2199

    @Option(
        help: ArgumentHelp(
            "Device ports of several nodes, comma-separated (instead of --host/--port): devices are spread over them, and a device whose node goes away moves to the next.",
            valueName: "host:port,…"))
    var endpoints: String?

    @Flag(help: "Connect to every node of the fleet `pushgate fleet up` started with --data-dir (its device ports).")
    var fleet = false

    @Option(help: "How many devices.")
    var devices = 100

    @OptionGroup var iphone: IPhoneOptions

    @Option(
        help: ArgumentHelp(
            "Where announcements are POSTed: the gateway's provider API (http://host:port for h2c, https://host:port for TLS); absent: versions are published but not announced.",
            valueName: "url"))
    var provider: String?

    @Option(help: "The .p8 key that signs provider tokens for --provider.")
    var key: String?

    @Option(
        help: ArgumentHelp(
            "iPhones whose Live Activities follow broadcast channels (a kind's `channels`): the channel-management API that makes them (http://host:port or https://…); absent: http://<--provider's host>:2196.",
            valueName: "url"))
    var channelAPI: String?

    @Option(help: "Team id (the token's iss).")
    var teamId: String?

    @Option(help: "Key id (the token's kid).")
    var keyId: String?

    @Option(help: "Serve the fleet's figures on this loopback port: /metrics (Prometheus) and /v1/fleet (JSON).")
    var metricsPort: Int?

    @Option(help: "Write the fleet's figures as JSON here at the end.")
    var json: String?

    @Option(help: "Write an HTML report of the fleet's figures here at the end.")
    var html: String?

    @Option(
        help:
            "Plain agents instead of iPhones: a behaviour profile in Config/profiles (default, misbehaving) or a YAML file."
    )
    var profile: String?

    @Option(help: "Plain agents only: bundle ids every device installs (comma-separated).")
    var apps: String?

    @Option(
        help: ArgumentHelp(
            "Plain agents only: broadcast channels (comma-separated apns-channel-ids of the first app's); every device starts a Live Activity on each (subscribed before the tokens file is written), which the channel's broadcasts update.",
            valueName: "ids"))
    var channels: String?

    @Option(help: "Where to write 'token bundle_id' lines once every device has its tokens.")
    var tokensFile = "simulated-tokens.txt"

    @Option(help: "Stop after this many seconds (0: run until interrupted).")
    var duration: Int = 0

    @Option(
        help: ArgumentHelp(
            "How long every device may take to connect and install its apps; then the command fails.",
            valueName: "seconds"))
    var connectTimeout = SimulateCommand.connectSeconds

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
        guard duration >= 0 else { throw ValidationError("--duration must not be negative") }
        guard connectTimeout > 0 else { throw ValidationError("--connect-timeout must be at least 1") }
        try iphone.check()
        if apps != nil, profile == nil {
            throw ValidationError("--apps is for plain agents (--profile); an iPhone's apps come from its profile")
        }
        if channels != nil, profile == nil {
            throw ValidationError("--channels is for plain agents (--profile)")
        }
        for channel in channelIDs where ChannelID(channel) == nil {
            throw ValidationError("--channels: '\(channel)' is not a channel id (base64, as apns-channel-id)")
        }
        if let metricsPort, !(0...65535).contains(metricsPort) {
            throw ValidationError("--metrics-port: expected 0 to 65535, got \(metricsPort)")
        }
        if provider == nil, key != nil { throw ValidationError("--key needs --provider (where to announce)") }
        if fleet, endpoints != nil {
            throw ValidationError("--fleet and --endpoints both name the device ports: give one")
        }
        _ = try deviceEndpoints()
    }

    /// Where the devices connect: --endpoints, the fleet's nodes (--fleet), or --host and --port.
    func deviceEndpoints() throws -> [DeviceAgent.Endpoint] {
        if let endpoints { return try parseEndpoints(endpoints, flag: "--endpoints") }
        guard fleet else { return [.init(host: host, port: port)] }
        let base = NodePlan.absolute(dataDir)
        guard let state = try NodeRecord.read(dataDirectory: base) else {
            throw ValidationError(
                "--fleet: no fleet is recorded in \(NodeRecord.path(dataDirectory: base)) (pushgate fleet up, with the same --data-dir)"
            )
        }
        let ports = state.nodes.map(\.devicesPort).filter { $0 != 0 }
        guard !ports.isEmpty else { throw ValidationError("--fleet: the fleet's nodes have no plain device port") }
        return ports.map { .init(host: "127.0.0.1", port: $0) }
    }

    func run() async throws {
        guard let enrolment = enrolmentSecret ?? EnrolmentSecret.read(dataDirectory: dataDir) else {
            throw ValidationError(
                "no enrolment secret: give --enrolment-secret (the gateway's devices.enrolment_secret), or --data-dir where the gateway keeps \(EnrolmentSecret.fileName)"
            )
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        if let profile {
            try await runPlain(profile: try loadProfile(profile), enrolment: enrolment, group: group)
        } else {
            try await runIPhones(enrolment: enrolment, group: group)
        }
        try await group.shutdownGracefully()
    }

    private func runPlain(profile: AgentProfile, enrolment: String, group: MultiThreadedEventLoopGroup) async throws {
        let bundles = (apps ?? "com.example.app").split(separator: ",").map {
            String($0).trimmingCharacters(in: .whitespaces)
        }
        let fleet = SimulatedFleet(
            endpoints: try deviceEndpoints(), devices: devices, apps: bundles, profile: profile, enrolment: enrolment,
            seed: iphone.seed, group: group)
        fleet.start()
        do {
            try await connect(fleet)
            try await subscribe(fleet, bundleID: bundles[0])
            try await runUntilDone(fleet) { _ in "" }
        } catch {
            print(fleet.counters.snapshot.line)
            await fleet.stop()
            throw error
        }
        print(fleet.counters.snapshot.line)
        await fleet.stop()
    }

    private var channelIDs: [String] {
        (channels ?? "").split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// Every device's activity subscribes to the --channels; waits (--connect-timeout) until each is stored.
    private func subscribe(_ fleet: SimulatedFleet, bundleID: String) async throws {
        let channels = channelIDs
        guard !channels.isEmpty else { return }
        for agent in fleet.agents {
            for channel in channels {
                agent.startLiveActivity(bundleID: bundleID, attributesType: "BroadcastAttributes", channelID: channel)
            }
        }
        let deadline = ContinuousClock.now + .seconds(connectTimeout)
        while fleet.agents.contains(where: { $0.subscribedChannels.count < channels.count }) {
            guard ContinuousClock.now < deadline else {
                let missing = fleet.agents.count { $0.subscribedChannels.count < channels.count }
                throw CommandFailure(
                    "\(missing) devices' subscriptions to --channels were not stored in \(connectTimeout) s: is each a live channel of \(bundleID) (the channel-management API's all-channels)?"
                )
            }
            try await Task.sleep(for: .milliseconds(200))  // clock-ok: polling the fleet, bounded
        }
        print("\(fleet.agents.count) devices subscribed to \(channels.count) channel(s)")
    }

    /// How long a fleet may take to connect and install its apps (the demo's, and --connect-timeout's default).
    static let connectSeconds = 120

    /// Waits for every device to connect and install its apps; a refusal or a timeout is an error that
    /// says what to fix.
    private func connect(_ fleet: SimulatedFleet) async throws {
        do {
            try await fleet.waitUntilInstalled(within: connectTimeout)
        } catch let problem as FleetError {
            throw CommandFailure(explained(problem))
        }
    }

    private func explained(_ problem: FleetError) -> String {
        let first = (try? deviceEndpoints().first) ?? .init(host: host, port: port)
        return problem.explained(host: first.host, port: first.port, dataDir: enrolmentSecret == nil ? dataDir : nil)
    }

    private func runIPhones(enrolment: String, group: MultiThreadedEventLoopGroup) async throws {
        let target = try provider.map { try parseURL($0, flag: "--provider") }
        let signer = try loadSigner(key: key, teamID: teamId, keyID: keyId)
        // Channels are made only where versions are announced (a broadcast needs the provider).
        let channelAPI = self.channelAPI ?? target.map { "http://\($0.host):2196" }
        let (scenario, fleet, mix, channels) = try await iphone.start(
            devices: devices, endpoints: try deviceEndpoints(), enrolment: enrolment,
            opensPerHour: iphone.opensPerHour ?? 0,
            channels: channelAPI.map { url in
                { mix in
                    try await asyncFailing {
                        try await FleetChannels.create(
                            for: mix, url: url,
                            flag: self.channelAPI == nil
                                ? "--channel-api (absent: --provider's host on 2196)" : "--channel-api",
                            signer: signer, group: group)
                    }
                }
            }, group: group)
        for (bundleID, ids) in channels.sorted(by: { $0.key < $1.key }) {
            print("\(bundleID): Live Activities on channel\(ids.count == 1 ? "" : "s") \(ids.joined(separator: ", "))")
        }
        print("content: \(scenario.originURL)/manifest")
        if target == nil { print("no --provider: versions are published but not announced with pushes") }
        let metrics = FleetMetrics()
        var endpoint: FleetEndpoint?
        if let metricsPort {
            do {
                endpoint = try await FleetEndpoint(host: "127.0.0.1", port: metricsPort, group: group) { path in
                    FleetEndpoint.answer(
                        path: path,
                        metrics: { scenario.figures(fleet).map { metrics.text($0.report) } ?? "" },
                        json: {
                            (try? scenario.figures(fleet)?.json()).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
                        })
                }
            } catch {
                await fleet.stop()
                await scenario.stop()
                throw ValidationError(
                    "--metrics-port \(metricsPort): cannot listen on 127.0.0.1:\(metricsPort): \(error)")
            }
        }
        if let port = endpoint?.port { print("fleet figures: http://127.0.0.1:\(port)/metrics and /v1/fleet") }
        // The first announcement should reach every device: the run waits for the installs. The built-in
        // server's first version follows at once (as in the demo); a server of the team's own publishes
        // as it does.
        let content = FleetRun.Content(
            scenario: scenario, mix: mix, channels: channels,
            provider: target.map {
                ContentScenario.Provider(
                    host: $0.host, port: $0.port,
                    security: $0.tls ? .tls(trustRoots: [], alpn: ["h2"], clientCertificate: nil) : .cleartext,
                    signer: signer)
            }, publishEvery: iphone.publishEvery ?? 300, publishFirst: iphone.origin == nil)
        var counters = ""
        do {
            try await FleetRun.run(
                fleet, content: content, installSeconds: connectTimeout,
                stopping: { counters = $0.counters.snapshot.line }
            ) {
                try await runUntilDone(fleet) { _ in "  opens \(fleet.freshness?.opens ?? 0)" }
            }
        } catch {
            await endpoint?.stop()
            print(counters)
            if let problem = error as? FleetError { throw CommandFailure(explained(problem)) }
            throw error
        }
        await endpoint?.stop()
        print(counters)
        if let figures = scenario.figures(fleet) {
            print(figures.summary)
            try write(figures, json: json, html: html)
        }
    }

    /// Writes the tokens file once every device has its tokens, shows progress on a terminal, and returns
    /// after --duration (or on Ctrl-C).
    private func runUntilDone(
        _ fleet: SimulatedFleet, more: @escaping @Sendable (SimulatedFleet) -> String
    ) async throws {
        // Whichever ends first: the run (after --duration, or a failure), or Ctrl-C / SIGTERM.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await interrupted() }
            group.addTask { try await self.watch(fleet, more: more) }
            try await group.next()
            group.cancelAll()
        }
    }

    private func watch(_ fleet: SimulatedFleet, more: @escaping @Sendable (SimulatedFleet) -> String) async throws {
        let start = ContinuousClock.now
        var wroteTokens = false
        var activityTokensWritten = 0
        let interactive = isatty(STDOUT_FILENO) != 0
        while duration == 0 || ContinuousClock.now - start < .seconds(duration) {
            try await Task.sleep(for: .seconds(1))
            // A gateway that refuses the fleet later (its secret changed, say): said, not retried for ever.
            do { try fleet.checkRefusals() } catch let problem as FleetError {
                throw CommandFailure(explained(problem))
            }
            // Once every device has its tokens; again whenever Live Activities got new ones (an activity
            // started by a push has an update token a backend updates it with).
            let activityTokens = wroteTokens ? fleet.activityTokenCount : 0
            if (!wroteTokens && fleet.allInstalled) || (wroteTokens && activityTokens != activityTokensWritten) {
                let lines = fleet.tokenLines
                try (lines.joined(separator: "\n") + "\n").write(toFile: tokensFile, atomically: true, encoding: .utf8)
                if !wroteTokens {
                    print((interactive ? "\u{1B}[2K\r" : "") + "\(lines.count) tokens written to \(tokensFile)")
                }
                wroteTokens = true
                activityTokensWritten = fleet.activityTokenCount
            }
            if interactive {
                print("\u{1B}[2K\r\(fleet.counters.snapshot.line)\(more(fleet))", terminator: "")
                fflush(nil)
            }
        }
        if interactive { print() }
    }
}

/// Reads a behaviour profile: Config/profiles/NAME.yaml, or a path.
func loadProfile(_ name: String) throws -> AgentProfile {
    let loaded = try loadNamedYAML(
        name, directory: "Config/profiles", flag: "--profile", embedded: ("default", AgentProfile()))
    if let problem = loaded.problem() { throw ValidationError("--profile \(name): \(problem)") }
    return loaded
}
