import DeviceAgent
import DeviceRuntime
import LoadGenerator

/// A fleet of iPhones run with its content, as `pushgate simulate`, `demo` and the tests run it: the
/// fleet started; every device connected with its apps installed (within `installSeconds`, else a
/// `FleetError`, as when the gateway refuses the fleet); the content server publishing and each
/// publication announced through the provider API (`ContentScenario.running`), the first version
/// published once every app can be told of it; `body`; then the fleet and the content stopped, however
/// it ended.
public enum FleetRun {
    /// What the content side does while the fleet runs.
    public struct Content: Sendable {
        public var scenario: ContentScenario
        public var mix: IPhoneMix
        /// Each app's channels (their broadcasts announce versions to Live Activities).
        public var channels: [String: [String]]
        /// Where announcements are POSTed (nil: versions are published, not announced).
        public var provider: ContentScenario.Provider?
        public var publishEvery: Double
        public var sampleEvery: Double
        /// Whether the built-in server publishes its first version as soon as every app is installed (a
        /// server of the team's own publishes as it does).
        public var publishFirst: Bool

        public init(
            scenario: ContentScenario, mix: IPhoneMix, channels: [String: [String]],
            provider: ContentScenario.Provider?, publishEvery: Double, sampleEvery: Double = 5,
            publishFirst: Bool = true
        ) {
            self.scenario = scenario
            self.mix = mix
            self.channels = channels
            self.provider = provider
            self.publishEvery = publishEvery
            self.sampleEvery = sampleEvery
            self.publishFirst = publishFirst
        }
    }

    /// Runs `fleet` (with `content`, if any) around `body`. `stopping` sees the fleet just before it
    /// stops (its counters as the run left them), whether `body` ended or anything threw.
    public static func run<Result>(
        _ fleet: SimulatedFleet, content: Content?, installSeconds: Int,
        stopping: (SimulatedFleet) -> Void = { _ in }, _ body: () async throws -> Result
    ) async throws -> Result {
        fleet.start()
        let outcome: Swift.Result<Result, any Error>
        do {
            try await fleet.waitUntilInstalled(within: installSeconds)
            if let content {
                outcome = .success(
                    try await content.scenario.running(
                        fleet: fleet, strategies: content.mix.strategies, surfaces: content.mix.surfaces,
                        liveActivities: FleetChannels.announcements(of: content.mix, channels: content.channels),
                        provider: content.provider, publishEvery: content.publishEvery,
                        sampleEvery: content.sampleEvery
                    ) {
                        if content.publishFirst { await content.scenario.publish() }
                        return try await body()
                    })
            } else {
                outcome = .success(try await body())
            }
        } catch {
            outcome = .failure(error)
        }
        stopping(fleet)
        await fleet.stop()
        await content?.scenario.stop()
        return try outcome.get()
    }
}
