import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import Gateway
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import ProviderClient
import PushModel
import PushPolicy
import Synchronization
import TestSupport
import Testing

/// End to end over loopback: provider API → hub → real WebSocket → device agent, and back.
@Suite struct DeviceHubTests {
    @Test func alertReachesTheDeviceAndAWakeIsCompleted() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let (agent, token) = try await harness.installedAgent(log: log)

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
        #expect(harness.hub.deliveryLatency.count == 2, "both were delivered at once and acknowledged")
        let journey = harness.hub.journey(of: APNsID(header: wake.apnsID)!).map(\.event.description)
        #expect(journey == ["accepted silent", "woken", "acknowledged by the device", "completed newData"])
        agent.stop()
        try await harness.stop()
    }

    @Test func missedDeadlineThenLateCompletion() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let (agent, token) = try await harness.installedAgent(behaviour: AgentBehaviour { _ in .never }, log: log)
        #expect(try await harness.post(token: token, payload: silent).status == 200)
        // Its deadline runs from the device's acknowledgement.
        try await eventually("wake acknowledged") { harness.hub.counters.delivered == 1 }
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

    /// A device that did not wake the app (an iOS without silent notifications, a force-quit the gateway
    /// had not heard of) says so: the wake is forgotten, and its deadline passes without a penalty.
    @Test func aWakeTheDeviceDidNotRunIsNoMissedDeadline() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let (agent, token) = try await harness.installedAgent(behaviour: AgentBehaviour { _ in .never }, log: log)
        #expect(try await harness.post(token: token, payload: silent).status == 200)
        try await eventually("wake acknowledged") { harness.hub.counters.delivered == 1 }
        agent.send(.notWoken(apnsID: log.deliveries[0].apnsID, bundleID: HubHarness.bundle, reason: "no_silent_pushes"))
        try await eventually("the wake forgotten") { harness.hub.policyCounters.notWoken == 1 }
        harness.clock.advance(seconds: 31)
        harness.hub.tick()
        #expect(harness.hub.policyCounters.deadlinePenalties == 0)
        #expect(harness.hub.budget(device: 0, bundleID: HubHarness.bundle)?.coolingUntil == nil)
        let steps = harness.hub.journey(of: APNsID(header: log.deliveries[0].apnsID)!).map(\.event.description)
        #expect(steps.last == "not woken: no_silent_pushes")
        agent.stop()
        try await harness.stop()
    }

    /// The field's throttle over the device protocol: a device that says a debugger is attached gets every
    /// silent push as a wake (no budget); one that says it rebooted has its silent wakes wait out the herd
    /// window, and the first keep-alive after it takes them.
    @Test func aDebuggerTurnsTheThrottleOffAndARebootStartsTheHerdWindow() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let (agent, token) = try await harness.installedAgent(log: log)
        agent.send(.conditions(lowPowerMode: false, backgroundAppRefreshOff: false, debuggerAttached: true))
        try await eventually("the debugger is attached") { harness.hub.conditions(of: 0).debuggerAttached }
        for _ in 0..<5 { #expect(try await harness.post(token: token, payload: silent).status == 200) }
        try await eventually("five wakes") { log.deliveries.count == 5 }
        #expect(log.deliveries.allSatisfy { $0.rule == "woken_debugger_attached" })

        agent.send(.conditions(lowPowerMode: false, backgroundAppRefreshOff: false))
        agent.send(.rebooted)
        try await eventually("the herd window") { harness.hub.conditions(of: 0).herdUntil != nil }
        #expect(try await harness.post(token: token, payload: silent).status == 200)
        try await eventually("held for the herd") { harness.hub.policyCounters.heldBy[.thunderingHerd] == 1 }
        agent.send(.keepAlive(sequence: 1))
        harness.clock.advance(seconds: 301)
        agent.send(.keepAlive(sequence: 2))
        try await eventually("released after the window") { log.deliveries.count == 6 }
        #expect(log.deliveries[5].rule == "released_piggyback_keep_alive")
        agent.stop()
        try await harness.stop()
    }

    @Test func overBudgetIsHeldAndRidesTheKeepAlive() async throws {
        let harness = try await HubHarness()
        let log = EventLog()
        let (agent, token) = try await harness.installedAgent(log: log)
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
        let (agent, token) = try await harness.installedAgent(log: log)
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

    @Test func aFloodingDeviceIsClosedAlone() async throws {
        var hubSettings = HubSettings()
        hubSettings.messageBurst = 5
        hubSettings.messagesPerSecond = 1
        let harness = try await HubHarness(hubSettings: hubSettings)
        let log = EventLog()
        let good = harness.agent(log: log)
        good.start()
        try await eventually("installed") { good.tokens[HubHarness.bundle] != nil }
        let received = try await RawWebSocket.exchange(
            host: "127.0.0.1", port: harness.devicePort, texts: Array(repeating: #"{"type":"register"}"#, count: 20),
            group: harness.group)
        let closing = try #require(received?.last)
        #expect(closing.contains(#""reason":"flooding""#))
        #expect(received!.filter { $0.contains("registered") }.count == 5)
        #expect(try await harness.post(token: good.tokens[HubHarness.bundle]!, payload: alert).status == 200)
        try await eventually("the good device still gets its push") { log.deliveries.count == 1 }
        good.stop()
        try await harness.stop()
    }

    /// A device that floods while reading slowly, and goes on sending after the gateway decided to close it,
    /// is still told why (`closing` with `flooding`, then close code 1008): the gateway half-closes and
    /// reads on until the device closes (or `notReadingTimeoutSeconds`), so its own close never resets
    /// the connection over what the device sent meanwhile, which would throw away what the device had not
    /// read yet.
    @Test func aFloodingDeviceThatReadsSlowlyIsToldWhy() async throws {
        var hubSettings = HubSettings()
        hubSettings.messageBurst = 100
        hubSettings.messagesPerSecond = 1
        let harness = try await HubHarness(hubSettings: hubSettings)
        let (identity, _) = try await harness.enrolledDevice()

        let device = try await RawDevice(
            port: harness.devicePort, deviceID: identity.deviceID, secret: identity.secret, reading: false,
            group: harness.group)
        try await eventually("authenticated") { harness.hub.connectedCount == 1 }
        func burst(_ first: Int) async throws {
            for sequence in first..<(first + 50) {
                let text = #"{"type":"keep_alive","sequence":\#(sequence)}"#
                device.channel.write(
                    WebSocketFrame(
                        fin: true, opcode: .text, maskKey: .random(),
                        data: device.channel.allocator.buffer(string: text)),
                    promise: nil)
            }
            try await device.channel.writeAndFlush(
                WebSocketFrame(
                    fin: true, opcode: .ping, maskKey: .random(), data: device.channel.allocator.buffer(capacity: 0)))
        }
        // Bursts of 50 past the burst of 100: the gateway decides to close it as flooding.
        for burstIndex in 0..<4 { try await burst(burstIndex * 50) }
        try await eventually("closed as flooding") { harness.hub.counters.closedForMisbehaviour == 1 }
        // It goes on sending, then reads what it was sent.
        for burstIndex in 4..<40 { try? await burst(burstIndex * 50) }
        try await device.channel.setOption(.autoRead, value: true).get()
        device.channel.read()
        try await eventually("its close frame read") {
            !device.collector.closeCodes.withLock { $0.isEmpty } || !device.channel.isActive
        }
        let texts = device.collector.texts.withLock { $0 }
        #expect(texts.filter { $0.contains("keep_alive_ack") }.count == 99, "the burst of 100, less the hello")
        #expect(texts.last?.contains(#""reason":"flooding""#) == true, "\(texts.suffix(2))")
        #expect(device.collector.closeCodes.withLock { $0 } == [1008])
        try? await device.channel.close()
        try await harness.stop()
    }

    /// The flood limit counts what a device says, not its answers: acknowledging hundreds of pushes kept for
    /// it, as fast as they arrive, closes nothing; acknowledgements of nothing in flight count as any
    /// message does.
    @Test func acknowledgementsOfPushesInFlightAreNoFlood() async throws {
        var hubSettings = HubSettings()
        hubSettings.messageBurst = 20
        hubSettings.messagesPerSecond = 1
        let harness = try await HubHarness(hubSettings: hubSettings)
        let log = EventLog()
        let (agent, hex) = try await harness.installedAgent(log: log)
        let token = try #require(DeviceToken(hex))
        let loop = harness.group.next()
        for _ in 0..<300 {
            let push = PushNotification(
                id: APNsID.generate(), deviceToken: token, topic: Topic(HubHarness.bundle)!,
                bundleID: HubHarness.bundle, pushType: .alert, priority: .immediate, expiration: .storeByDefault,
                collapseID: nil, notificationClass: .alerting, payload: Array(alert.utf8), teamID: nil,
                receivedAt: harness.clock.now)
            _ = harness.hub.submit(push, on: loop)
        }
        try await eventually("all 300 acknowledged") { harness.hub.counters.delivered == 300 }
        #expect(harness.hub.counters.closedForMisbehaviour == 0)
        #expect(log.deliveries.count == 300)
        agent.stop()

        // Acknowledgements of pushes that are not in flight take a token each: past the burst, a flood.
        let (identity, _) = try await harness.enrolledDevice()
        let device = try await harness.rawDevice(identity)
        try await eventually("authenticated") { harness.hub.connectedCount == 1 }
        for _ in 0..<30 { try? await device.acknowledge(APNsID.generate().description) }
        try await eventually("closed as flooding") { harness.hub.counters.closedForMisbehaviour == 1 }
        try await eventually("told why") {
            device.collector.texts.withLock { $0.contains { $0.contains(#""reason":"flooding""#) } }
        }
        try? await device.channel.close()
        try await harness.stop()
    }

    /// A device that stops reading while the gateway has much to send is closed alone after
    /// `notReadingTimeoutSeconds`; the others carry on.
    @Test func aDeviceThatStopsReadingIsClosedAlone() async throws {
        var hubSettings = HubSettings()
        hubSettings.notReadingTimeoutSeconds = 1
        let harness = try await HubHarness(hubSettings: hubSettings)
        let (identity, hex) = try await harness.enrolledDevice()
        let token = try #require(DeviceToken(hex))

        let goodLog = EventLog()
        let good = harness.agent(log: goodLog)
        good.start()
        try await eventually("good device installed") { good.tokens[HubHarness.bundle] != nil }

        // The stalled device says hello, then stops reading.
        let stalled = try await RawWebSocket.open(host: "127.0.0.1", port: harness.devicePort, group: harness.group)
        let hello = DeviceMessage.hello(deviceID: identity.deviceID, secret: identity.secret).encoded()
        try await stalled.setOption(.autoRead, value: false).get()
        try await stalled.writeAndFlush(
            WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: stalled.allocator.buffer(bytes: hello)))
        try await eventually("stalled device authenticated") { harness.hub.connectedCount == 2 }

        // Far more than the socket buffers and the high watermark hold.
        let payload = Array(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4000))"}}"#.utf8)
        let loop = harness.group.next()
        for _ in 0..<4000 {
            let push = PushNotification(
                id: APNsID.generate(), deviceToken: token, topic: Topic(HubHarness.bundle)!,
                bundleID: HubHarness.bundle,
                pushType: .alert, priority: .immediate, expiration: .storeByDefault, collapseID: nil,
                notificationClass: .alerting, payload: payload, teamID: nil, receivedAt: harness.clock.now)
            _ = harness.hub.submit(push, on: loop)
        }
        // Its window fills and it acknowledges nothing: past the timeout the hub's timer closes it.
        // (The stalled client reads nothing, so it would not notice the close itself: ask the gateway.)
        try await eventually("its window is written") { harness.hub.counters.sent >= 64 }
        harness.clock.advance(seconds: 2)
        harness.hub.tick()
        try await eventually("the stalled device is closed") {
            harness.hub.counters.closedForMisbehaviour == 1 && harness.hub.connectedCount == 1
        }
        try? await stalled.close()
        #expect(try await harness.post(token: good.tokens[HubHarness.bundle]!, payload: alert).status == 200)
        try await eventually("the good device still gets its push") { goodLog.deliveries.count == 1 }
        good.stop()
        try await harness.stop()
    }

    @Test func messagesBeforeHelloAndUnknownTypesAreRefused() async throws {
        let harness = try await HubHarness()
        let early = try await RawWebSocket.exchange(
            host: "127.0.0.1", port: harness.devicePort, texts: [#"{"type":"keep_alive","sequence":1}"#],
            group: harness.group)
        #expect(early?.contains { $0.contains("say hello") } == true)
        let unknown = try await RawWebSocket.exchange(
            host: "127.0.0.1", port: harness.devicePort, texts: [#"{"type":"teleport"}"#], group: harness.group)
        #expect(unknown?.contains { $0.contains(#"unknown message type \"teleport\""#) } == true)
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

/// A bare WebSocket client for hostile tests: sends text frames and collects what the gateway answers
/// until it closes the connection.
