import AdminAPI
import DeviceAgent
import DeviceProtocol
import Foundation
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import Synchronization
import Testing
import TestSupport
import WallClock

extension TwoNodeTests {
    /// Two nodes on hosts of their own (network namespaces, each its own address; nothing shared over
    /// loopback), on one PostgreSQL reached over the network: a push POSTed to one node reaches a device
    /// connected to the other, and once the device moves to the other node, a push POSTed to the first
    /// reaches it there.
    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"),
        .enabled(if: TestHosts.available, "needs root, ip (iproute2) and socat to make hosts"))
    func nodesOnHostsOfTheirOwnReachEachOthersDevices() async throws {
        let cluster = try await Cluster.prepare("hosts")
        defer { cluster.removeFiles() }
        var hosts = TestHosts()
        defer { hosts.remove() }
        try hosts.makeBridge()
        let url = try hosts.relayDatabase(cluster.url)
        var nodes: [Node] = []
        defer {
            for node in nodes { node.process.kill(SIGKILL) }
            // A node that failed says why (its log goes with the temporary directory).
            for node in nodes {
                let log = (try? String(contentsOfFile: node.log, encoding: .utf8)) ?? ""
                if log.contains("error") || log.contains("Error") { print("\(node.name) log:\n\(log.suffix(3000))") }
            }
        }
        for (name, address) in [("node-a", "10.203.57.2"), ("node-b", "10.203.57.3")] {
            let namespace = try hosts.makeHost(name, address: address)
            nodes.append(
                try await startNode(
                    name, on: cluster, databaseURL: url, host: (namespace, address),
                    settings: ["store.postgres.sweep_seconds=1"]))
        }
        let (a, b) = (nodes[0], nodes[1])
        for node in nodes { try await waitUntilReady(host: node.host, adminPort: node.admin, token: node.adminToken) }

        let received = Shared<Set<String>>([])
        let record: @Sendable (AgentEvent) -> Void = { event in
            if case .delivered(let delivery, _) = event { received.value.withLock { _ = $0.insert(delivery.apnsID) } }
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let onB = DeviceAgent(
            host: b.host, port: b.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
            behaviour: .prompt, group: group, onEvent: record)
        onB.start()
        try await eventually("the device installed the app on node B") { onB.tokens[Self.topic] != nil }
        let token = try #require(onB.tokens[Self.topic])
        let identity = try #require(onB.identity)

        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
        func alert(to node: Node, _ number: Int) async throws -> (id: String, status: Int) {
            let id = String(format: "00000000-0000-4000-8000-%012d", number)
            let client = try await ProviderClient.connect(
                host: node.host, port: node.provider, security: .cleartext, group: group)
            defer { Task { await client.close() } }
            let response = try await client.post(
                path: "/3/device/\(token)",
                headers: [
                    ("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id),
                    ("apns-push-type", "alert"), ("apns-priority", "10"),
                ], body: Array(#"{"aps":{"alert":"hello"}}"#.utf8))
            return (id, response.status)
        }

        // Node A hears of the token through the database; an alert POSTed to A reaches the device on B.
        try await eventually("node A knows the token") {
            (try? await AdminClient.get(host: a.host, port: a.admin, path: "/v1/tokens/\(token)", token: a.adminToken))?
                .status == 200
        }
        let first = try await alert(to: a, 1)
        #expect(first.status == 200)
        try await eventually("the alert POSTed to node A reached the device on node B") {
            received.value.withLock { $0.contains(first.id) }
        }

        // The device moves to node A; an alert POSTed to B reaches it there.
        onB.stop()
        let onA = DeviceAgent(
            host: a.host, port: a.devices, apps: [Self.topic], identity: identity, behaviour: .prompt, group: group,
            onEvent: record)
        onA.start()
        defer { onA.stop() }
        try await eventually("node A runs the device") { await counters(a)?.connectedDevices == 1 }
        let second = try await alert(to: b, 2)
        #expect(second.status == 200)
        try await eventually("the alert POSTed to node B reached the device on node A") {
            received.value.withLock { $0.contains(second.id) }
        }
        for node in nodes { node.process.kill(SIGTERM) }
        for node in nodes {
            let status = await node.process.exitStatus(within: 30)
            #expect(status == 0, "\(node.name) exit status \(String(describing: status)); log: \(node.log)")
        }
        await TestPostgres.dropDatabase(cluster.url)
    }
}
