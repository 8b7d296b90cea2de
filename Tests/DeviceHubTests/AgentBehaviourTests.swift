import AsyncHTTPClient
import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import Gateway
import GatewayFiles
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import Synchronization
import PushModel
import PushPolicy
import TestSupport
import Testing
import Yams

@Suite struct AgentBehaviourTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test(arguments: ["default", "misbehaving"])
    func shippedProfilesAreValid(_ name: String) throws {
        let text = try String(
            contentsOf: Self.root.appendingPathComponent("Config/profiles/\(name).yaml"), encoding: .utf8)
        let profile = try YAMLDecoder().decode(AgentProfile.self, from: text)
        #expect(profile.problem() == nil)
    }

    @Test func profileKeysAreOptionalAndTyposAreRefused() throws {
        let partial = try YAMLDecoder().decode(AgentProfile.self, from: "never_fraction: 0.5\n")
        #expect(partial.never_fraction == 0.5)
        #expect(partial.work_ms_max == AgentProfile().work_ms_max)
        #expect(throws: (any Error).self) { try YAMLDecoder().decode(AgentProfile.self, from: "nevr_fraction: 0.5\n") }
        var bad = AgentProfile()
        bad.failed_fraction = 0.7
        bad.never_fraction = 0.5
        #expect(bad.problem()?.contains("failed_fraction + never_fraction") == true)
        bad = AgentProfile()
        bad.fetch_url = "ftp://x"
        #expect(bad.problem()?.contains("fetch_url") == true)
    }

    /// A plain agent's answers repeat from its seed, like an iPhone's users.
    @Test func profileBehaviourRepeatsFromItsSeed() {
        var profile = AgentProfile()
        profile.never_fraction = 0.2
        profile.failed_fraction = 0.3
        let delivery = Delivery(
            apnsID: APNsID.generate().value, topic: "a", bundleID: "a", pushType: "background", priority: 5,
            collapseID: nil, kind: "background", deadlineSeconds: 30, rule: "on_budget", payload: "{}")
        func answers(_ seed: UInt64) -> [String] {
            let behaviour = profile.behaviour(seed: seed)
            return (0..<50).map { _ in "\(behaviour.wake(delivery))" }
        }
        #expect(answers(7) == answers(7))
        #expect(answers(7) != answers(8))
    }

    @Test func profileBehaviourFollowsItsFractions() {
        var profile = AgentProfile()
        profile.never_fraction = 0.2
        profile.failed_fraction = 0.3
        profile.new_data_fraction = 1
        let behaviour = profile.behaviour(seed: 3)
        let delivery = Delivery(
            apnsID: APNsID.generate().value, topic: "a", bundleID: "a", pushType: "background", priority: 5,
            collapseID: nil,
            kind: "background", deadlineSeconds: 30, rule: "on_budget", payload: "{}")
        var counts: [String: Int] = [:]
        for _ in 0..<10_000 {
            switch behaviour.wake(delivery) {
            case .never: counts["never", default: 0] += 1
            case .complete(let result, let after):
                counts[result.rawValue, default: 0] += 1
                #expect((profile.work_ms_min...profile.work_ms_max).contains(after))
            case .fetch: Issue.record("no fetch_url, no fetch")
            }
        }
        #expect((1700...2300).contains(counts["never", default: 0]))
        #expect((2600...3400).contains(counts["failed", default: 0]))
        #expect((4500...5500).contains(counts["newData", default: 0]))
        #expect(counts["noData"] == nil)
    }

    /// A profile that does real work: the wake's completion comes from a real HTTP GET on loopback.
    @Test func fetchCompletesFromTheRealResponse() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let web = try await TinyWebServer.start(group: group)
        let http = HTTPClient(eventLoopGroupProvider: .shared(group))
        func result(_ url: String, _ timeout: Int64 = 5000) async throws -> CompletionResult {
            try await WakeFetch.result(url, timeoutMilliseconds: timeout, http: http).get()
        }
        let ok = try await result("http://127.0.0.1:\(web.port)/data")
        let empty = try await result("http://127.0.0.1:\(web.port)/empty")
        let missing = try await result("http://127.0.0.1:\(web.port)/missing")
        let refused = try await result("http://127.0.0.1:1/", 2000)
        try await http.shutdown()
        #expect([ok, empty, missing, refused] == [.newData, .noData, .failed, .failed])
        try await web.channel.close()
        try await group.shutdownGracefully()
    }

    /// Devices over TLS: the device port's TLS listener with the gateway's certificate.
    @Test func agentOverTLS() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushgate-tls-\(UUID().uuidString)"
        ).path
        let certificates = DevelopmentCertificates(dataDirectory: directory)
        try certificates.ensure()
        var server = TLSConfiguration.makeServerConfiguration(
            certificateChain: try NIOSSLCertificate.fromPEMFile(certificates.serverCertificatePath).map {
                .certificate($0)
            },
            privateKey: .privateKey(try NIOSSLPrivateKey(file: certificates.serverKeyPath, format: .pem)))
        server.applicationProtocols = ["http/1.1"]
        var client = TLSConfiguration.makeClientConfiguration()
        client.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(certificates.caCertificatePath))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let hub = DeviceHub(registry: DeviceRegistry(), policy: .init(), logger: Logger(label: "test"))
        let devices = DeviceServer(
            hub: hub, listeners: [.init(host: "127.0.0.1", port: 0, tls: try NIOSSLContext(configuration: server))],
            group: group,
            logger: Logger(label: "test"))
        try await devices.start()
        let log = EventLog()
        let agent = DeviceAgent(
            host: "localhost", port: devices.boundAddresses[0].port!, tls: try NIOSSLContext(configuration: client),
            apps: ["com.example.app"], group: group, onEvent: { log.append($0) })
        agent.start()
        try await eventually("installed over TLS") { agent.tokens["com.example.app"] != nil }
        #expect(hub.connectedCount == 1)
        agent.stop()
        try await devices.shutdown()
        try await group.shutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// A fleet's nodes as the agent's endpoints: it starts where it is told and, when its node goes away,
    /// connects to the next one in the list (here a gateway of its own, which does not know the device:
    /// it registers there again).
    @Test func aDeviceWhoseNodeIsGoneMovesToTheNextEndpoint() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (hubA, serverA, a) = try await Self.node(group)
        let (hubB, serverB, b) = try await Self.node(group)
        let agent = DeviceAgent(endpoints: [b, a], first: 1, apps: ["com.example.app"], group: group)
        agent.start()
        try await eventually("connected to the endpoint it starts at") { hubA.connectedCount == 1 }
        #expect(hubB.connectedCount == 0)
        #expect(agent.endpoint == a)

        try await serverA.shutdown()
        try await eventually("moved to the next endpoint once its node was gone") {
            hubB.connectedCount == 1
        }
        #expect(agent.endpoint == b)
        agent.stop()
        try await serverB.shutdown()
        try await group.shutdownGracefully()
    }

    /// A connection its node closed while the node stays up (a drain, or the not-acknowledging rule): the
    /// device comes back to the same node — moving on would cost the fleet a claim for nothing.
    @Test func aDeviceClosedByALiveNodeComesBackToIt() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let (hubA, serverA, a) = try await Self.node(group)
        let (hubB, serverB, b) = try await Self.node(group)
        let welcomes = Mutex(0)
        let agent = DeviceAgent(
            endpoints: [a, b], apps: ["com.example.app"], group: group,
            onEvent: { if case .welcomed = $0 { welcomes.withLock { $0 += 1 } } })
        agent.start()
        try await eventually("connected to the first endpoint") { welcomes.withLock { $0 } == 1 }
        hubA.closeAll(reconnectAfterMilliseconds: 0)
        try await eventually("welcomed again") { welcomes.withLock { $0 } == 2 }
        #expect(hubA.connectedCount == 1)
        #expect(hubB.connectedCount == 0)
        #expect(agent.endpoint == a)
        agent.stop()
        try await serverA.shutdown()
        try await serverB.shutdown()
        try await group.shutdownGracefully()
    }

    /// Simulated devices on loopback connect from many addresses, 64 devices to each.
    @Test func devicesConnectFromLoopbackAddressesInGroupsOf64() {
        #expect(DeviceAgent.loopbackSource(of: 0) == "127.1.0.0")
        #expect(DeviceAgent.loopbackSource(of: 63) == "127.1.0.0")
        #expect(DeviceAgent.loopbackSource(of: 64) == "127.1.0.1")
        #expect(DeviceAgent.loopbackSource(of: 64 * 256) == "127.1.1.0")
    }

    /// A gateway node of its own (hub and device port, no store) and its endpoint.
    static func node(_ group: any EventLoopGroup) async throws -> (DeviceHub, DeviceServer, DeviceAgent.Endpoint) {
        let hub = DeviceHub(registry: DeviceRegistry(), policy: .init(), logger: Logger(label: "test"))
        let server = DeviceServer(
            hub: hub, listeners: [.init(host: "127.0.0.1", port: 0)], group: group, logger: Logger(label: "test"))
        try await server.start()
        return (hub, server, DeviceAgent.Endpoint(host: "127.0.0.1", port: server.boundAddresses[0].port!))
    }

    /// A device port that upgrades the connection and closes it at once (a gateway's handshake deadline
    /// under a storm of connections does that): the agent keeps trying. Its attaching runs a turn after
    /// the upgrade, so the close could come first, and an agent that waited on the dead channel stopped
    /// for ever (85 of 100,000 devices in Benchmarks/fleet.sh).
    @Test func aConnectionClosedRightAfterTheUpgradeIsTriedAgain() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upgrades = Mutex(0)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let upgrader = NIOWebSocketServerUpgrader(
                        shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture([:]) },
                        upgradePipelineHandler: { channel, _ in
                            upgrades.withLock { $0 += 1 }
                            return channel.close()
                        })
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (upgraders: [upgrader], completionHandler: { _ in }))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let agent = DeviceAgent(
            host: "127.0.0.1", port: server.localAddress!.port!, apps: ["com.example.app"], group: group)
        agent.start()
        try await eventually("the agent came back after each close", seconds: 60) {
            upgrades.withLock { $0 } >= 3
        }
        agent.stop()
        try await server.close()
        try await group.shutdownGracefully()
    }
}

/// Answers /data with a body, /empty with 204, anything else 404.
struct TinyWebServer {
    let channel: any Channel
    var port: Int { channel.localAddress!.port! }

    static func start(group: any EventLoopGroup) async throws -> TinyWebServer {
        let channel = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler())
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        return TinyWebServer(channel: channel)
    }

    final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        var uri = ""

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): uri = head.uri
            case .body: break
            case .end:
                let (status, body): (HTTPResponseStatus, String) =
                    uri == "/data" ? (.ok, "fresh") : uri == "/empty" ? (.noContent, "") : (.notFound, "no")
                let headers = HTTPHeaders([("content-length", "\(body.utf8.count)")])
                context.write(
                    wrapOutboundOut(.head(.init(version: .http1_1, status: status, headers: headers))), promise: nil)
                if !body.isEmpty {
                    context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
                }
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            }
        }
    }
}
