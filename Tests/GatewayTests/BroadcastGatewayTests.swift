import DeviceAgent
import DeviceHub
import DeviceProtocol
import DeviceRuntime
import Foundation
import Gateway
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import PushStore
import Synchronization
import TestSupport
import Testing
import WallClock

/// Broadcast push through a real gateway (docs/live-activities.md): devices subscribe their activities to
/// a channel; one POST to `/4/broadcasts/apps/<bundle>` reaches every subscriber and no other device,
/// answered 200 with `apns-request-id` and `apns-unique-id`; Apple's errors, each with its status; a
/// subscriber that comes back is given the channel's newest stored message only, and a No-Message-Stored
/// channel's message only within the reconnect grace.
@Suite(.timeLimit(.minutes(5))) struct BroadcastGatewayTests {
    static let bundle = "com.example.scores"

    /// What each agent received.
    final class Received: Sendable {
        let deliveries = Mutex<[Int: [Delivery]]>([:])
        func record(_ agent: Int, _ delivery: Delivery) {
            deliveries.withLock { $0[agent, default: []].append(delivery) }
        }
        func of(_ agent: Int) -> [Delivery] { deliveries.withLock { $0[agent] ?? [] } }
    }

    struct Harness {
        let gateway: LocalGateway
        let group: MultiThreadedEventLoopGroup
        let client: ProviderClient
        let manage: ProviderClient
        let authorization: String

        func request(
            _ client: ProviderClient, _ method: String, _ path: String, _ headers: [(String, String)], body: String
        ) async throws -> ProviderClient.Response {
            var head: HPACKHeaders = [":method": method, ":scheme": "https", ":path": path, ":authority": "localhost"]
            for (name, value) in headers { head.add(name: name, value: value) }
            if body.isEmpty { return try await client.send([.headers(head, endStream: true)]) }
            return try await client.send([.headers(head, endStream: false), .data(Array(body.utf8), endStream: true)])
        }

        func createChannel(policy: Int) async throws -> String {
            let created = try await request(
                manage, "POST", "/1/apps/\(BroadcastGatewayTests.bundle)/channels", [("authorization", authorization)],
                body: #"{"message-storage-policy": \#(policy), "push-type": "LiveActivity"}"#)
            #expect(created.status == 201)
            return try #require(created.header("apns-channel-id"))
        }

        func broadcast(
            _ channel: String?, _ body: String, headers extra: [(String, String)] = [], method: String = "POST",
            bundle: String = BroadcastGatewayTests.bundle, pushType: String? = "liveactivity"
        ) async throws -> ProviderClient.Response {
            var headers = [("authorization", authorization), ("apns-priority", "10")]
            if let pushType { headers.append(("apns-push-type", pushType)) }
            if let channel { headers.append(("apns-channel-id", channel)) }
            return try await request(client, method, "/4/broadcasts/apps/\(bundle)", headers + extra, body: body)
        }

        func agent(_ index: Int, _ received: Received, identity: DeviceAgent.Identity? = nil) -> DeviceAgent {
            DeviceAgent(
                host: "127.0.0.1", port: gateway.devicePort, apps: [BroadcastGatewayTests.bundle], identity: identity,
                enrolment: gateway.services.hub.settings.enrolmentSecret, group: group,
                onEvent: { event in
                    if case .delivered(let delivery, _) = event { received.record(index, delivery) }
                })
        }
    }

    enum Transport: CaseIterable { case h2c, tls }

    func withHarness(
        settings: [String] = [], transport: Transport = .h2c, _ body: (Harness) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await LocalGateway.run(
                topic: Self.bundle,
                settings: ["log.level=error"] + settings
                    + (transport == .tls ? ["provider.tls.enabled=true", "provider.tls.port=0"] : []),
                group: group, logger: Logger(label: "test")
            ) { gateway in
                // With TLS on, the provider's first listener (`providerPort`) is the TLS one.
                let client = try await ProviderClient.connect(
                    host: "127.0.0.1", port: gateway.providerPort,
                    security: transport == .tls
                        ? .tls(trustRoots: [], alpn: ["h2"], clientCertificate: nil) : .cleartext,
                    group: group)
                let manage = try await ProviderClient.connect(
                    host: "127.0.0.1", port: try #require(gateway.channelPorts.last), security: .cleartext, group: group
                )
                let authorization = "bearer " + (try gateway.signer.token(issuedAt: UnixTime.now()))
                try await body(
                    Harness(
                        gateway: gateway, group: group, client: client, manage: manage, authorization: authorization))
                await client.close()
                await manage.close()
            }
            try await group.shutdownGracefully()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    static func update(_ timestamp: Int, home: Int) -> String {
        #"{"aps":{"event":"update","timestamp":\#(timestamp),"content-state":{"home":\#(home),"away":0}}}"#
    }

    @Test(arguments: Transport.allCases) func aBroadcastReachesEverySubscribedDeviceAndNoOther(
        over transport: Transport
    ) async throws {
        try await withHarness(transport: transport) { harness in
            let channel = try await harness.createChannel(policy: 1)
            let received = Received()
            let agents = (0..<3).map { harness.agent($0, received) }
            for agent in agents { agent.start() }
            defer { for agent in agents { agent.stop() } }
            try await eventually("installed") { agents.allSatisfy { !$0.tokens.isEmpty } }
            // The first starts a Live Activity on the channel (iOS 18's `pushType: .channel`), the second
            // only subscribes.
            let activity = agents[0].startLiveActivity(
                bundleID: Self.bundle, attributesType: "MatchAttributes", channelID: channel,
                contentState: #"{"home":0,"away":0}"#)
            agents[1].subscribe(bundleID: Self.bundle, channelID: channel)
            try await eventually("subscribed") { agents.prefix(2).allSatisfy { $0.subscribedChannels[channel] != nil } }

            let requestID = "2288cf3f-70d8-46a6-97d7-dd5d00867127"
            let answer = try await harness.broadcast(
                channel, Self.update(1_800_000_000, home: 1),
                headers: [("apns-request-id", requestID), ("apns-expiration", "0")])
            #expect(answer.status == 200)
            #expect(answer.header("apns-request-id") == requestID)
            #expect(answer.header("apns-unique-id") == APNsID(header: requestID)?.uniqueID.value)
            try await eventually("both subscribers have it") {
                received.of(0).count == 1 && received.of(1).count == 1
            }
            let delivery = try #require(received.of(0).first)
            #expect(delivery.channel == channel)
            #expect(delivery.apnsID == requestID)
            #expect(delivery.pushType == "liveactivity")
            #expect(delivery.rule == "broadcast")
            #expect(delivery.token == nil)
            try await eventually("the activity on the channel updated") {
                agents[0].liveActivities.activities[activity]?.updatesApplied == 1
            }
            #expect(agents[0].liveActivities.activities[activity]?.contentState == #"{"away":0,"home":1}"#)
            // Acknowledged: the fan-out's figures count both.
            try await eventually("acknowledged") {
                harness.gateway.services.hub.broadcastFigures.recent.last?.acknowledged == 2
            }
            let fanout = try #require(harness.gateway.services.hub.broadcastFigures.recent.last)
            #expect(fanout.written == 2)
            #expect(fanout.lastMilliseconds != nil)
            #expect(received.of(2).isEmpty, "not subscribed")

            // Unsubscribed (the activity ended): no more.
            agents[1].send(.unsubscribeChannel(channelID: channel))
            let hub = harness.gateway.services.hub
            let deviceID = try #require(agents[1].identity?.deviceID)
            let slot = try #require(hub.registry.slot(ofDevice: deviceID))
            try await eventually("unsubscribed") { hub.subscriptions(of: slot).isEmpty }
            #expect(try await harness.broadcast(channel, Self.update(1_800_000_060, home: 2)).status == 200)
            try await eventually("the subscriber has the second") { received.of(0).count == 2 }
            #expect(received.of(1).count == 1)
            #expect(received.of(2).isEmpty)
        }
    }

    @Test(arguments: Transport.allCases) func broadcastsAreRefusedWithApplesReasons(over transport: Transport)
        async throws
    {
        try await withHarness(transport: transport) { harness in
            let stored = try await harness.createChannel(policy: 1)
            let unstored = try await harness.createChannel(policy: 0)
            func reason(_ response: ProviderClient.Response) -> String {
                let object = try? JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any]
                #expect(response.header("apns-request-id") != nil)
                return "\(response.status) \(object?["reason"] as? String ?? "-")"
            }
            let body = Self.update(1_800_000_000, home: 1)
            #expect(reason(try await harness.broadcast(nil, body)) == "400 MissingChannelId")
            #expect(reason(try await harness.broadcast("not base64!", body)) == "400 BadChannelId")
            #expect(reason(try await harness.broadcast("b3RoZXI=", body)) == "400 ChannelNotRegistered")
            #expect(
                reason(try await harness.broadcast(unstored, body, headers: [("apns-expiration", "1900000000")]))
                    == "400 BadExpirationDate")
            #expect(
                reason(try await harness.broadcast(stored, body, headers: [("apns-expiration", "soon")]))
                    == "400 BadExpirationDate")
            #expect(reason(try await harness.broadcast(stored, body, pushType: nil)) == "400 MissingPushType")
            #expect(reason(try await harness.broadcast(stored, body, pushType: "alert")) == "400 InvalidPushType")
            #expect(
                reason(try await harness.broadcast(stored, body, headers: [("apns-priority", "7")]))
                    == "400 BadPriority")
            #expect(
                reason(try await harness.broadcast(stored, body, headers: [("apns-request-id", "nope")]))
                    == "400 BadMessageId")
            #expect(reason(try await harness.broadcast(stored, "")) == "400 PayloadEmpty")
            #expect(reason(try await harness.broadcast(stored, "{not json")) == "400 BadRequestPayload")
            let large =
                #"{"aps":{"event":"update","timestamp":1},"pad":""# + String(repeating: "x", count: 5_100) + #""}"#
            #expect(reason(try await harness.broadcast(stored, large)) == "413 PayloadTooLarge")
            #expect(reason(try await harness.broadcast(stored, body, method: "GET")) == "405 MethodNotAllowed")
            #expect(
                reason(try await harness.broadcast(stored, body, bundle: Self.bundle + ".push-type.liveactivity"))
                    == "400 TopicDisallowed")
            #expect(
                reason(try await harness.broadcast(stored, body, bundle: "com.example.other")) == "403 TopicMismatch")
            let path = try await harness.request(
                harness.client, "POST", "/4/broadcasts/\(Self.bundle)", [("authorization", harness.authorization)],
                body: body)
            #expect(reason(path) == "404 BadPath")
            let unauthorized = try await harness.request(
                harness.client, "POST", "/4/broadcasts/apps/\(Self.bundle)",
                [("apns-channel-id", stored), ("apns-push-type", "liveactivity")], body: body)
            #expect(reason(unauthorized) == "403 MissingProviderToken")
            // A payload of exactly 5,120 bytes is accepted.
            let exact = #"{"aps":{"event":"update","timestamp":1},"pad":""#
            let padded = exact + String(repeating: "x", count: 5_120 - exact.utf8.count - 2) + #""}"#
            #expect(padded.utf8.count == 5_120)
            #expect(try await harness.broadcast(stored, padded).status == 200)
        }
    }

    /// A push-to-start as ActivityKit needs it (issue 51): without `attributes-type` or `attributes` it is
    /// answered 200 (APNs documents no reason) and starts nothing on the device, which says why; with
    /// `input-push-channel` (iOS 18) it starts an activity that listens on the channel — subscribed, no
    /// update token — so that the channel's next broadcast reaches it.
    @Test(arguments: Transport.allCases) func aPushToStartNeedsItsAttributesAndMayStartOnAChannel(
        over transport: Transport
    ) async throws {
        try await withHarness(transport: transport) { harness in
            let channel = try await harness.createChannel(policy: 0)
            let outcomes = Mutex<[LiveActivityBook.Outcome]>([])
            let agent = DeviceAgent(
                host: "127.0.0.1", port: harness.gateway.devicePort, apps: [Self.bundle],
                enrolment: harness.gateway.services.hub.settings.enrolmentSecret,
                behaviour: AgentBehaviour(liveActivityTypes: [Self.bundle: ["MatchAttributes"]]) { _ in .never },
                group: harness.group,
                onEvent: { event in
                    if case .liveActivity(let outcome) = event { outcomes.withLock { $0.append(outcome) } }
                })
            agent.start()
            defer { agent.stop() }
            try await eventually("the push-to-start token") {
                agent.activityTokens[Self.bundle]?["start:MatchAttributes"] != nil
            }
            let token = try #require(agent.activityTokens[Self.bundle]?["start:MatchAttributes"])
            func start(_ fields: String) async throws -> Int {
                try await harness.client.post(
                    path: "/3/device/\(token)",
                    headers: [
                        ("authorization", harness.authorization),
                        ("apns-topic", Self.bundle + ".push-type.liveactivity"), ("apns-push-type", "liveactivity"),
                        ("apns-priority", "10"),
                    ],
                    body: Array(
                        #"{"aps":{"event":"start","timestamp":1800000000,"content-state":{"home":0},\#(fields)}}"#.utf8)
                ).status
            }
            let refused = LiveActivityBook.Outcome.notApplied(reason: "a start needs attributes-type and attributes")
            #expect(try await start(#""attributes-type":"MatchAttributes""#) == 200)
            #expect(try await start(#""attributes":{"match":"A-B"}"#) == 200)
            try await eventually("both starts refused on the device") {
                outcomes.withLock { $0.filter { $0 == refused }.count == 2 }
            }
            #expect(agent.liveActivities.activities.isEmpty)

            #expect(
                try await start(
                    #""attributes-type":"MatchAttributes","attributes":{"match":"A-B"},"input-push-channel":"\#(channel)""#
                ) == 200)
            try await eventually("the started activity is subscribed to the channel") {
                agent.subscribedChannels[channel] != nil
            }
            let activity = try #require(agent.liveActivities.activities.values.first)
            #expect(activity.channel == channel)
            #expect(agent.activityTokens[Self.bundle]?["update:\(activity.id)"] == nil, "no update token")
            #expect(try await harness.broadcast(channel, Self.update(1_800_000_060, home: 1)).status == 200)
            try await eventually("the broadcast updated it") {
                agent.liveActivities.activities[activity.id]?.contentState == #"{"away":0,"home":1}"#
            }
        }
    }

    /// A No-Message-Stored channel's broadcast, or a stored channel's with `apns-expiration: 0`, never
    /// reaches a device that subscribes after it, however soon (issue 51): Apple stores nothing for it,
    /// and the reconnect grace is only for subscribers it was broadcast to.
    @Test func aMessageTheChannelDoesNotStoreIsNotGivenToALaterSubscriber() async throws {
        try await withHarness { harness in
            let received = Received()
            let late = harness.agent(0, received)
            late.start()
            defer { late.stop() }
            try await eventually("installed") { !late.tokens.isEmpty }
            for (policy, expiration) in [(0, nil), (1, "0")] as [(Int, String?)] {
                let channel = try await harness.createChannel(policy: policy)
                let answer = try await harness.broadcast(
                    channel, Self.update(1_800_000_000, home: policy),
                    headers: expiration.map { [("apns-expiration", $0)] } ?? [])
                #expect(answer.status == 200)
                late.subscribe(bundleID: Self.bundle, channelID: channel)
                try await eventually("subscribed") { late.subscribedChannels[channel] != nil }
            }
            // A broadcast after, on a stored channel, is its first delivery: nothing came before it.
            let after = try await harness.createChannel(policy: 1)
            late.subscribe(bundleID: Self.bundle, channelID: after)
            try await eventually("subscribed") { late.subscribedChannels[after] != nil }
            #expect(try await harness.broadcast(after, Self.update(1_800_000_010, home: 9)).status == 200)
            try await eventually("the later broadcast arrived") { !received.of(0).isEmpty }
            #expect(received.of(0).map(\.channel) == [after])
        }
    }

    @Test func aDeviceThatComesBackIsGivenTheNewestStoredMessageOnly() async throws {
        try await withHarness(settings: ["broadcast.reconnect_grace_seconds=0"]) { harness in
            let stored = try await harness.createChannel(policy: 1)
            let unstored = try await harness.createChannel(policy: 0)
            let received = Received()
            let first = harness.agent(0, received)
            first.start()
            try await eventually("installed") { !first.tokens.isEmpty }
            first.subscribe(bundleID: Self.bundle, channelID: stored)
            first.subscribe(bundleID: Self.bundle, channelID: unstored)
            try await eventually("subscribed") { first.subscribedChannels.count == 2 }
            let identity = try #require(first.identity)
            first.stop()
            try await eventually("gone") { harness.gateway.services.hub.connectedCount == 0 }

            // While it is away: two on the stored channel, one on the other.
            for (home, channel) in [(1, stored), (2, stored), (3, unstored)] {
                #expect(
                    try await harness.broadcast(channel, Self.update(1_800_000_000 + home, home: home)).status == 200)
            }
            let again = harness.agent(1, received, identity: identity)
            again.start()
            defer { again.stop() }
            try await eventually("the stored message") { received.of(1).count == 1 }
            let caughtUp = try #require(received.of(1).first)
            #expect(caughtUp.channel == stored)
            #expect(caughtUp.rule == "released_broadcast_caught_up")
            #expect(caughtUp.payload.contains(#""home":2"#), "the newest only")

            // A device subscribing later is given the stored message too; acknowledged, not again.
            let late = harness.agent(2, received)
            late.start()
            defer { late.stop() }
            try await eventually("installed") { !late.tokens.isEmpty }
            late.subscribe(bundleID: Self.bundle, channelID: stored)
            try await eventually("the stored message on subscribing") { received.of(2).count == 1 }
            #expect(received.of(2).first?.payload.contains(#""home":2"#) == true)
            #expect(received.of(1).count == 1, "nothing more for the device that came back")
        }
    }

    @Test func acknowledgedBroadcastsAreStoredWhenConnectionsEndNotOneRowAnAck() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cursors-\(UUID())").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var subscribers: [String] = []
        var channel = ""
        // Cursors kept for an hour: only a device's disconnection (one before the end, the other at
        // shutdown) stores them.
        try await withHarness(settings: ["data_dir=\(directory)", "broadcast.cursor_store_seconds=3600"]) {
            harness in
            channel = try await harness.createChannel(policy: 1)
            let received = Received()
            let agents = (0..<2).map { harness.agent($0, received) }
            for agent in agents { agent.start() }
            defer { for agent in agents { agent.stop() } }
            try await eventually("installed") { agents.allSatisfy { !$0.tokens.isEmpty } }
            for agent in agents { agent.subscribe(bundleID: Self.bundle, channelID: channel) }
            try await eventually("subscribed") { agents.allSatisfy { $0.subscribedChannels[channel] != nil } }
            for home in 1...2 {
                #expect(
                    try await harness.broadcast(channel, Self.update(1_800_000_000 + home, home: home)).status == 200)
            }
            try await eventually("acknowledged") {
                harness.gateway.services.hub.broadcastFigures.recent.suffix(2).allSatisfy { $0.acknowledged == 2 }
            }
            subscribers = try agents.map { try #require($0.identity?.deviceID) }
            agents[0].stop()
            try await eventually("gone") { harness.gateway.services.hub.connectedCount == 1 }
        }
        let stored = try await SQLiteStore(path: directory + "/pushgate.sqlite").open(now: UnixTime.now())
        let cursors = Dictionary(
            uniqueKeysWithValues: stored.subscriptions.filter { $0.channelID == channel }.map {
                ($0.deviceID, $0.acknowledged)
            })
        let newest = try #require(stored.broadcasts.first { $0.channelID == channel }?.sequence)
        #expect(cursors == Dictionary(uniqueKeysWithValues: subscribers.map { ($0, newest) }))
    }
}
