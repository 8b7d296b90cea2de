import AdminAPI
import ChildProcess
import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import NIOCore
import NIOPosix
import ProviderClient
import Synchronization
import ProviderAuth
import PushModel
import Testing
import TestSupport
import WallClock

/// The node links: a push POSTed to one node for a device on another crosses the link between them, not
/// the database; when the link is cut mid-stream, every push answered 200 still reaches the device, once.
extension TwoNodeTests {
    /// A port nothing listens on now (the kernel's pick, released at once).
    static func freePort() async throws -> Int {
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .bind(host: "127.0.0.1", port: 0).get()
        let port = channel.localAddress?.port ?? 0
        try await channel.close()
        return port
    }

    /// Until `node` knows `token` (its registration's notice heard) and has a link to node B.
    func waitUntilLinked(_ node: Node, knowing token: String) async throws {
        try await eventually("\(node.name) knows the token and links to node-b") {
            let known = try? await AdminClient.get(
                host: "127.0.0.1", port: node.admin, path: "/v1/tokens/\(token)", token: nil)
            let linked = await counters(node)?.linkedNodes
            return known?.status == 200 && linked == ["node-b"]
        }
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"),
        .enabled(
            if: ["/usr/bin/socat", "/bin/socat"].contains(where: FileManager.default.isExecutableFile),
            "needs socat (.ci/run installs it)"))
    func aLinkCutMidStreamLosesNoPushAndDeliversEachOnce() async throws {
        let cluster = try await Cluster.prepare("links")
        defer { cluster.removeFiles() }
        // Node B takes routed pushes through a relay the test cuts: one connection, then it exits.
        let relayPort = try await Self.freePort()
        let settings = ["provider.rate.device_token.per_second=0", "store.postgres.sweep_seconds=2"]
        let a = try await startNode("node-a", on: cluster, settings: settings)
        let b = try await startNode(
            "node-b", on: cluster, settings: settings + ["store.postgres.route_address=http://127.0.0.1:\(relayPort)"])
        defer {
            for node in [a, b] { node.process.kill(SIGKILL) }
        }
        for node in [a, b] { try await waitUntilReady(adminPort: node.admin) }
        let relay: @Sendable () throws -> ChildProcess = {
            try ChildProcess(
                "socat", ["TCP-LISTEN:\(relayPort),bind=127.0.0.1,reuseaddr", "TCP:127.0.0.1:\(b.provider)"])
        }
        let first = try relay()
        let again = Shared<ChildProcess?>(nil)
        defer {
            first.kill(SIGKILL)
            again.value.withLock { $0 }?.kill(SIGKILL)
        }

        // A device on node B; every delivery it receives is counted by apns-id.
        let received = Shared<[String: Int]>([:])
        let group = MultiThreadedEventLoopGroup.singleton
        let device = DeviceAgent(
            host: "127.0.0.1", port: b.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
            behaviour: .prompt, group: group,
            onEvent: { event in
                if case .delivered(let delivery, _) = event {
                    received.value.withLock { $0[delivery.apnsID, default: 0] += 1 }
                }
            })
        device.start()
        defer { device.stop() }
        try await eventually("the device installed the app on node B") { device.tokens[Self.topic] != nil }
        let token = try #require(device.tokens[Self.topic])
        try await waitUntilLinked(a, knowing: token)

        // Alerts POSTed to A from four senders; the link is cut after 100 answers and opened again after 200.
        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: a.provider, security: .cleartext, group: group)
        let accepted = Shared<[String]>([])
        await withTaskGroup(of: Void.self) { senders in
            for sender in 0..<4 {
                senders.addTask {
                    for n in 0..<100 {
                        let id = UUID().uuidString.lowercased()
                        guard
                            let response = try? await client.post(
                                path: "/3/device/\(token)",
                                headers: [
                                    ("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id),
                                ], body: Array(#"{"aps":{"alert":"\#(sender) \#(n)"}}"#.utf8))
                        else { return }
                        guard response.status == 200 else { continue }
                        let count = accepted.value.withLock {
                            $0.append(id)
                            return $0.count
                        }
                        if count == 100 { first.kill(SIGKILL) }
                        if count == 200 { again.value.withLock { $0 = try? relay() } }
                    }
                }
            }
        }
        await client.close()
        let answered = accepted.value.withLock { $0 }
        #expect(answered.count == 400, "node A answered every push 200 (\(answered.count))")
        try await eventually("every push answered 200 reached the device") {
            let seen = received.value.withLock { $0 }
            return answered.allSatisfy { seen[$0] != nil }
        }
        let twice = received.value.withLock { $0.filter { $0.value > 1 } }
        #expect(twice.isEmpty, "delivered more than once: \(twice.prefix(3))")
        // Both ways were taken: the link, and the store while it was cut.
        let routes = await counters(a)?.hub
        #expect(routes?.routedOut == 400)
        #expect((routes?.routedThroughStore ?? 0) > 0, "no push went through the store while the link was cut")
        #expect((routes?.routedThroughStore ?? 400) < 400, "no push crossed the link")
        for node in [a, b] { node.process.kill(SIGTERM) }
        for node in [a, b] {
            #expect(await node.process.exitStatus(within: 30) == 0, "\(node.name) did not stop cleanly")
        }
        await TestPostgres.dropDatabase(cluster.url)
    }

    /// A push POSTed to node A for a device node B runs is stored by B with B's decision before A answers
    /// 200, and refused as B would refuse it: the device's queue on B is full, so A answers 429.
    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aRoutedPushIsStoredByItsOwnerBeforeIts200AndRefusedAsTheOwnerWould() async throws {
        let cluster = try await Cluster.prepare("owner")
        defer { cluster.removeFiles() }
        let settings = ["devices.delivery_window=1", "devices.max_waiting=3"]
        let a = try await startNode("node-a", on: cluster, settings: settings)
        let b = try await startNode("node-b", on: cluster, settings: settings)
        defer {
            for node in [a, b] { node.process.kill(SIGKILL) }
        }
        for node in [a, b] { try await waitUntilReady(adminPort: node.admin) }

        // A device registers on B and installs the app, then comes back on a raw socket that never
        // acknowledges: what is written to it stays waiting.
        let group = MultiThreadedEventLoopGroup.singleton
        let agent = DeviceAgent(
            host: "127.0.0.1", port: b.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
            behaviour: .prompt, group: group)
        agent.start()
        try await eventually("the device installed the app on node B") { agent.tokens[Self.topic] != nil }
        let token = try #require(agent.tokens[Self.topic])
        let identity = try #require(agent.identity)
        agent.stop()
        try await eventually("node B saw the device leave") { await counters(b)?.connectedDevices == 0 }
        let raw = try await RawDevice(
            port: b.devices, deviceID: identity.deviceID, secret: identity.secret, group: group)
        defer { raw.channel.close(promise: nil) }
        try await eventually("the device is back on node B") { await counters(b)?.connectedDevices == 1 }
        try await waitUntilLinked(a, knowing: token)

        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: a.provider, security: .cleartext, group: group)
        defer { Task { await client.close() } }
        func post(_ n: Int) async throws -> (id: String, response: ProviderClient.Response) {
            let id = String(format: "00000000-0000-4000-8000-%012d", n)
            let response = try await client.post(
                path: "/3/device/\(token)",
                headers: [("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id)],
                body: Array(#"{"aps":{"alert":"\#(n)"}}"#.utf8))
            return (id, response)
        }
        // Three fill the device's queue on B (one written, two waiting); each is in the store with B's
        // decision when A answers 200.
        for n in 1...3 {
            let (id, response) = try await post(n)
            #expect(response.status == 200)
            let lookup = try await AdminClient.get(
                host: "127.0.0.1", port: a.admin, path: "/v1/notifications/\(id)", token: nil)
            let json = try JSONSerialization.jsonObject(with: Data(lookup.body.utf8)) as? [String: Any]
            let rule = (json?["stored"] as? [String: Any])?["rule"] as? String
            #expect(rule != nil, "push \(n) stored without B's decision at its 200: \(lookup.body)")
        }
        let refused = try await post(4)
        #expect(refused.response.status == 429)
        #expect(refused.response.bodyText == #"{"reason":"TooManyRequests"}"#)
        try await eventually("the first push was written to the device") { raw.received.count == 1 }

        let (fromA, onB) = (await counters(a)?.hub, await counters(b)?.hub)
        #expect(fromA?.routedOut == 4 && fromA?.routedThroughStore == 0, "A: \(String(describing: fromA))")
        #expect(onB?.routedIn == 3 && onB?.refusedQueueFull == 1, "B: \(String(describing: onB))")
        for node in [a, b] { node.process.kill(SIGTERM) }
        for node in [a, b] {
            #expect(await node.process.exitStatus(within: 30) == 0, "\(node.name) did not stop cleanly")
        }
        await TestPostgres.dropDatabase(cluster.url)
    }
}
