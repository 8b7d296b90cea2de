import AdminAPI
import DeviceAgent
import DeviceHub
import Foundation
import Gateway
import Logging
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import PushPolicy
import TestSupport
import Testing

@testable import LoadGenerator

/// A short bench against a real gateway on loopback with simulated devices: the figures add up.
@Suite(.timeLimit(.minutes(5))) struct EndToEndBenchTests {
    /// Live Activities through the bench: simulated apps with a Live Activity type get push-to-start
    /// tokens; `live-start` starts an activity on each, whose update tokens join the tokens; `live-update`
    /// updates them, within their budgets.
    @Test func aBenchStartsAndUpdatesLiveActivities() async throws {
        let topic = "com.example.scores"
        try await withFleet(topic: topic, devices: 5, { $0.live_activity_types = ["GameAttributes"] }) {
            gateway, fleet, group in
            func targets() throws -> [PushTarget] {
                try PushTarget.parse(fleet.tokenLines.joined(separator: "\n"), defaultTopic: nil)
            }
            #expect(try targets().filter { $0.activity == "start:GameAttributes" }.count == 5)

            func bench(_ mix: String, count: Int) async throws -> BenchResult {
                let scenario = Scenario(
                    rate: 0, duration_seconds: 10, count: count, connections: 1, streams: 1,
                    mix: try Scenario.mix(flag: mix))
                var options = BenchOptions(
                    host: "127.0.0.1", port: gateway.providerPort, tls: false, scenario: scenario,
                    targets: try targets())
                options.signer = gateway.signer
                return try await BenchRunner.run(options, group: group)
            }
            // A mix kind with no token of its class is refused before anything is sent.
            await #expect(throws: BenchRunError.self) { try await bench("live-update=1", count: 1) }
            #expect(try await bench("live-start=1", count: 5).accepted == 5)
            try await eventually("every device started an activity and has its update token") {
                fleet.activityTokenCount == 10
            }
            let updates = try await bench("live-update=1", count: 10)
            #expect(updates.accepted == 10)
            try await eventually("the starts and updates counted on budget") {
                await AdminClient.counters(port: gateway.adminPort)?.policy.liveActivityOnBudget == 15
            }
        }
    }

    /// Broadcasts through the bench: `live-broadcast` POSTs to the channel (`/4/broadcasts/apps/<bundle>`
    /// with `apns-channel-id`), every subscribed device gets each, and the gateway's fan-out figures
    /// (`GET /v1/broadcasts`, read as the bench's report reads them) count every subscriber.
    @Test func aBenchBroadcastsToAChannel() async throws {
        let topic = "com.example.scores"
        try await withFleet(topic: topic, devices: 4) { gateway, fleet, group in
            let manage = try await ProviderClient.connect(
                host: "127.0.0.1", port: try #require(gateway.channelPorts.last), security: .cleartext, group: group)
            let now = UnixTime(seconds: Int64(Date().timeIntervalSince1970))
            let authorization = "bearer " + (try gateway.signer.token(issuedAt: now))
            let created = try await manage.post(
                path: "/1/apps/\(topic)/channels", headers: [("authorization", authorization)],
                body: Array(#"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#.utf8))
            await manage.close()
            #expect(created.status == 201)
            let channel = try #require(created.header("apns-channel-id"))
            for agent in fleet.agents {
                _ = agent.startLiveActivity(bundleID: topic, attributesType: "GameAttributes", channelID: channel)
            }
            try await eventually("every device subscribed") {
                fleet.agents.allSatisfy { !$0.subscribedChannels.isEmpty }
            }
            func broadcasts() async throws -> [BroadcastFanout] {
                let (status, body) = try await AdminClient.get(
                    host: "127.0.0.1", port: gateway.adminPort, path: "/v1/broadcasts", token: nil)
                #expect(status == 200)
                return try BroadcastFanout.list(json: Data(body.utf8))
            }
            #expect(try await broadcasts().isEmpty)

            let scenario = Scenario(
                rate: 0, duration_seconds: 10, count: 3, connections: 1, streams: 1,
                mix: try Scenario.mix(flag: "live-broadcast=1"))
            var options = BenchOptions(
                host: "127.0.0.1", port: gateway.providerPort, tls: false, scenario: scenario,
                targets: try PushTarget.parse(fleet.tokenLines.joined(separator: "\n"), defaultTopic: nil))
            options.signer = gateway.signer
            // Without the channel the broadcast kind has nothing to go to: refused before anything is sent.
            await #expect(throws: BenchRunError.self) { try await BenchRunner.run(options, group: group) }
            options.targets.append(.channel(channel, bundleID: topic))
            let result = try await BenchRunner.run(options, group: group)
            #expect(result.accepted == 3, "\(result.rejected)")

            try await eventually("three broadcasts, each acknowledged by the four subscribers") {
                let fanouts = try await broadcasts()
                return fanouts.count == 3 && fanouts.allSatisfy { $0.isComplete && $0.acknowledged == 4 }
            }
            let figures = BroadcastFanouts(fanouts: try await broadcasts())
            #expect(figures.written == 12 && figures.acknowledged == 12)
            #expect(figures.first != nil && figures.worstLast != nil)
            var shown = result
            shown.broadcasts = figures
            #expect(BenchReport.summary(shown).contains("12 acknowledged of 12 written"))
        }
    }

    @Test func aShortBenchAddsUp() async throws {
        let topic = "com.example.app"
        let prompt: (inout AgentProfile) -> Void = {
            $0.work_ms_min = 1
            $0.work_ms_max = 5
            $0.never_fraction = 0
        }
        try await withFleet(topic: topic, devices: 20, prompt) { gateway, fleet, group in

            // 20 devices and one token nobody has: every 21st request is rejected with BadDeviceToken.
            var targets = fleet.tokenLines.map {
                let fields = $0.split(separator: " ")
                return PushTarget(token: String(fields[0]), topic: String(fields[1]))
            }
            targets.append(PushTarget(token: String(repeating: "0f", count: 32), topic: topic))
            let scenario = Scenario(
                rate: 420, duration_seconds: 1, count: 420, connections: 3, streams: 20,
                mix: try Scenario.mix(flag: "silent=60,alert=30,silent-collapsing=10"))
            var options = BenchOptions(
                host: "127.0.0.1", port: gateway.providerPort, tls: false, scenario: scenario, targets: targets)
            options.signer = gateway.signer
            options.seed = 42

            let before = try await counters(gateway)
            var result = try await BenchRunner.run(options, group: group)
            // Deliveries are written before the 200 is answered; their acknowledgements follow closely.
            try await eventually("acknowledgements counted") {
                let hub = gateway.services.hub.counters
                return hub.acknowledged >= hub.delivered
            }
            result.gateway = GatewayFigures(from: before, to: try await counters(gateway))

            #expect(result.sent == 420)
            #expect(result.sent == result.accepted + result.rejectedCount + result.failedCount)
            #expect(result.failed.isEmpty)
            #expect(result.rejected == ["400 BadDeviceToken": 20])
            #expect(result.kinds.reduce(0) { $0 + $1.sent } == 420)
            let figures = try #require(result.gateway)
            #expect(figures.silentAccepted == result.acceptedSilent)
            #expect(figures.alertingAccepted == result.accepted - result.acceptedSilent)
            #expect(figures.silentOutcomes == figures.silentAccepted, "every accepted silent push has one outcome")
            #expect(figures.acceptToDeviceAck != nil)
            #expect(figures.connectedDevices == 20)
            #expect(result.timeline.reduce(0) { $0 + $1.sent } == 420)

            // Closed loop: as fast as 2 × 5 streams allow, stopped by the count.
            options.scenario = Scenario(count: 210, connections: 2, streams: 5, mix: [PushKind.builtIn[0]])
            let closed = try await BenchRunner.run(options, group: group)
            #expect(closed.sent == 210)
            #expect(closed.accepted == 200 && closed.rejected == ["400 BadDeviceToken": 10])

        }
    }

    /// A real gateway with `devices` plain agents that installed `topic` (never force-quit, never in
    /// Low Power Mode; `profile` changes the rest) while `body` runs.
    func withFleet(
        topic: String, devices: Int, _ profile: (inout AgentProfile) -> Void = { _ in },
        _ body: (LocalGateway, SimulatedFleet, MultiThreadedEventLoopGroup) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        try await LocalGateway.run(
            topic: topic, settings: ["provider.rate.device_token.per_second=0", "log.level=error"], group: group,
            logger: Logger(label: "test")
        ) { gateway in
            var agentProfile = AgentProfile()
            agentProfile.force_quit_per_hour = 0
            agentProfile.low_power_per_hour = 0
            profile(&agentProfile)
            let fleet = SimulatedFleet(
                host: "127.0.0.1", port: gateway.devicePort, devices: devices, apps: [topic], profile: agentProfile,
                enrolment: gateway.services.hub.settings.enrolmentSecret, group: group)
            fleet.start()
            do {
                try await eventually("every device installed the app (and has its push-to-start tokens)") {
                    fleet.allInstalled
                }
                try await body(gateway, fleet, group)
                await fleet.stop()
            } catch {
                await fleet.stop()
                throw error
            }
        }
        try await group.shutdownGracefully()
    }

    func counters(_ gateway: LocalGateway) async throws -> GatewayFigures.Counters {
        let (status, body) = try await AdminClient.get(
            host: "127.0.0.1", port: gateway.adminPort, path: "/v1/counters", token: nil)
        #expect(status == 200)
        return try GatewayFigures.Counters(json: Data(body.utf8))
    }
}

/// Polls a condition a test waits for across real connections (bounded; no sleeps on timed outcomes).
