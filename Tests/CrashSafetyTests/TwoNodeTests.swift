import Crypto
import DeviceAgent
import Foundation
import Gateway
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import TestSupport
import Testing

/// Two `pushgate serve` processes on one PostgreSQL database (`TEST_POSTGRES_URL`, which `.ci/run`
/// sets): a push POSTed to one node reaches a device connected to the other; the device's budget and
/// held pushes follow it when it moves to the other node; nothing is lost on the way.
@Suite(.serialized) struct TwoNodeTests {
    static let topic = "com.example.nodes"

    struct Node {
        let name: String
        let process: GatewayProcess
        let provider: Int
        let devices: Int
        let admin: Int
        let log: String
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aDeviceIsReachedAndKeepsItsStateOnEitherNode() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushgate-nodes-\(UUID().uuidString.prefix(8))").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = try await TestPostgres.makeDatabase(prefix: "pushgate_nodes")

        let key = P256.Signing.PrivateKey()
        let signer = ProviderTokenSigner(teamID: "NODESTEAM1", keyID: "NODESKEY01", privateKey: key)
        var nodes: [Node] = []
        for (index, name) in ["node-a", "node-b"].enumerated() {
            let data = directory + "/" + name
            try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
            try RegistryFiles.addKey(
                .init(
                    team_id: signer.teamID, key_id: signer.keyID, public_key: key.publicKey.pemRepresentation,
                    topics: [Self.topic], environment: nil),
                to: data + "/provider-keys.yaml")
            let log = data + "/gateway.log"
            let process = try GatewayProcess(
                arguments: [
                    "serve", "--set", "data_dir=\(data)", "--set", "store.backend=postgres",
                    "--set", "store.postgres.url=\(url)", "--set", "store.postgres.node_id=\(name)",
                    // Ports the kernel picks, read back from the log: no race with other tests for them.
                    "--set", "provider.tls.enabled=false", "--set", "provider.h2c.port=0",
                    "--set", "devices.port=0", "--set", "devices.tls.enabled=false", "--set", "admin.port=0",
                    "--set", "log.level=notice", "--set", "log.modules=provider=info,devices=info,admin=info",
                    "--set", "policy.budget.capacity=2",
                    // Keep-alives release held pushes: at once on A, never during the test on B.
                    "--set", "devices.keep_alive_seconds=\(index == 0 ? 1 : 3600)",
                ], logPath: log)
            let ports = try await process.boundPorts(logPath: log)
            nodes.append(
                Node(
                    name: name, process: process, provider: ports.provider, devices: ports.devices, admin: ports.admin,
                    log: log))
        }
        defer {
            for node in nodes { node.process.kill(SIGKILL) }
            // A node that failed says why (its log goes with the temporary directory).
            for node in nodes {
                let log = (try? String(contentsOfFile: node.log, encoding: .utf8)) ?? ""
                if log.contains("error") || log.contains("Fatal") { print("\(node.name) log:\n\(log.suffix(3000))") }
            }
        }
        let (a, b) = (nodes[0], nodes[1])
        for node in nodes { try await waitUntilReady(adminPort: node.admin) }

        // A device registers on node B and installs the app; what it receives is recorded with its rule.
        let received = Shared<[String: String]>([:])
        let record: @Sendable (AgentEvent) -> Void = { event in
            if case .delivered(let delivery, _) = event {
                received.value.withLock { $0[delivery.apnsID] = delivery.rule }
            }
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let onB = DeviceAgent(
            host: "127.0.0.1", port: b.devices, apps: [Self.topic], behaviour: .prompt, group: group, onEvent: record)
        onB.start()
        try await eventually("the device installed the app on node B") { onB.tokens[Self.topic] != nil }
        let token = try #require(onB.tokens[Self.topic])
        let identity = try #require(onB.identity)

        let authorization = "bearer " + (try signer.token(issuedAt: UnixTime.now()))
        func post(to node: Node, id: String, silent: Bool) async throws -> Int {
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: node.provider, security: .cleartext, group: group)
            defer { Task { await client.close() } }
            let body = silent ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"hello"}}"#
            let response = try await client.post(
                path: "/3/device/\(token)",
                headers: [
                    ("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id),
                    ("apns-push-type", silent ? "background" : "alert"), ("apns-priority", silent ? "5" : "10"),
                ], body: Array(body.utf8))
            return response.status
        }
        func id(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012d", n) }

        // Node A learns of the token from B's notice; an alert POSTed to A reaches the device on B.
        try await eventually("node A knows the token") {
            (try? await AdminClient.get(host: "127.0.0.1", port: a.admin, path: "/v1/tokens/\(token)", token: nil))?
                .status == 200
        }
        #expect(try await post(to: a, id: id(1), silent: false) == 200)
        try await eventually("the alert sent to node A reached the device on node B") {
            received.value.withLock { $0[id(1)] } != nil
        }

        // Three silent pushes through A, run by B's policy: two wake the app, the third is over budget.
        for n in 2...4 { #expect(try await post(to: a, id: id(n), silent: true) == 200) }
        try await eventually("two silent pushes woke the app") {
            received.value.withLock { $0[id(2)] == "on_budget" && $0[id(3)] == "on_budget" }
        }

        // The device moves to node A before a keep-alive releases the third (it stops at once).
        onB.stop()
        try await eventually("node B saw the device leave") {
            let counters = try? await AdminClient.get(
                host: "127.0.0.1", port: b.admin, path: "/v1/counters", token: nil)
            let json = counters.flatMap {
                try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) as? [String: Any]
            }
            return json?["connectedDevices"] as? Int == 0
        }
        let onA = DeviceAgent(
            host: "127.0.0.1", port: a.devices, apps: [Self.topic], identity: identity, behaviour: .prompt,
            group: group,
            onEvent: record)
        onA.start()
        defer { onA.stop() }

        // Node A claimed it with its held push and its spent budget: the held one rides on the
        // reconnection, and a silent push sent now (through B, so routed to A) is over budget too.
        try await eventually("the push held on node B reached the device on node A") {
            received.value.withLock { $0[id(4)] } != nil
        }
        #expect(received.value.withLock { $0[id(4)] } == "released_on_reconnect")
        #expect(try await post(to: b, id: id(5), silent: true) == 200)
        try await eventually("the silent push sent through B reached the device on A") {
            received.value.withLock { $0[id(5)] } != nil
        }
        #expect(
            received.value.withLock { $0[id(5)] } == "released_piggyback_keep_alive",
            "over budget on node A: the budget spent on node B came along")

        // Both nodes lose the connection they listen on. An alert sent through B meanwhile is routed to A
        // with a notice nobody hears; A reads it back from the database once it listens again.
        let cut = try await TestPostgres.integer(
            url,
            """
            SELECT COUNT(pg_terminate_backend(pid)) FROM pg_stat_activity
            WHERE datname = current_database() AND query LIKE 'LISTEN%'
            """)
        #expect(cut == 2)
        #expect(try await post(to: b, id: id(6), silent: false) == 200)
        try await eventually("the alert routed while node A was not listening reached the device") {
            received.value.withLock { $0[id(6)] } != nil
        }

        // Both stop cleanly.
        for node in nodes { node.process.kill(SIGTERM) }
        for node in nodes {
            let status = await node.process.exitStatus(within: 30)
            #expect(status == 0, "\(node.name) exit status \(String(describing: status)); log: \(node.log)")
        }
        await TestPostgres.dropDatabase(url)
    }

    func waitUntilReady(adminPort: Int) async throws {
        try await eventually("the gateway is ready") {
            (try? await AdminClient.get(host: "127.0.0.1", port: adminPort, path: "/ready", token: nil))?.status == 200
        }
    }
}
