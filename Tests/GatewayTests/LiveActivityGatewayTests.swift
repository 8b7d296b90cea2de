import DeviceAgent
import DeviceHub
import DeviceProtocol
import DeviceRuntime
import Foundation
import Gateway
import Logging
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import Synchronization
import TestSupport
import Testing
import WallClock

/// Push-to-start, update and end through a real gateway: the simulated app gets a push-to-start token
/// for its attributes type; a `start` POSTed to it starts an activity, whose update token the device
/// gets from the gateway as iOS hands it to the app; updates apply in timestamp order (an older one is
/// ignored on the device, still answered 200), an `end` ends it; uninstalling the app unregisters both
/// tokens (410).
@Suite(.timeLimit(.minutes(5))) struct LiveActivityGatewayTests {
    static let bundle = "com.example.scores"

    @Test func startUpdateAndEndByPush() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await run(group)
            try await group.shutdownGracefully()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    func run(_ group: MultiThreadedEventLoopGroup) async throws {
        try await LocalGateway.run(
            topic: Self.bundle, settings: ["log.level=error"], group: group, logger: Logger(label: "test")
        ) { gateway in
            let outcomes = Mutex<[LiveActivityBook.Outcome]>([])
            let agent = DeviceAgent(
                host: "127.0.0.1", port: gateway.devicePort, apps: [Self.bundle],
                enrolment: gateway.services.hub.settings.enrolmentSecret,
                behaviour: AgentBehaviour(liveActivityTypes: [Self.bundle: ["GameAttributes"]]) { _ in .never },
                group: group,
                onEvent: { event in
                    if case .liveActivity(let outcome) = event { outcomes.withLock { $0.append(outcome) } }
                })
            agent.start()
            defer { agent.stop() }
            try await eventually("the push-to-start token") {
                agent.activityTokens[Self.bundle]?["start:GameAttributes"] != nil
            }
            let startToken = try #require(agent.activityTokens[Self.bundle]?["start:GameAttributes"])
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, group: group)
            let authorization = "bearer " + (try gateway.signer.token(issuedAt: UnixTime.now()))
            func post(_ token: String, _ aps: String) async throws -> Int {
                try await client.post(
                    path: "/3/device/\(token)",
                    headers: [
                        ("authorization", authorization), ("apns-topic", Self.bundle + ".push-type.liveactivity"),
                        ("apns-push-type", "liveactivity"), ("apns-priority", "10"),
                    ], body: Array(#"{"aps":\#(aps)}"#.utf8)
                ).status
            }
            let t = 1_800_000_000
            #expect(
                try await post(
                    startToken,
                    #"{"event":"start","timestamp":\#(t),"attributes-type":"GameAttributes","attributes":{"match":"A-B"},"content-state":{"home":0,"away":0},"alert":{"title":"Kick-off"}}"#
                ) == 200)
            try await eventually("the started activity's update token") {
                agent.liveActivities.activities.values.first?.updateToken != nil
            }
            let activity = try #require(agent.liveActivities.activities.values.first)
            let updateToken = try #require(activity.updateToken)
            #expect(agent.activityTokens[Self.bundle]?["update:\(activity.id)"] == updateToken)

            #expect(
                try await post(
                    updateToken, #"{"event":"update","timestamp":\#(t + 60),"content-state":{"home":1,"away":0}}"#)
                    == 200)
            try await eventually("the update applied") {
                agent.liveActivities.activities[activity.id]?.updatesApplied == 2
            }
            // Older than what the activity shows: APNs accepts it, the device ignores it.
            #expect(
                try await post(
                    updateToken, #"{"event":"update","timestamp":\#(t + 30),"content-state":{"home":5,"away":5}}"#)
                    == 200)
            try await eventually("the older update ignored") {
                outcomes.withLock { $0.contains(.ignoredOlder(activityID: activity.id)) }
            }
            #expect(agent.liveActivities.activities[activity.id]?.contentState == #"{"away":0,"home":1}"#)
            #expect(
                try await post(
                    updateToken,
                    #"{"event":"end","timestamp":\#(t + 90),"content-state":{"home":2,"away":0},"dismissal-date":\#(t + 3600)}"#
                ) == 200)
            try await eventually("the activity ended") { agent.liveActivities.activities[activity.id]?.endedAt != nil }
            #expect(agent.liveActivities.activities[activity.id]?.contentState == #"{"away":0,"home":2}"#)

            // The app uninstalled: its Live Activity tokens answer 410 with its own.
            agent.send(.uninstall(bundleID: Self.bundle))
            try await eventually("the tokens unregistered") {
                try await post(updateToken, #"{"event":"update","timestamp":\#(t + 99)}"#) == 410
            }
            #expect(try await post(startToken, #"{"event":"start","timestamp":\#(t + 99)}"#) == 410)
            await client.close()
        }
    }
}
