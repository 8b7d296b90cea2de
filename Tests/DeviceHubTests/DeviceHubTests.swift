import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import Gateway
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import PushModel
import PushPolicy
import Testing

/// End to end over loopback: provider API → hub → real WebSocket → device agent, and back.
@Suite struct DeviceHubTests {
    @Test func alertReachesTheDeviceAndAWakeIsCompleted() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let agent = harness.agent(log: log)
        agent.start()
        try await eventually("app installed") { agent.tokens[HubHarness.bundle] != nil }
        let token = agent.tokens[HubHarness.bundle]!

        #expect(try await harness.post(token: token, payload: alert).status == 200)
        try await eventually("alert delivered") { log.deliveries.count == 1 }
        #expect(log.deliveries[0].kind == "alert")
        #expect(log.deliveries[0].payload == alert)

        #expect(try await harness.post(token: token, payload: silent).status == 200)
        try await eventually("wake completed") { harness.hub.policyCounters.completedNewData == 1 }
        let wake = log.deliveries[1]
        #expect(wake.kind == "background")
        #expect(wake.rule == "on_budget")
        #expect(wake.deadlineSeconds == 30)
        try await eventually("acks counted") { harness.hub.counters.acknowledged == 2 }
        let journey = harness.hub.journey(of: APNsID(header: wake.apnsID)!).map(\.event.description)
        #expect(journey == ["accepted silent", "woken", "completed newData"])
        agent.stop()
        try await harness.stop()
    }

    @Test func missedDeadlineThenLateCompletion() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let agent = harness.agent(behaviour: AgentBehaviour { _ in .never }, log: log)
        agent.start()
        try await eventually("app installed") { agent.tokens[HubHarness.bundle] != nil }
        let token = agent.tokens[HubHarness.bundle]!
        #expect(try await harness.post(token: token, payload: silent).status == 200)
        try await eventually("wake delivered") { log.deliveries.count == 1 }
        harness.clock.advance(seconds: 30)
        harness.hub.tick()
        #expect(harness.hub.policyCounters.deadlinePenalties == 0)
        harness.clock.advance(seconds: 1)
        harness.hub.tick()
        #expect(harness.hub.policyCounters.deadlinePenalties == 1)
        let budget = harness.hub.budget(device: 0, bundleID: HubHarness.bundle)
        #expect(budget?.budgetLeft == 0)
        #expect(budget?.coolingUntil != nil)
        // The app answers after all: recorded as late, not lost.
        agent.send(.complete(apnsID: log.deliveries[0].apnsID, bundleID: HubHarness.bundle, result: "noData"))
        try await eventually("late completion recorded") { harness.hub.policyCounters.completedLate == 1 }
        agent.stop()
        try await harness.stop()
    }

    @Test func overBudgetIsHeldAndRidesTheKeepAlive() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let agent = harness.agent(log: log)
        agent.start()
        try await eventually("app installed") { agent.tokens[HubHarness.bundle] != nil }
        let token = agent.tokens[HubHarness.bundle]!
        for _ in 0..<4 { #expect(try await harness.post(token: token, payload: silent).status == 200) }
        try await eventually("three wakes on budget") { log.deliveries.count == 3 }
        #expect(harness.hub.policyCounters.held == 1)
        agent.send(.keepAlive(sequence: 99))
        try await eventually("released on keep-alive") { log.deliveries.count == 4 }
        #expect(log.deliveries[3].rule == "released_piggyback_keep_alive")
        #expect(
            log.all.contains {
                if case .delivered(_, true) = $0 { return true }
                return false
            })
        agent.stop()
        try await harness.stop()
    }

    @Test func reconnectDeliversWhatWasKept() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let first = harness.agent(log: log)
        first.start()
        try await eventually("app installed") { first.tokens[HubHarness.bundle] != nil }
        let token = first.tokens[HubHarness.bundle]!
        let identity = try #require(first.identity)
        first.stop()
        try await eventually("device gone") { harness.hub.connectedCount == 0 }

        #expect(try await harness.post(token: token, payload: alert).status == 200)
        #expect(log.deliveries.isEmpty)
        let again = harness.agent(identity: identity, log: log)
        again.start()
        try await eventually("kept alert delivered on reconnect") { log.deliveries.count == 1 }
        #expect(log.deliveries[0].rule == "released_on_reconnect")
        #expect(again.tokens[HubHarness.bundle] == token, "the same device keeps its token")
        again.stop()
        try await harness.stop()
    }

    @Test func uninstallMakesTheToken410() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let agent = harness.agent(log: log)
        agent.start()
        try await eventually("app installed") { agent.tokens[HubHarness.bundle] != nil }
        let token = agent.tokens[HubHarness.bundle]!
        agent.send(.uninstall(bundleID: HubHarness.bundle))
        try await eventually("uninstalled") { agent.tokens[HubHarness.bundle] == nil }
        let response = try await harness.post(token: token, payload: alert)
        #expect(response.status == 410)
        #expect(response.bodyText == #"{"reason":"Unregistered","timestamp":\#(harness.clock.now.milliseconds)}"#)
        agent.stop()
        try await harness.stop()
    }

    @Test func aDeviceCannotBeAnother() async throws {
        let harness = try await HubHarness()
        let logA = EventLog()
        let logB = EventLog()
        let a = harness.agent(log: logA)
        let b = harness.agent(log: logB)
        a.start()
        b.start()
        try await eventually("both installed") {
            a.tokens[HubHarness.bundle] != nil && b.tokens[HubHarness.bundle] != nil
        }
        #expect(try await harness.post(token: b.tokens[HubHarness.bundle]!, payload: alert).status == 200)
        try await eventually("B receives its push") { logB.deliveries.count == 1 }
        #expect(logA.deliveries.isEmpty)

        // A device that presents B's id with a wrong secret is refused and receives nothing.
        let impostorLog = EventLog()
        let bIdentity = try #require(b.identity)
        let impostor = harness.agent(
            identity: DeviceAgent.Identity(deviceID: bIdentity.deviceID, secret: String(repeating: "0", count: 64)),
            log: impostorLog)
        impostor.start()
        try await eventually("impostor refused") { impostorLog.all.contains(.closing(reason: "auth_failed")) }
        impostor.stop()
        #expect(harness.hub.counters.authenticationFailures >= 1)
        a.stop()
        b.stop()
        try await harness.stop()
    }

    @Test func garbageClosesOnlyThatDevice() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let good = harness.agent(log: log)
        good.start()
        try await eventually("installed") { good.tokens[HubHarness.bundle] != nil }

        // A raw WebSocket client that sends a frame that is no device message.
        let rawClosed = try await RawWebSocket.connectAndSend(
            host: "127.0.0.1", port: harness.devicePort, text: "{not json", group: harness.group)
        #expect(rawClosed)
        #expect(harness.hub.counters.closedForMisbehaviour >= 1)

        #expect(try await harness.post(token: good.tokens[HubHarness.bundle]!, payload: alert).status == 200)
        try await eventually("the good device still gets its push") { log.deliveries.count == 1 }
        good.stop()
        try await harness.stop()
    }
}

/// A bare WebSocket client for hostile tests: sends one text frame and reports whether the gateway closed.
enum RawWebSocket {
    static func connectAndSend(host: String, port: Int, text: String, group: any EventLoopGroup) async throws -> Bool {
        let upgraded = try await ClientBootstrap(group: group).connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeSucceededFuture(true)
                })
                let head = HTTPRequestHead(
                    version: .http1_1, method: .GET, uri: "/device",
                    headers: ["host": "localhost", "content-length": "0"])
                let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                    configuration: .init(
                        upgradeConfiguration: .init(
                            upgradeRequestHead: head, upgraders: [upgrader],
                            notUpgradingCompletionHandler: { $0.eventLoop.makeSucceededFuture(false) })))
                return negotiated.map { ($0, channel) }
            }
        }.get()
        guard upgraded.0 else { return false }
        let channel = upgraded.1
        let frame = WebSocketFrame(
            fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(string: text))
        try await channel.writeAndFlush(frame)
        try await channel.closeFuture.get()
        return true
    }
}
