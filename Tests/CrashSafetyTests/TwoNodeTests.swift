import AdminAPI
import Crypto
import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import Gateway
import GatewayFiles
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import Synchronization
import Testing
import TestSupport
import WallClock

/// Two `pushgate serve` processes on one PostgreSQL database (`TEST_POSTGRES_URL`, which `.ci/run`
/// sets): a push POSTed to one node reaches a device connected to the other; the device's budget and
/// held pushes follow it when it moves to the other node; nothing is lost on the way.
@Suite(.serialized) struct TwoNodeTests {
    static let topic = "com.example.nodes"

    struct Node {
        let name: String
        /// The address its listeners are bound to.
        let host: String
        /// The admin API's token: a node bound to another address than loopback needs one.
        let adminToken: String?
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
        let cluster = try await Cluster.prepare("nodes")
        defer { cluster.removeFiles() }
        var nodes: [Node] = []
        for (index, name) in ["node-a", "node-b"].enumerated() {
            // Keep-alives release held pushes: at once on A, never during the test on B. A takes no links
            // (its pushes come through the database, a notice each); B takes them over its link.
            nodes.append(
                try await startNode(
                    name, on: cluster,
                    settings: [
                        "policy.budget.capacity=2", "devices.keep_alive_seconds=\(index == 0 ? 1 : 3600)",
                        "store.postgres.sweep_seconds=1",
                    ] + (index == 0 ? ["store.postgres.route_address=off"] : [])))
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
            host: "127.0.0.1", port: b.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
            behaviour: .prompt,
            group: group, onEvent: record)
        onB.start()
        try await eventually("the device installed the app on node B") { onB.tokens[Self.topic] != nil }
        let token = try #require(onB.tokens[Self.topic])
        let identity = try #require(onB.identity)

        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
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
        try await eventually("node A links to node B") {
            let linked = await counters(a)?.linkedNodes
            return linked == ["node-b"]
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

        // B decided the third while the device was connected: held over budget (not yet offline).
        func rules(of id: String, on node: Node) async throws -> [String] {
            let lookup = try await AdminClient.get(
                host: "127.0.0.1", port: node.admin, path: "/v1/notifications/\(id)", token: nil)
            let json = try JSONSerialization.jsonObject(with: Data(lookup.body.utf8)) as? [String: Any]
            return (json?["steps"] as? [[String: Any]] ?? []).compactMap { $0["rule"] as? String }
        }
        try await eventually("node B held the third over budget") {
            (try? await rules(of: id(4), on: b))?.contains("held_over_budget") == true
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

        // Node A claimed it with its held push and its spent budget. The push held over budget keeps its
        // reason: the reconnection is no delivery window (it hands over only what was kept while the
        // device was away), so it waits for A's next keep-alive (every second here) — and a silent push
        // sent now (through B, so routed to A) is over budget too.
        try await eventually("the push held on node B reached the device on node A") {
            received.value.withLock { $0[id(4)] } != nil
        }
        #expect(received.value.withLock { $0[id(4)] } == "released_piggyback_keep_alive")
        // Each node's lookup shows its part: B held it over budget, A released it with a keep-alive.
        let onNodeB = try await rules(of: id(4), on: b)
        let onNodeA = try await rules(of: id(4), on: a)
        #expect(onNodeB == ["held_over_budget"], "B's lookup: \(onNodeB)")
        #expect(onNodeA.last == "released_piggyback_keep_alive", "A's lookup: \(onNodeA)")
        #expect(!(onNodeA + onNodeB).contains("released_on_reconnect"))
        #expect(try await post(to: b, id: id(5), silent: true) == 200)
        try await eventually("the silent push sent through B reached the device on A") {
            received.value.withLock { $0[id(5)] } != nil
        }
        #expect(
            received.value.withLock { $0[id(5)] } == "released_piggyback_keep_alive",
            "over budget on node A: the budget spent on node B came along")

        // In normal operation the sweep finds no push that a policy left undecided. Every push routed to
        // B crossed its link; every push routed to A (which takes no links) went through the database.
        for node in nodes {
            #expect(await counters(node)?.hub.sweptUndecided == 0, "\(node.name) swept undecided pushes")
        }
        let (fromA, fromB) = (await counters(a)?.hub, await counters(b)?.hub)
        #expect(fromA?.routedOut == 4 && fromA?.routedThroughStore == 0, "A: \(String(describing: fromA))")
        // B handed A the push it held (4) and routed one (5): both through the database.
        #expect(fromB?.routedOut == 1 && fromB?.routedThroughStore == 2, "B: \(String(describing: fromB))")

        // Both nodes lose the connection they listen on. An alert sent through B meanwhile is routed to A
        // with a notice nobody hears; A reads it back from the database once it listens again.
        let cut = try await TestPostgres.integer(
            cluster.url,
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
        await TestPostgres.dropDatabase(cluster.url)
    }

    /// Broadcasts with two nodes: a channel created on one node is known to the other; devices on either
    /// subscribe; a broadcast POSTed to either node reaches the subscribers on both.
    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aBroadcastPostedToEitherNodeReachesSubscribersOnBoth() async throws {
        let cluster = try await Cluster.prepare("broadcast")
        defer { cluster.removeFiles() }
        // Node A serves the channel-management API too.
        let a = try await startNode(
            "node-a", on: cluster,
            settings: [
                "channels.h2c.enabled=true", "channels.h2c.port=0",
                "log.modules=provider=info,devices=info,admin=info,channels=info",
            ])
        let b = try await startNode("node-b", on: cluster, settings: [])
        defer {
            a.process.kill(SIGKILL)
            b.process.kill(SIGKILL)
        }
        for node in [a, b] { try await waitUntilReady(adminPort: node.admin) }
        let group = MultiThreadedEventLoopGroup.singleton
        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
        let channel = try await createChannel(on: a, policy: 1, authorization: authorization)

        let received = Shared<[Int: [String]]>([:])
        let agents = [a, b].enumerated().map { index, node in
            DeviceAgent(
                host: "127.0.0.1", port: node.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
                behaviour: .prompt, group: group,
                onEvent: { event in
                    if case .delivered(let delivery, _) = event, delivery.channel == channel {
                        received.value.withLock { $0[index, default: []].append(delivery.apnsID) }
                    }
                })
        }
        for agent in agents { agent.start() }
        defer { for agent in agents { agent.stop() } }
        try await eventually("the devices installed the app") { agents.allSatisfy { $0.tokens.count == 1 } }
        try await subscribe(agents, to: channel)
        let client = [
            try await ProviderClient.connect(host: "127.0.0.1", port: a.provider, security: .cleartext, group: group),
            try await ProviderClient.connect(host: "127.0.0.1", port: b.provider, security: .cleartext, group: group),
        ]
        for (n, sender) in [1, 0].enumerated() {
            let id = String(format: "00000000-0000-4000-8000-%012d", n + 1)
            let answer = try await client[sender].post(
                path: "/4/broadcasts/apps/\(Self.topic)",
                headers: [
                    ("authorization", authorization), ("apns-channel-id", channel), ("apns-push-type", "liveactivity"),
                    ("apns-priority", "10"), ("apns-request-id", id),
                ],
                body: Array(
                    #"{"aps":{"event":"update","timestamp":\#(1_800_000_000 + n),"content-state":{"n":\#(n)}}}"#.utf8))
            #expect(answer.status == 200)
            try await eventually("the broadcast POSTed to node \(sender == 0 ? "A" : "B") reached both devices") {
                received.value.withLock { $0[0]?.contains(id) == true && $0[1]?.contains(id) == true }
            }
        }
        for connection in client { await connection.close() }
        #expect(received.value.withLock { $0[0]?.count == 2 && $0[1]?.count == 2 }, "each once")
        for node in [a, b] { node.process.kill(SIGTERM) }
        for node in [a, b] { _ = await node.process.exitStatus(within: 30) }
        await TestPostgres.dropDatabase(cluster.url)
    }

    /// A node killed just after it answered a broadcast 200, its fan-out under way: its subscribers come
    /// back to the other node, which claims them with their cursors and gives each the broadcast it had
    /// not acknowledged (a No-Message-Stored channel: within the reconnect grace) — every subscriber that
    /// was connected gets it.
    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aBroadcastOutlivesTheNodeThatWasFanningItOut() async throws {
        let cluster = try await Cluster.prepare("fanout-kill")
        defer { cluster.removeFiles() }
        let settings = ["store.postgres.lease_seconds=2", "devices.keep_alive_seconds=3600"]
        let a = try await startNode(
            "node-a", on: cluster, settings: settings)
        let b = try await startNode(
            "node-b", on: cluster,
            settings: settings + [
                "channels.h2c.enabled=true", "channels.h2c.port=0",
                "log.modules=provider=info,devices=info,admin=info,channels=info",
            ])
        defer {
            a.process.kill(SIGKILL)
            b.process.kill(SIGKILL)
        }
        for node in [a, b] { try await waitUntilReady(adminPort: node.admin) }
        let group = MultiThreadedEventLoopGroup.singleton
        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
        let channel = try await createChannel(on: b, policy: 0, authorization: authorization)

        // 500 subscribers on node A (a fan-out that may outlast the 200's way to the client); each knows
        // node B too (where it goes when A is gone).
        let received = Shared<[String: Set<Int>]>([:])
        let endpoints = [a, b].map { DeviceAgent.Endpoint(host: "127.0.0.1", port: $0.devices) }
        let agents = (0..<500).map { index in
            DeviceAgent(
                endpoints: endpoints, first: 0, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
                behaviour: .prompt, group: group,
                onEvent: { event in
                    if case .delivered(let delivery, _) = event, delivery.channel == channel {
                        _ = received.value.withLock { $0[delivery.apnsID, default: []].insert(index) }
                    }
                })
        }
        for agent in agents { agent.start() }
        defer { for agent in agents { agent.stop() } }
        try await eventually("the devices installed the app on node A") { agents.allSatisfy { $0.tokens.count == 1 } }
        try await subscribe(agents, to: channel)

        // Broadcast through node A, which runs every subscriber; killed as soon as it answers 200.
        let id = "00000000-0000-4000-8000-00000000beef"
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: a.provider, security: .cleartext, group: group)
        let answer = try await client.post(
            path: "/4/broadcasts/apps/\(Self.topic)",
            headers: [
                ("authorization", authorization), ("apns-channel-id", channel), ("apns-push-type", "liveactivity"),
                ("apns-priority", "10"), ("apns-expiration", "0"), ("apns-request-id", id),
            ], body: Array(#"{"aps":{"event":"update","timestamp":1800000000,"content-state":{"n":1}}}"#.utf8))
        a.process.kill(SIGKILL)
        await client.close()
        #expect(answer.status == 200)
        let before = received.value.withLock { $0[id]?.count ?? 0 }
        try await eventually("every subscriber has the broadcast, through node B", seconds: 60) {
            received.value.withLock { $0[id]?.count } == agents.count
        }
        print("broadcast acknowledged on node A before its kill: \(before) of \(agents.count)")
        for agent in agents { agent.stop() }
        b.process.kill(SIGTERM)
        _ = await b.process.exitStatus(within: 30)
        await TestPostgres.dropDatabase(cluster.url)
    }

    /// Node A is killed with SIGKILL while pushes for its devices flow into node B: B takes A's devices
    /// over when A's lease goes stale (or claims each as it reconnects), and every push answered 200
    /// reaches its device once the devices reconnect to B.
    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        .enabled(if: TestPostgres.url != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aKilledNodesDevicesAreTakenOverWithoutLoss() async throws {
        let cluster = try await Cluster.prepare("kill")
        // Kept when a push is lost: the nodes' logs are the evidence.
        var keepLogs = false
        defer { if !keepLogs { cluster.removeFiles() } }
        let settings = [
            "store.postgres.lease_seconds=2", "store.postgres.sweep_seconds=2",
            "provider.rate.device_token.per_second=0", "devices.keep_alive_seconds=3600",
        ]
        let a = try await startNode(
            "node-a", on: cluster, settings: settings)
        let b = try await startNode(
            "node-b", on: cluster, settings: settings)
        defer {
            a.process.kill(SIGKILL)
            b.process.kill(SIGKILL)
        }
        for node in [a, b] { try await waitUntilReady(adminPort: node.admin) }

        // Six devices on node A (it owns them); what reaches them, on either node, is recorded. The sixth
        // does not come back after the kill: B takes it over when A's lease goes stale.
        let received = Shared<Set<String>>([])
        let record: @Sendable (AgentEvent) -> Void = { event in
            if case .delivered(let delivery, _) = event { _ = received.value.withLock { $0.insert(delivery.apnsID) } }
        }
        let group = MultiThreadedEventLoopGroup.singleton
        let onA = (0..<6).map { _ in
            DeviceAgent(
                host: "127.0.0.1", port: a.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
                behaviour: .prompt, group: group, onEvent: record)
        }
        for agent in onA { agent.start() }
        try await eventually("the devices installed the app on node A") { onA.allSatisfy { $0.tokens.count == 1 } }
        let tokens = onA.compactMap { $0.tokens[Self.topic] }
        let identities = onA.compactMap(\.identity)
        try await eventually("node B knows the tokens") {
            for token in tokens {
                let found = try? await AdminClient.get(
                    host: "127.0.0.1", port: b.admin, path: "/v1/tokens/\(token)", token: nil)
                if found?.status != 200 { return false }
            }
            return true
        }

        // Alerts for A's devices POSTed to B from four senders; A is killed once 100 were answered 200.
        let accepted = Shared<[String]>([])
        let sentToLast = Shared<Set<String>>([])
        let authorization = "bearer " + (try cluster.signer.token(issuedAt: UnixTime.now()))
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: b.provider, security: .cleartext, group: group)
        await withTaskGroup(of: Void.self) { senders in
            for sender in 0..<4 {
                senders.addTask {
                    for n in 0..<75 {
                        let id = UUID().uuidString.lowercased()
                        guard
                            let response = try? await client.post(
                                path: "/3/device/\(tokens[(sender + n) % tokens.count])",
                                headers: [
                                    ("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id),
                                ], body: Array(#"{"aps":{"alert":"n\#(n)"}}"#.utf8))
                        else { return }
                        if response.status == 200 {
                            if (sender + n) % tokens.count == tokens.count - 1 {
                                _ = sentToLast.value.withLock { $0.insert(id) }
                            }
                            let count = accepted.value.withLock {
                                $0.append(id)
                                return $0.count
                            }
                            if count == 100 { a.process.kill(SIGKILL) }
                        }
                    }
                }
            }
        }
        await client.close()
        #expect(await a.process.exitStatus(within: 10) != nil, "node A did not die")
        for agent in onA { agent.stop() }
        let answered = accepted.value.withLock { $0 }
        #expect(answered.count == 300, "node B answered every push 200 (\(answered.count))")

        // The devices reconnect to the survivor: every push answered 200 reaches them.
        let onB = identities.dropLast().map { identity in
            DeviceAgent(
                host: "127.0.0.1", port: b.devices, apps: [Self.topic], identity: identity, behaviour: .prompt,
                group: group, onEvent: record)
        }
        for agent in onB { agent.start() }
        defer { for agent in onB { agent.stop() } }
        let toReturning = answered.enumerated().filter { !sentToLast.value.withLock { $0 }.contains($0.element) }
            .map(\.element)
        // Every push answered 200 reaches its device — or, if B took the device over before it came back
        // (its lease went stale first, as it may on a loaded machine), waited for it as for any offline
        // device, where Apple keeps only the newest notification per app: an older one is discarded as
        // coalesced by a newer one (which, being newer, is delivered or coalesced in turn; the newest is
        // delivered). Nothing else may be missing.
        func unaccounted(firstOnly: Bool = false) async -> [String] {
            let seen = received.value.withLock { $0 }
            var left: [String] = []
            for id in toReturning where !seen.contains(id) && !(firstOnly && !left.isEmpty) {
                let lookup = try? await AdminClient.get(
                    host: "127.0.0.1", port: b.admin, path: "/v1/notifications/\(id)", token: nil)
                let json = lookup.flatMap { try? JSONSerialization.jsonObject(with: Data($0.body.utf8)) }
                let rule = ((json as? [String: Any])?["stored"] as? [String: Any])?["rule"] as? String
                if rule != "coalesced_newer_push" { left.append(id) }
            }
            return left
        }
        try await eventually("every push answered 200 reached its device (or was replaced by a newer one)") {
            await unaccounted(firstOnly: true).isEmpty
        }
        let missing = await unaccounted()
        if !missing.isEmpty {
            // Where the first lost pushes stand on B, and what both nodes logged above info.
            keepLogs = true
            var evidence: [String] = []
            for id in missing.prefix(3) {
                let lookup = try? await AdminClient.get(
                    host: "127.0.0.1", port: b.admin, path: "/v1/notifications/\(id)", token: nil)
                evidence.append("\(id): \(lookup?.body ?? "no answer")")
            }
            for log in [a.log, b.log] {
                let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
                    .filter { !$0.contains(" info ") }.suffix(25)
                evidence.append("\(log):\n\(lines.joined(separator: "\n"))")
            }
            Issue.record("lost \(missing.count) of \(toReturning.count):\n\(evidence.joined(separator: "\n"))")
        }

        // The device that stayed away: B took it over, and its pushes are decided (delivered before the
        // kill, or stored for the offline device), none left without a decision.
        try await eventually("node B took over the device that did not come back") {
            await counters(b)?.hub.takenOver ?? 0 >= 1
        }
        // Decided once B's takeover has committed its decisions, or, for a push routed to A in the last
        // moment (committed after the takeover read A's pending ones), once B's sweep found it
        // (sweep_seconds=2): the real events to wait for.
        func undecided() async throws -> [String] {
            var left: [String] = []
            for id in sentToLast.value.withLock({ $0 }) {
                let lookup = try await AdminClient.get(
                    host: "127.0.0.1", port: b.admin, path: "/v1/notifications/\(id)", token: nil)
                let json = try JSONSerialization.jsonObject(with: Data(lookup.body.utf8)) as? [String: Any]
                if (json?["stored"] as? [String: Any])?["rule"] as? String == nil { left.append(lookup.body) }
            }
            return left
        }
        try await eventually("every push to the device that stayed away is decided") { try await undecided().isEmpty }
        let left = try await undecided()
        #expect(left.isEmpty, "left without a decision: \(left.prefix(2))")
        b.process.kill(SIGTERM)
        #expect(await b.process.exitStatus(within: 30) == 0)
        await TestPostgres.dropDatabase(cluster.url)
    }

    /// What each test here starts from: a directory for its nodes' files, a database of its own, and the
    /// team's key.
    struct Cluster {
        let directory: String
        let url: String
        let key: P256.Signing.PrivateKey
        let signer: ProviderTokenSigner

        static func prepare(_ name: String) async throws -> Cluster {
            let key = P256.Signing.PrivateKey()
            return Cluster(
                directory: FileManager.default.temporaryDirectory
                    .appendingPathComponent("pushgate-\(name)-\(UUID().uuidString.prefix(8))").path,
                url: try await TestPostgres.makeDatabase(
                    prefix: "pushgate_" + name.replacingOccurrences(of: "-", with: "_")),
                key: key, signer: ProviderTokenSigner(teamID: "NODESTEAM1", keyID: "NODESKEY01", privateKey: key))
        }

        func removeFiles() { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// A `pushgate serve` node on the cluster's database, with the team's key, on ports the kernel picks
    /// (read back from its log: no race with other tests for them). On loopback, or with `host` in a
    /// network namespace of its own, its listeners on that address (reaching the database at
    /// `databaseURL`).
    func startNode(
        _ name: String, on cluster: Cluster, databaseURL: String? = nil,
        host: (namespace: String, address: String)? = nil, settings: [String]
    ) async throws -> Node {
        let (key, signer, url) = (cluster.key, cluster.signer, databaseURL ?? cluster.url)
        let address = host?.address ?? "127.0.0.1"
        let adminToken = host.map { _ in "admin-token-of-\(name)" }
        let data = cluster.directory + "/" + name
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
                "--set", "provider.tls.enabled=false", "--set", "provider.h2c.port=0",
                "--set", "devices.port=0", "--set", "devices.tls.enabled=false", "--set", "admin.port=0",
                "--set", "log.level=notice", "--set", "log.modules=provider=info,devices=info,admin=info",
                "--set", "channels.tls.enabled=false", "--set", "channels.h2c.enabled=false",
                "--set", "provider.h2c.host=\(address)", "--set", "devices.host=\(address)",
                "--set", "admin.host=\(address)", "--set", "channels.h2c.host=\(address)",
            ] + (adminToken.map { ["--set", "admin.token=\($0)"] } ?? []) + settings.flatMap { ["--set", $0] },
            logPath: log, namespace: host?.namespace)
        let ports = try await process.boundPorts(logPath: log)
        return Node(
            name: name, host: address, adminToken: adminToken, process: process, provider: ports.provider,
            devices: ports.devices,
            admin: ports.admin, log: log)
    }

    /// Creates a channel through the channel-management API of `node` (started with it on, logging its port).
    func createChannel(on node: Node, policy: Int, authorization: String) async throws -> String {
        let port = try #require(await node.process.listeningPort("channel management API listening", logPath: node.log))
        let manage = try await ProviderClient.connect(
            host: "127.0.0.1", port: port, security: .cleartext, group: MultiThreadedEventLoopGroup.singleton)
        let created = try await manage.post(
            path: "/1/apps/\(Self.topic)/channels", headers: [("authorization", authorization)],
            body: Array(#"{"message-storage-policy": \#(policy), "push-type": "LiveActivity"}"#.utf8))
        await manage.close()
        #expect(created.status == 201)
        return try #require(created.header("apns-channel-id"))
    }

    /// Subscribes every agent's activity to `channel`, created on one node: another node knows it once it
    /// hears the creation's notice, and refuses a subscription until then. One agent asks (again every
    /// half second) until the node it is on knows the channel; then every other asks once.
    func subscribe(_ agents: [DeviceAgent], to channel: String) async throws {
        let nodes = Dictionary(grouping: agents, by: { $0.endpoint.port }).values.compactMap(\.first)
        for first in nodes {
            try await eventually("node \(first.endpoint) knows the channel", every: .milliseconds(500)) {
                if first.subscribedChannels[channel] == nil {
                    first.subscribe(bundleID: Self.topic, channelID: channel)
                }
                return first.subscribedChannels[channel] != nil
            }
        }
        for agent in agents where agent.subscribedChannels[channel] == nil {
            agent.subscribe(bundleID: Self.topic, channelID: channel)
        }
        try await eventually("every device subscribed") { agents.allSatisfy { $0.subscribedChannels[channel] != nil } }
    }

    /// A node's `/v1/counters`.
    func counters(_ node: Node) async -> Counters? {
        await AdminClient.counters(host: node.host, port: node.admin, token: node.adminToken)
    }
}
