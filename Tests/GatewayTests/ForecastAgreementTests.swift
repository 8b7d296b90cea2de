import ContentOrigin
import DeviceAgent
import DeviceHub
import DeviceRuntime
import Forecast
import Foundation
import IPhoneFleet
import Gateway
import LoadGenerator
import Logging
import NIOCore
import NIOPosix
import ProviderClient
import PushModel
import TestSupport
import Testing
import WallClock

/// The small version of `Benchmarks/forecast-validate.sh`: a real run — a gateway, a content server
/// announcing each version through the provider API, iPhones over real sockets — and the forecast of the
/// same run (the same seed and settings, its devices made at the same instant and connected when the real
/// ones did, the same publish times, the backend's fan-out and the link's latency as measured) agree: the
/// users' own opens identical, since they follow from the seed alone; the other counts within bounds a
/// wrong model breaks and the machine's load does not. The full
/// validation's goals (every count within 5 %, fresh at open within 3 points) are for runs of minutes on a
/// release build: Benchmarks/forecast-validate.sh, docs/forecast.md.
@Suite(.timeLimit(.minutes(5))) struct ForecastAgreementTests {
    @Test func aForecastOfARealRunAgreesWithIt() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        // No kind announced with alerts: every open is the users' own.
        let mix = try IPhoneMix(flag: "news=1,podcast=1")
        var kinds = mix.counts(devices: 200)
        for index in kinds.indices {
            kinds[index].profile.users.extra_opens_per_day = 86_400 / 6
            kinds[index].profile.users.session_seconds = 8
            for app in kinds[index].profile.apps.indices where kinds[index].profile.apps[app].item_bytes != nil {
                kinds[index].profile.apps[app].item_bytes = 64 * 1024
            }
        }
        let configuration = try GatewayConfiguration(RawConfiguration.load(path: nil, environment: [:], flags: []))
        // The users stop at a planned instant, so that their opens do not depend on when the run is stopped.
        let usersUntil = UnixTime.now().adding(milliseconds: 20_000)
        let (real, startedAt, connectedAt, end, itemBytes) = try await LocalGateway.run(
            topics: Array(mix.strategies.keys), settings: ["log.level=error"], group: group,
            logger: Logger(label: "test")
        ) { gateway in
            var settings = OriginServer.Settings()
            settings.itemBytes = 16 * 1024
            let content = try await ContentScenario(url: nil, settings: settings, group: group)
            let fleet = SimulatedFleet(
                host: "127.0.0.1", port: gateway.devicePort, mix: kinds, origin: content.originURL,
                enrolment: gateway.services.hub.settings.enrolmentSecret, seed: 7, usersUntil: usersUntil, group: group,
                clock: UnixTime.now)
            fleet.start()
            try await eventually("200 iPhones installed their apps", seconds: 60) { fleet.allInstalled }
            try await content.running(
                fleet: fleet, strategies: mix.strategies,
                provider: .init(
                    host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, signer: gateway.signer),
                publishEvery: 0
            ) {
                // Three versions, 5 s apart, each announced to every app; then the users' end, and every device
                // settled (nothing due before the end, no transfer running).
                let installed = UnixTime.now()
                for version in 1...3 {
                    let at = installed.adding(milliseconds: Int64(version - 1) * 5_000)
                    try await eventually("the wall clock at \(at)") { UnixTime.now() >= at }
                    await content.publish()
                    try await eventually("version \(version) announced", seconds: 30) {
                        (content.figures(fleet)?.announcements.count ?? 0) >= version
                    }
                    // Its pushes on the devices before the next is published: a loaded machine's late
                    // delivery would otherwise land two versions' pushes in one wake (the forecast, given
                    // only the publication times and fan-outs, cannot know of that lag).
                    try await eventually("version \(version) acknowledged", seconds: 30) {
                        gateway.services.hub.outstandingCount == 0
                    }
                }
                try await eventually("the users' end", seconds: 60) { UnixTime.now() >= usersUntil }
                // Every push decided for delivery acknowledged (the announcements were answered above).
                try await eventually("every delivery acknowledged", seconds: 30) {
                    gateway.services.hub.outstandingCount == 0
                }
                try await eventually("every iPhone settled", seconds: 30) { try await fleet.settled() }
            }
            let end = UnixTime.now()
            let real = try #require(content.figures(fleet))
            let freshness = try #require(fleet.freshness)
            let connectedAt = fleet.connectedAt
            await fleet.stop()
            await content.stop()
            return (real, freshness.startedAt, connectedAt, end, settings.itemBytes)
        }
        try await group.shutdownGracefully()

        for outcome in real.announcements {
            #expect(outcome.accepted == outcome.silent + outcome.alerts && outcome.refused.isEmpty, "\(outcome)")
        }
        var publications = PublicationSchedule(everySeconds: 0)
        publications.times = real.published.map(\.publishedAt)
        var scenario = ForecastScenario(
            kinds: kinds.map { ForecastScenario.Kind(name: $0.name, profile: $0.profile, devices: $0.devices) },
            start: startedAt, hours: Double(end.milliseconds - startedAt.milliseconds) / 3_600_000,
            publications: publications, policy: configuration.policy,
            keepAliveSeconds: configuration.hub.keepAliveSeconds,
            link: LinkModel(
                bytesPerSecond: 0,
                latencyMilliseconds: Int64(((real.report.rows.last?.transferP50Seconds ?? 0) * 1000).rounded()),
                latencyP90Milliseconds: Int64(((real.report.rows.last?.transferP90Seconds ?? 0) * 1000).rounded())),
            itemBytes: itemBytes, seed: 7)
        scenario.connectedAt = try connectedAt.map { try #require($0).milliseconds }
        scenario.usersUntil = usersUntil
        // The backend's fan-out as the real run had it (from each publication to its last answer), and its
        // transfers' median and 90th percentile as the link's latency: on a loaded machine the slower ones
        // keep wakes running into the next version's push (the CI run that failed with silent wakes 198
        // against 273 had its forecast's transfers all at the median).
        let published = Dictionary(uniqueKeysWithValues: real.published.map { ($0.version, $0.publishedAt) })
        let spreads = real.announcements.sorted { $0.version < $1.version }.map {
            Double($0.sentAt + $0.milliseconds - (published[$0.version] ?? $0.sentAt))
        }
        scenario.announcementSecondsEach = spreads.map { $0 / 1000 }
        let forecast = await Forecast.run(scenario)
        // Both tables in the log, for a failure's reader.
        print("The real run:\n\(real.report.text)\nIts forecast:\n\(forecast.report.text)")

        let realRows = Dictionary(uniqueKeysWithValues: real.report.rows.map { ($0.profile, $0) })
        let forecastRows = Dictionary(uniqueKeysWithValues: forecast.report.rows.map { ($0.profile, $0) })
        #expect(Set(realRows.keys) == ["news", "podcast", "all"])
        #expect(Set(forecastRows.keys) == Set(realRows.keys))
        #expect((realRows["all"]?.opens ?? 0) > 150, "a run with something to compare")
        for (profile, row) in realRows {
            let other = try #require(forecastRows[profile])
            // Exact: the users' own opens follow from the seed, the start and the connections alone.
            #expect(row.opens == other.opens, "\(profile): the users' own opens")
            // The rest moves with the machine's load: a push, a download or an open a few hundred
            // milliseconds later (the rest of the suite shares the two cores) changes which of a wake's
            // download and an open's fetch ends first. Quiet, the fleet's fresh at open agreed within 2
            // points; beside the whole suite and two spinning shells, within 7, and silent wakes within 8 %
            // (docs/forecast.md). So: bounds that a wrong model
            // breaks (one of the three versions not announced, a device that never connects), not the full validation's
            // goals, which Benchmarks/forecast-validate.sh checks on a release build over minutes.
            #expect(within(0.25, row.silentWakes, other.silentWakes), "\(profile): silent wakes")
            #expect(within(0.20, row.foregroundTransfers, other.foregroundTransfers), "\(profile): transfers")
            #expect(
                within(0.50, row.opensWithoutContent, other.opensWithoutContent), "\(profile): opens without content")
            let points = abs((row.freshAtOpen ?? 0) - (other.freshAtOpen ?? 0)) * 100
            #expect(points <= 15, "\(profile): fresh at open \(row.freshAtOpen ?? 0) vs \(other.freshAtOpen ?? 0)")
        }
    }

    /// `a` and `b` differ by at most `share` of the larger (or by one).
    func within(_ share: Double, _ a: Int, _ b: Int) -> Bool {
        Double(abs(a - b)) <= max(1, share * Double(max(a, b)))
    }
}
