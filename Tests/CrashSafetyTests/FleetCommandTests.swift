import AdminAPI
import ChildProcess
import Crypto
import DeviceAgent
import DeviceProtocol
import Foundation
import GatewayFiles
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import Synchronization
import Testing
import TestSupport
import WallClock

/// `pushgate fleet up --nodes 3` on the CI PostgreSQL (`TEST_POSTGRES_URL`): the three nodes are one
/// gateway (a push POSTed to any node reaches a device on any node), a node killed with SIGKILL loses
/// nothing its neighbours answered 200 for, `fleet status` tells which node is gone, and `fleet down`
/// leaves no process behind.
@Suite(.serialized) struct FleetCommandTests {
    static let topic = "com.example.fleet"

    /// A node as `fleet.json` records it (the part the test reads).
    struct Node {
        var name: String
        var pid: Int32
        var providerH2CPort: Int
        var devicesPort: Int
        var adminPort: Int

        init(_ json: [String: Any]) {
            func int(_ key: String) -> Int { (json[key] as? NSNumber)?.intValue ?? 0 }
            name = json["name"] as? String ?? ""
            pid = Int32(int("pid"))
            providerH2CPort = int("providerH2CPort")
            devicesPort = int("devicesPort")
            adminPort = int("adminPort")
        }
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func threeNodesAreOneGatewayLoseNothingToAKillAndStopWithoutTrace() async throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushgate-fleet-\(UUID().uuidString.prefix(8))").path
        var keep = false
        defer { if !keep { try? FileManager.default.removeItem(atPath: directory) } }
        let data = directory + "/data"
        try FileManager.default.createDirectory(atPath: data, withIntermediateDirectories: true)
        let url = try await TestPostgres.makeDatabase(prefix: "pushgate_fleet")
        let key = P256.Signing.PrivateKey()
        let signer = ProviderTokenSigner(teamID: "FLEETTEAM1", keyID: "FLEETKEY01", privateKey: key)
        // The key in the data directory's registry, which every node of the fleet reads.
        try RegistryFiles.addKey(
            .init(
                team_id: signer.teamID, key_id: signer.keyID, public_key: key.publicKey.pemRepresentation,
                topics: [Self.topic], environment: nil),
            to: data + "/provider-keys.yaml")
        // Fixed ports (fleet up numbers the nodes' ports from them), below the kernel's ephemeral range.
        let base = 20_000 + Int.random(in: 0..<900) * 10
        let settings = GatewayProcess.fleetSettings(
            data: data, base: base,
            [
                "devices.enrolment_secret=\(GatewayProcess.enrolment)", "store.postgres.lease_seconds=2",
                "store.postgres.sweep_seconds=2", "provider.rate.device_token.per_second=0",
                "devices.keep_alive_seconds=3600",
            ])
        func fleet(_ arguments: [String], log: String) async throws -> Int32? {
            let command = try GatewayProcess(arguments: ["fleet"] + arguments + settings, logPath: log)
            return await command.exitStatus(within: 120)
        }

        let upLog = directory + "/up.log"
        let up = try await fleet(["up", "--nodes", "3", "--postgres-url", url], log: upLog)
        let recordPath = data + "/fleet/fleet.json"
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: recordPath)))
        let nodes = ((json as? [String: Any])?["nodes"] as? [[String: Any]] ?? []).map(Node.init)
        // Whatever happens below, no node outlives the test.
        defer { for node in nodes where ChildProcess.exists(node.pid) { kill(node.pid, SIGKILL) } }
        #expect(up == 0, "fleet up: \((try? String(contentsOfFile: upLog, encoding: .utf8)) ?? "")")
        try #require(nodes.count == 3)
        #expect(Set(nodes.map(\.providerH2CPort)).count == 3, "each node its own ports")
        for node in nodes { #expect(ChildProcess.exists(node.pid), "\(node.name) runs") }

        // Two devices on each node, each knowing every node's device port (as `simulate --fleet` makes
        // them): a device whose node goes away connects to the next. What reaches any of them is recorded.
        let received = Shared<Set<String>>([])
        let record: @Sendable (AgentEvent) -> Void = { event in
            if case .delivered(let delivery, _) = event { _ = received.value.withLock { $0.insert(delivery.apnsID) } }
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let endpoints = nodes.map { DeviceAgent.Endpoint(host: "127.0.0.1", port: $0.devicesPort) }
        var agents: [[DeviceAgent]] = []
        for index in nodes.indices {
            agents.append(
                (0..<2).map { _ in
                    DeviceAgent(
                        endpoints: endpoints, first: index, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
                        behaviour: .prompt, group: group, onEvent: record)
                })
        }
        for agent in agents.joined() { agent.start() }
        defer { for agent in agents.joined() { agent.stop() } }
        try await eventually("every device installed the app") {
            agents.joined().allSatisfy { $0.tokens[Self.topic] != nil }
        }
        let tokens = agents.map { $0.map { $0.tokens[Self.topic]! } }
        try await eventually("every node knows every token") {
            for node in nodes {
                for token in tokens.joined() {
                    let found = try? await AdminClient.get(
                        host: "127.0.0.1", port: node.adminPort, path: "/v1/tokens/\(token)", token: nil)
                    if found?.status != 200 { return false }
                }
            }
            return true
        }

        let authorization = "bearer " + (try signer.token(issuedAt: UnixTime.now()))
        func post(through node: Node, to token: String) async throws -> (status: Int, id: String) {
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: node.providerH2CPort, security: .cleartext, group: group)
            defer { Task { await client.close() } }
            let id = UUID().uuidString.lowercased()
            let response = try await client.post(
                path: "/3/device/\(token)",
                headers: [("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id)],
                body: Array(#"{"aps":{"alert":"fleet"}}"#.utf8))
            return (response.status, id)
        }

        // An alert for every device through every node: 18 pushes, each reaching its device.
        var sent: [String] = []
        for node in nodes {
            for token in tokens.joined() {
                let answer = try await post(through: node, to: token)
                #expect(answer.status == 200)
                sent.append(answer.id)
            }
        }
        try await eventually("every alert, POSTed to any node, reached its device on any node") {
            received.value.withLock { $0.isSuperset(of: sent) }
        }

        // Node 1 is killed while alerts for its devices go to node 3; its devices move on to the other
        // nodes by themselves (each to one of them at random).
        let (first, second, third) = (nodes[0], nodes[1], nodes[2])
        var afterKill: [String] = []
        for n in 0..<20 {
            if n == 5 { kill(first.pid, SIGKILL) }
            let answer = try await post(through: third, to: tokens[0][n % 2])
            if answer.status == 200 { afterKill.append(answer.id) }
        }
        #expect(afterKill.count == 20, "node 3 answered every push 200")
        try await eventually("node 1's devices moved to the other nodes") {
            agents[0].allSatisfy { $0.endpoint != endpoints[0] }
        }
        // Every push answered 200 reaches its device, or was replaced by a newer one for the same app
        // while the device was away (Apple keeps only the newest for an offline device).
        func unaccounted() async -> [String] {
            let seen = received.value.withLock { $0 }
            var left: [String] = []
            for id in afterKill where !seen.contains(id) {
                let lookup = try? await AdminClient.get(
                    host: "127.0.0.1", port: third.adminPort, path: "/v1/notifications/\(id)", token: nil)
                let json = lookup.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) }
                let rule = ((json as? [String: Any])?["stored"] as? [String: Any])?["rule"] as? String
                if rule != "coalesced_newer_push" { left.append(id) }
            }
            return left
        }
        try await eventually("every push answered 200 after the kill reached its device") {
            await unaccounted().isEmpty
        }
        let missing = await unaccounted()
        if !missing.isEmpty { keep = true }
        #expect(missing.isEmpty, "lost \(missing.count) of \(afterKill.count); logs in \(data)/fleet")

        // fleet status tells the dead node from the live ones.
        let statusLog = directory + "/status.log"
        #expect(try await fleet(["status", "--sample-seconds", "0.2"], log: statusLog) == 0)
        let status = (try? String(contentsOfFile: statusLog, encoding: .utf8)) ?? ""
        #expect(status.contains("| node-1 | \(first.pid) | stopped |"), "\(status)")
        #expect(status.contains("| node-2 | \(second.pid) | running | yes |"), "\(status)")
        #expect(status.contains("capacity: ") && status.contains("on 2 nodes"), "\(status)")

        // fleet down: the live nodes drain and exit; nothing is left behind, and the record is gone.
        for agent in agents.joined() { agent.stop() }
        let downLog = directory + "/down.log"
        #expect(try await fleet(["down"], log: downLog) == 0)
        let down = (try? String(contentsOfFile: downLog, encoding: .utf8)) ?? ""
        #expect(down.contains("node-2 (pid \(second.pid)): stopped"), "\(down)")
        #expect(down.contains("node-1 (pid \(first.pid)): was not running"), "\(down)")
        for node in nodes { #expect(!ChildProcess.exists(node.pid), "\(node.name) is still running") }
        #expect(!FileManager.default.fileExists(atPath: recordPath))
        await TestPostgres.dropDatabase(url)
    }
}
