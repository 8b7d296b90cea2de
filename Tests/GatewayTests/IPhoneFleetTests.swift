import AdminAPI
import AsyncHTTPClient
import ContentOrigin
import DeviceAgent
import DeviceHub
import DeviceRuntime
import Foundation
import Gateway
import IPhoneFleet
import LoadGenerator
import Logging
import NIOCore
import NIOPosix
import ProviderClient
import PushModel
import PushPolicy
import PushStore
import Synchronization
import Testing
import TestSupport
import WallClock
import Yams

/// The kinds of iPhone shipped in Config/iphone, the `--iphones` mix, and a fleet of a few hundred
/// iPhones against a real gateway and content server.
@Suite(.timeLimit(.minutes(5))) struct IPhoneFleetTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Each shipped file is valid, says what it models, and is compiled into the binary (a new one needs
    /// its link in Sources/Simulator/IPhoneFleet/iphone and its name in Package.swift's resources).
    @Test func theShippedIPhonesAreValidAndEmbedded() throws {
        let directory = Self.repository.appendingPathComponent("Config/iphone")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".yaml") }
        #expect(Set(files.map { String($0.dropLast(5)) }) == Set(EmbeddedIPhones.files.keys))
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            #expect(EmbeddedIPhones.files[String(file.dropLast(5))] == text, "\(file) differs from its embedded copy")
            #expect(text.hasPrefix("# "), "\(file) should say what it models")
            let profile = try YAMLDecoder().decode(IPhoneProfile.self, from: text)
            #expect(profile.problem() == nil, "\(file)")
        }
    }

    @Test func theMixSharesDevicesByWeight() throws {
        let mix = try IPhoneMix(flag: IPhoneMix.defaultFlag)
        #expect(mix.counts(devices: 1000).map(\.devices) == [400, 300, 200, 100])
        #expect(mix.counts(devices: 7).map(\.devices).reduce(0, +) == 7)
        #expect(mix.counts(devices: 1).map(\.devices) == [1])
        #expect(mix.strategies["com.example.chat"] == .alert)
        #expect(try IPhoneMix(flag: "news").kinds.map(\.name) == ["news"])
    }

    @Test func mixMistakesNameTheFlag() throws {
        func message(_ flag: String) -> String {
            do {
                _ = try IPhoneMix(flag: flag)
                return ""
            } catch { return "\(error)" }
        }
        #expect(message("news=0").contains("--iphones: expected name=weight"))
        #expect(message("newz=1").contains("no iPhone profile 'newz'"))
        #expect(message("news,news").contains("'news' twice"))
        #expect(message("/nonexistent/x.yaml").contains("no file at /nonexistent/x.yaml"))
        let clash = FileManager.default.temporaryDirectory.appendingPathComponent("clash-\(UUID()).yaml")
        try "apps:\n  - bundle_id: com.example.news\n    announce: alert\n".write(
            to: clash, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: clash) }
        #expect(message("news,\(clash.path)").contains("com.example.news is announced as silent in 'news'"))
    }

    /// `ios` must be a generation the rules are written for; the file and the key are named.
    @Test func anIOSVersionThatIsNotModelledIsRefusedNamingTheFileAndKey() throws {
        for version in [5, 8, 99] {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("ios\(version)-\(UUID()).yaml")
            try "ios: \(version)\napps:\n  - bundle_id: com.example.x\n".write(
                to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            var message = ""
            do { _ = try IPhoneMix(flag: file.path) } catch { message = "\(error)" }
            #expect(
                message.contains("--iphones \(file.path): line 1: ios: expected one of 6, 7, 13, 17, 18"), "\(message)")
            #expect(message.contains("got \(version)"))
        }
    }

    /// Users with no habits and no extra opens: refused naming both ways out, unless `--opens-per-hour`
    /// gives them opens.
    @Test func usersThatNeverOpenAreAcceptedWhenOpensPerHourOpensThem() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("idle-\(UUID()).yaml")
        try "apps:\n  - bundle_id: com.example.idle\nusers:\n  habit_hours: []\n  extra_opens_per_day: 0\n".write(
            to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let mix = try IPhoneMix(flag: file.path)
        do {
            _ = try mix.counts(devices: 10, opensPerHour: 0)
            Issue.record("a fleet that never opens its app was accepted")
        } catch {
            #expect("\(error)".contains("its users never open the app"))
            #expect("\(error)".contains("--opens-per-hour"))
        }
        let counts = try mix.counts(devices: 10, opensPerHour: 2)
        #expect(counts.first?.profile.users.extra_opens_per_day == 48)
    }

    /// A content server other than the built-in one: its versions are learnt from its manifest, and only
    /// those published after the watch began are announced.
    @Test func theManifestWatchLearnsVersionsAndAnnouncesOnlyNewOnes() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let origin = OriginServer(settings: .init(), group: group, clock: UnixTime.now)
        try await origin.start()
        origin.publish()
        let http = HTTPClient(eventLoopGroupProvider: .shared(group))
        let watch = ManifestWatch(origin: "http://127.0.0.1:\(origin.boundPort!)", http: http)
        let announced = Mutex<[Int]>([])
        watch.start(every: .milliseconds(50), on: group.next()) { version, _ in
            announced.withLock { $0.append(version) }
        }
        try await eventually("the first read") { watch.versions.keys.contains(1) }
        let second = origin.publish()
        try await eventually("the second version announced") { announced.withLock { $0 } == [2] }
        #expect(watch.versions[2] == second.publishedAt)
        watch.stop()
        try await http.shutdown()
        await origin.stop()
        try await group.shutdownGracefully()
    }

    /// 300 iPhones of the four shipped kinds (their users opening about once a second, for a short run),
    /// a content server publishing every 2 s, each version announced through the gateway: every open is
    /// counted once, and the figures add up across kinds, on the admin port too. On the memory store: the
    /// figures do not depend on it, and with the suite's other tests on the disk an announcement's 600
    /// durable POSTs (64 at a time, each waiting for its commit) took 16 s where they take 1 (commits of up
    /// to 2.5 s), which once ran the wait below out under a cold build's load.
    @Test func aFleetOfAFewHundredIPhonesReportsFreshnessThatAddsUp() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let mix = try IPhoneMix(flag: IPhoneMix.defaultFlag)
        var kinds = mix.counts(devices: 300)
        for index in kinds.indices {
            kinds[index].profile.users.extra_opens_per_day = 86_400
            kinds[index].profile.users.session_seconds = 2
            for app in kinds[index].profile.apps.indices where kinds[index].profile.apps[app].item_bytes != nil {
                kinds[index].profile.apps[app].item_bytes = 64 * 1024
            }
        }
        try await LocalGateway.run(
            topics: Array(mix.strategies.keys), settings: ["log.level=error", "store.backend=memory"], group: group,
            logger: Logger(label: "test")
        ) { gateway in
            var settings = OriginServer.Settings()
            settings.itemBytes = 16 * 1024
            let content = try await ContentScenario(url: nil, settings: settings, group: group)
            let fleet = SimulatedFleet(
                host: "127.0.0.1", port: gateway.devicePort, mix: kinds, origin: content.originURL,
                enrolment: gateway.services.hub.settings.enrolmentSecret, seed: 7, group: group, clock: UnixTime.now)
            let metrics = FleetMetrics()
            gateway.services.attached.attach(
                .init(
                    json: { (try? content.figures(fleet)?.json()).map { String(decoding: $0, as: UTF8.self) } ?? "{}" },
                    metrics: { content.figures(fleet).map { metrics.text($0.report) } ?? "" }))
            let freshness = try #require(fleet.freshness)
            let state = {
                "\(fleet.installedCount) of 300 installed; \(fleet.counters.snapshot.line); the store's writer: "
                    + "\(gateway.services.store.writer.figures)"
            }
            // As `pushgate demo` runs it: installed, then the first version, one every 2 s.
            try await FleetRun.run(
                fleet,
                content: .init(
                    scenario: content, mix: mix, channels: [:],
                    provider: .init(
                        host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, signer: gateway.signer),
                    publishEvery: 2, sampleEvery: 1),
                installSeconds: 60
            ) {
                try await eventually(
                    "600 opens, three versions announced, a watchdog termination", seconds: 60, state: state
                ) {
                    let figures = try #require(content.figures(fleet))
                    let misbehaving = figures.report.rows.first { $0.profile == "misbehaving" }
                    return freshness.opens >= 600 && figures.announcements.count >= 3
                        && (misbehaving?.terminations["watchdog"] ?? 0) > 0
                }
                let (status, body) = try await AdminClient.get(
                    host: "127.0.0.1", port: gateway.adminPort, path: "/v1/fleet", token: nil)
                #expect(status == 200 && body.contains(#""profile" : "news""#))
                let scrape = try await AdminClient.get(
                    host: "127.0.0.1", port: gateway.adminPort, path: "/metrics", token: nil)
                #expect(scrape.body.contains(#"pushgate_fleet_opens_total{profile="chat"}"#))
                #expect(scrape.body.contains("pushgate_provider_requests_total"))
            }
            let figures = try #require(content.figures(fleet))
            let rows = figures.report.rows
            #expect(rows.map(\.profile) == ["chat", "misbehaving", "news", "podcast", "all"])
            let all = try #require(rows.last)
            let each = rows.dropLast()
            // Every open counted once: in one kind's row, and in "all".
            #expect(all.opens == freshness.opens)
            #expect(each.map(\.opens).reduce(0, +) == all.opens)
            #expect(each.map(\.freshOpens).reduce(0, +) == all.freshOpens)
            #expect(each.map(\.opensWithoutContent).reduce(0, +) == all.opensWithoutContent)
            #expect(each.map(\.silentWakes).reduce(0, +) == all.silentWakes)
            #expect(each.map(\.relaunches).reduce(0, +) == all.relaunches)
            let terminations: [Int] = each.map { row in row.terminations.values.reduce(0, +) }
            #expect(terminations.reduce(0, +) == all.terminations.values.reduce(0, +))
            #expect(each.map(\.foregroundBytes).reduce(0, +) == all.foregroundBytes)
            for row in rows {
                #expect(row.opens > 0, "\(row.profile)")
                #expect(row.freshOpens <= row.opens && row.opensWithoutContent <= row.opens - row.freshOpens + 1)
                #expect(row.freshAtOpen == Double(row.freshOpens) / Double(row.opens))
                #expect(row.silentWakesWithNewContent <= row.silentWakes)
            }
            // The strategies: chat's backend sends alerts only, so its apps have no silent wake of their own.
            #expect(rows.first { $0.profile == "chat" }?.silentWakes == 0)
            #expect(rows.first { $0.profile == "news" }?.strategy == "silent, fetch minimum")
            // Each announcement reached every token of an announcing app, all accepted.
            let silentTokens = kinds.filter { $0.profile.apps[0].announce.sendsSilent }.map(\.devices).reduce(0, +)
            let alertTokens = kinds.filter { $0.profile.apps[0].announce.sendsAlert }.map(\.devices).reduce(0, +)
            for outcome in figures.announcements {
                #expect(outcome.silent == silentTokens && outcome.alerts == alertTokens, "\(outcome)")
                #expect(outcome.accepted == outcome.silent + outcome.alerts && outcome.refused.isEmpty, "\(outcome)")
            }
            #expect(figures.published.count >= 3)
            #expect(!figures.timeline.isEmpty)

            gateway.services.attached.detach()
        }
        try await group.shutdownGracefully()
    }

    /// Sports iPhones on a real gateway: their two Live Activities start (one on a channel made through
    /// the channel API, one with its own update token; the app says it has frequent pushes), each
    /// version is broadcast once on the channel and pushed to every token activity, the token updates
    /// spend the (frequent) budget of two and the rest are held, and the ledger counts what the users saw.
    @Test func sportsIPhonesFollowTheirLiveActivities() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let mix = try IPhoneMix(flag: "sports=1")
        var kinds = mix.counts(devices: 10)
        kinds[0].profile.users.extra_opens_per_day = 86_400
        kinds[0].profile.users.session_seconds = 2
        let bundle = "com.example.scores"
        try await LocalGateway.run(
            topics: [bundle],
            settings: [
                "log.level=error", "policy.live_activity.frequent_budget.capacity=2",
                "policy.live_activity.frequent_budget.refill_seconds=86400",
            ], group: group, logger: Logger(label: "test")
        ) { gateway in
            let channels = try await FleetChannels.create(
                for: mix, url: "http://127.0.0.1:\(try #require(gateway.channelPorts.last))", flag: "test",
                signer: gateway.signer, group: group)
            #expect(channels[bundle]?.count == 1)
            var settings = OriginServer.Settings()
            settings.itemBytes = 4 * 1024
            let content = try await ContentScenario(url: nil, settings: settings, group: group)
            let fleet = SimulatedFleet(
                endpoints: [.init(host: "127.0.0.1", port: gateway.devicePort)], mix: kinds,
                origin: content.originURL, enrolment: gateway.services.hub.settings.enrolmentSecret, seed: 7,
                channels: channels, group: group, clock: UnixTime.now)
            func shown() async throws -> [[Int?]] {
                var all: [[Int?]] = []
                for agent in fleet.agents {
                    all.append(try await agent.runtime?.state(of: bundle).get()?.activityVersions ?? [])
                }
                return all
            }
            // Installed (every iPhone subscribed and has its activity's update token), then the first
            // version, one a second.
            try await FleetRun.run(
                fleet,
                content: .init(
                    scenario: content, mix: mix, channels: channels,
                    provider: .init(
                        host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, signer: gateway.signer),
                    publishEvery: 1, sampleEvery: 1),
                installSeconds: 30
            ) {
                #expect(
                    fleet.tokenLines.filter { $0.hasSuffix("update:" + AppProfile.keptActivityID(bundle, 1)) }.count
                        == 10)
                try await eventually("three versions announced, every channel activity showing the third") {
                    guard (content.figures(fleet)?.announcements.count ?? 0) >= 3 else { return false }
                    return try await shown().allSatisfy { ($0.first ?? nil) ?? 0 >= 3 }
                }
            }
            let figures = try #require(content.figures(fleet))
            for outcome in figures.announcements {
                #expect(outcome.broadcasts == 1 && outcome.liveActivityUpdates == 10, "\(outcome)")
                #expect(outcome.accepted == 11 && outcome.refused.isEmpty, "\(outcome)")
            }
            // The token activities: two updates each on budget, every later one held.
            let policy = try #require(await AdminClient.counters(port: gateway.adminPort)).policy
            let sent = figures.announcements.map(\.liveActivityUpdates).reduce(0, +)
            #expect(policy.liveActivityOnBudget == 20)
            #expect(policy.liveActivityOverBudget == sent - 20)
            let row = try #require(figures.report.rows.first)
            #expect(row.activityViews > 0)
            #expect(row.activityUpdates >= 10 * 3 + 20)
            #expect(figures.summary.contains("Live Activity updates"))
        }
        try await group.shutdownGracefully()
    }
}
