import AsyncHTTPClient
import ContentOrigin
import DeviceAgent
import DeviceRuntime
import JobQueue
import LoadGenerator
import NIOCore
import NIOHTTP1
import ProviderAuth
import ProviderClient
import PushModel
import Synchronization
import WallClock

/// The content side of a fleet of iPhones (`pushgate simulate` and `demo`): the content server the apps
/// fetch from — built in, or any URL that serves the same manifest — its publishing schedule, and the
/// pushes each publication's backends send to announce it (`ContentAnnouncer`, by each app's
/// `announce`); and the fleet's freshness figures sampled over the run.
public final class ContentScenario: Sendable {
    /// Where announcements are POSTed.
    public struct Provider: Sendable {
        public var host: String
        public var port: Int
        public var security: ProviderClient.Security
        public var signer: ProviderTokenSigner?

        public init(host: String, port: Int, security: ProviderClient.Security, signer: ProviderTokenSigner?) {
            self.host = host
            self.port = port
            self.security = security
            self.signer = signer
        }
    }

    public let originURL: String
    public let startedAt: UnixTime
    private let origin: OriginServer?
    private let watch: ManifestWatch?
    private let http: HTTPClient
    private let group: any EventLoopGroup
    /// The built-in server's publications, announced once the scenario runs.
    private let published = Published()
    private let outcomes = Mutex<[ContentAnnouncer.Outcome]>([])
    private let samples = Mutex<[FleetFigures.Sample]>([])
    /// One announcement at a time, as a backend sends them: a version published while the last is still
    /// being announced waits, and a newer one replaces it (the backlog stays one version however slow
    /// the gateway is; before, a loaded test machine piled up an announcement every 2 s for minutes).
    private let announcer = Mutex<(running: Bool, next: Int?)>((false, nil))

    /// A built-in content server on a free loopback port (nil `url`), or the one at `url`.
    public init(url: String?, settings: OriginServer.Settings, group: any EventLoopGroup) async throws {
        self.group = group
        startedAt = UnixTime.now()
        http = HTTPClient(eventLoopGroupProvider: .shared(group))
        if let url {
            originURL = url.hasSuffix("/") ? String(url.dropLast()) : url
            origin = nil
            watch = ManifestWatch(origin: originURL, http: http)
        } else {
            let published = self.published
            let server = OriginServer(settings: settings, group: group, clock: UnixTime.now) { version in
                published.handler.withLock { $0 }?(version.version)
            }
            do {
                try await server.start()
            } catch {
                // An HTTPClient must be shut down before it goes.
                try? await http.shutdown()
                throw error
            }
            originURL = "http://127.0.0.1:\(server.boundPort!)"
            origin = server
            watch = nil
        }
    }

    private final class Published: Sendable {
        let handler = Mutex<(@Sendable (Int) -> Void)?>(nil)
    }

    /// Versions published so far: number → publish time (ms).
    public var versions: [Int: Int64] {
        if let origin { return Dictionary(uniqueKeysWithValues: origin.versions.map { ($0.version, $0.publishedAt) }) }
        return watch?.versions ?? [:]
    }

    /// Publishes now (the built-in server, or `POST /publish` to a `pushgate origin` at the URL).
    public func publish() async {
        if let origin {
            origin.publish()
        } else {
            var request = HTTPClientRequest(url: originURL + "/publish")
            request.method = .POST
            _ = try? await http.execute(request, timeout: .seconds(10))
        }
    }

    /// Runs the scenario while `body` runs: announces each new version to the fleet's apps (when a
    /// provider API is given), publishes every `publishEvery` seconds (0: only what the server publishes
    /// itself, or `publish()` from `body`), and samples the fleet's figures every `sampleEvery` seconds.
    /// All of it in task groups of this call: when `body` ends, the schedule stops and an announcement
    /// under way is finished before it returns.
    public func running<Result>(
        fleet: SimulatedFleet, strategies: [String: AppProfile.Announcement],
        surfaces: [String: WidgetKitSurfaces] = [:],
        liveActivities: [String: ContentAnnouncer.LiveActivities] = [:], provider: Provider?, publishEvery: Double,
        sampleEvery: Double = 5, _ body: () async throws -> Result
    ) async throws -> Result {
        let send: @Sendable (Int) async -> Void = { [self] version in
            guard let provider else { return }
            let targets = fleet.tokenLines.map { line in
                let fields = line.split(separator: " ")
                return PushTarget(
                    token: String(fields[0]), topic: String(fields[1]),
                    activity: fields.count > 2 ? String(fields[2]) : nil)
            }
            let timestamp = (versions[version] ?? UnixTime.now().milliseconds) / 1000
            let plan =
                ContentAnnouncer.pushes(
                    version: version, targets: targets.filter { $0.activity == nil },
                    strategies: Dictionary(
                        uniqueKeysWithValues: strategies.map {
                            (
                                $0.key,
                                ContentAnnouncer.Strategy(
                                    silent: $0.value.sendsSilent, alert: $0.value.sendsAlert,
                                    surfaces: surfaces[$0.key] ?? [])
                            )
                        }))
                + ContentAnnouncer.liveActivityPushes(
                    version: version, timestamp: timestamp, targets: targets, apps: liveActivities)
            let outcome = await ContentAnnouncer.send(
                plan, version: version, host: provider.host, port: provider.port, security: provider.security,
                signer: provider.signer, now: UnixTime.now(), group: group)
            outcomes.withLock { $0.append(outcome) }
        }
        // Publications are heard on an event loop (the server's, the watch's); each starts an announcer
        // job (when none is running) in the group below.
        let announcements = JobQueue()
        let announce: @Sendable (Int) -> Void = { [self] version in
            guard provider != nil else { return }
            let first = announcer.withLock { state -> Bool in
                if state.running {
                    state.next = max(state.next ?? 0, version)
                    return false
                }
                state.running = true
                return true
            }
            guard first else { return }
            let offered = announcements.offer { [self] in
                var version = version
                while true {
                    await send(version)
                    let next = announcer.withLock { state -> Int? in
                        defer { state.next = nil }
                        if state.next == nil { state.running = false }
                        return state.next
                    }
                    guard let next else { return }
                    version = next
                }
            }
            // Published after the run ended: not announced (the scenario is over).
            if !offered { announcer.withLock { $0 = (false, nil) } }
        }
        published.handler.withLock { $0 = announce }
        watch?.start(every: .seconds(1), on: group.next()) { version, _ in announce(version) }
        return try await withThrowingTaskGroup(of: Void.self) { announcing in
            announcing.addTask { await withDiscardingTaskGroup { jobs in await announcements.run(in: &jobs) } }
            let outcome: Swift.Result<Result, any Error>
            do {
                outcome = .success(
                    try await runningSchedule(fleet: fleet, publishEvery: publishEvery, sampleEvery: sampleEvery, body))
            } catch {
                outcome = .failure(error)
            }
            published.handler.withLock { $0 = nil }
            watch?.stop()
            announcements.finish()
            try await announcing.waitForAll()
            return try outcome.get()
        }
    }

    /// `body`, with the publishing and sampling timers beside it until it ends.
    private func runningSchedule<Result>(
        fleet: SimulatedFleet, publishEvery: Double, sampleEvery: Double, _ body: () async throws -> Result
    ) async throws -> Result {
        try await withThrowingTaskGroup(of: Void.self) { timers in
            if publishEvery > 0 {
                timers.addTask {
                    while true {
                        try await Task.sleep(for: .milliseconds(Int64(publishEvery * 1000)))  // clock-ok: schedule
                        await self.publish()
                    }
                }
            }
            timers.addTask {
                while true {
                    try await Task.sleep(for: .milliseconds(Int64(sampleEvery * 1000)))  // clock-ok: sampling
                    self.sample(fleet)
                }
            }
            defer { timers.cancelAll() }
            return try await body()
        }
    }

    private func sample(_ fleet: SimulatedFleet) {
        guard let freshness = fleet.freshness else { return }
        let now = UnixTime.now()
        let second = Double(now.milliseconds - startedAt.milliseconds) / 1000
        let rows = freshness.report(versions: versions, now: now).rows
        samples.withLock { $0 += rows.map { FleetFigures.Sample(second: second, row: $0) } }
    }

    /// The fleet's figures now.
    public func figures(_ fleet: SimulatedFleet) -> FleetFigures? {
        guard let freshness = fleet.freshness else { return nil }
        let now = UnixTime.now()
        let versions = self.versions
        return FleetFigures(
            devices: fleet.agents.count, seconds: Double(now.milliseconds - startedAt.milliseconds) / 1000,
            report: freshness.report(versions: versions, now: now),
            timeline: samples.withLock { $0 },
            published: versions.sorted { $0.key < $1.key }.map {
                FleetFigures.Published(version: $0.key, publishedAt: $0.value)
            },
            announcements: outcomes.withLock { $0 }.sorted { $0.version < $1.version })
    }

    /// Stops the server (or the watch of one elsewhere) and the HTTP client.
    public func stop() async {
        watch?.stop()
        await origin?.stop()
        try? await http.shutdown()
    }
}
