import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import NIOCore
import NIOWebSocket
import ProviderClient
import PushModel
import PushPolicy
import Synchronization
import TestSupport
import Testing

/// A push is delivered when the device acknowledges it: whatever a connection had not acknowledged when
/// it ended is sent again on the device's next connection, in order; nothing answered 200 is lost at the
/// device edge. Over real sockets (a raw WebSocket device that does not acknowledge, and the agent).
@Suite struct AcknowledgedDeliveryTests {
    func postAlerts(_ harness: HubHarness, token: String, count: Int) async throws -> [String] {
        var ids: [String] = []
        for index in 0..<count {
            let response = try await harness.post(token: token, payload: #"{"aps":{"alert":"n\#(index)"}}"#)
            #expect(response.status == 200)
            ids.append(try #require(response.headers.first { $0.name == "apns-id" }?.value))
        }
        return ids
    }

    @Test func anOrderlyCloseEndsTheSessionAndALaterAlertArrivesOnReconnect() async throws {
        let harness = try await HubHarness()
        let (identity, token) = try await harness.enrolledDevice()
        let raw = try await harness.rawDevice(identity)
        try await eventually("raw device connected") { harness.hub.connectedCount == 1 }
        let before = harness.hub.counters.disconnections
        try await raw.closeOrderly()
        try await eventually("the close frame ends the session") {
            harness.hub.connectedCount == 0 && harness.hub.counters.disconnections == before + 1
        }
        let ids = try await postAlerts(harness, token: token, count: 1)

        let log = EventLog()
        let again = harness.agent(identity: identity, log: log)
        again.start()
        try await eventually("stored alert delivered on reconnect") { log.deliveries.count == 1 }
        #expect(log.deliveries.map(\.apnsID) == ids)
        #expect(log.deliveries[0].rule == "released_on_reconnect")
        again.stop()
        try await harness.stop()
    }

    @Test func whatADroppedConnectionDidNotAcknowledgeIsSentAgainInOrder() async throws {
        let harness = try await HubHarness()
        let (identity, token) = try await harness.enrolledDevice()
        let raw = try await harness.rawDevice(identity)
        try await eventually("raw device connected") { harness.hub.connectedCount == 1 }
        let unacknowledged = try await postAlerts(harness, token: token, count: 3)
        try await eventually("three written") { raw.received.count == 3 }
        try await raw.channel.close()  // dropped, nothing acknowledged
        try await eventually("device gone") { harness.hub.connectedCount == 0 }
        // A newer push while the device is away: it coalesces nothing that was already the device's.
        let whileAway = try await postAlerts(harness, token: token, count: 1)

        let log = EventLog()
        let again = harness.agent(identity: identity, log: log)
        again.start()
        try await eventually("all four delivered") { log.deliveries.count == 4 }
        #expect(log.deliveries.map(\.apnsID) == unacknowledged + whileAway, "the unacknowledged first, in order")
        #expect(log.deliveries.map(\.rule) == ["alerting", "alerting", "alerting", "released_on_reconnect"])
        try await eventually("all acknowledged") { harness.hub.counters.delivered == 4 }
        #expect(harness.hub.counters.resent == 3)
        let journey = harness.hub.journey(of: APNsID(header: unacknowledged[0])!).map(\.event.description)
        #expect(
            journey == ["accepted alerting", "delivered", "sent again (2 times in all)", "acknowledged by the device"])
        #expect(harness.hub.outstandingCount == 0)
        again.stop()
        try await harness.stop()
    }

    @Test func aSecondConnectionTakesOverWhatTheFirstHadNotAcknowledged() async throws {
        let harness = try await HubHarness()
        let (identity, token) = try await harness.enrolledDevice()
        let raw = try await harness.rawDevice(identity)
        try await eventually("raw device connected") { harness.hub.connectedCount == 1 }
        let ids = try await postAlerts(harness, token: token, count: 2)
        try await eventually("two written") { raw.received.count == 2 }

        let log = EventLog()
        let replacement = harness.agent(identity: identity, log: log)
        replacement.start()
        try await eventually("the replacement gets both") { log.deliveries.count == 2 }
        #expect(log.deliveries.map(\.apnsID) == ids)
        try await eventually("the first connection is closed") { !raw.channel.isActive }
        #expect(harness.hub.connectedCount == 1)
        replacement.stop()
        try await harness.stop()
    }

    @Test func theWindowBoundsWhatIsInFlightAndAFullQueueIsRefusedWith429() async throws {
        var settings = HubSettings()
        settings.deliveryWindow = 4
        settings.maximumWaiting = 10
        let harness = try await HubHarness(hubSettings: settings)
        let (identity, token) = try await harness.enrolledDevice()
        let raw = try await harness.rawDevice(identity)
        try await eventually("raw device connected") { harness.hub.connectedCount == 1 }
        let ids = try await postAlerts(harness, token: token, count: 10)
        try await eventually("the window is written") { raw.received.count == 4 }
        #expect(raw.received == Array(ids.prefix(4)))

        // Ten wait for the device: the eleventh is refused, as APNs refuses a token sent too much.
        let refused = try await harness.post(token: token, payload: alert)
        #expect(refused.status == 429)
        #expect(refused.bodyText == #"{"reason":"TooManyRequests"}"#)
        #expect(harness.hub.counters.refusedQueueFull == 1)

        // Each acknowledgement lets the next one through, in order.
        try await raw.acknowledge(ids[0])
        try await raw.acknowledge(ids[1])
        try await eventually("two more written") { raw.received.count == 6 }
        #expect(raw.received == Array(ids.prefix(6)))
        #expect(try await harness.post(token: token, payload: alert).status == 200, "room again")
        try await raw.channel.close()
        try await harness.stop()
    }

    @Test func aDeviceThatAcknowledgesNothingIsClosedAndLosesNothing() async throws {
        var settings = HubSettings()
        settings.notReadingTimeoutSeconds = 5
        let harness = try await HubHarness(hubSettings: settings)
        let (identity, token) = try await harness.enrolledDevice()
        let raw = try await harness.rawDevice(identity)
        try await eventually("raw device connected") { harness.hub.connectedCount == 1 }
        let ids = try await postAlerts(harness, token: token, count: 5)
        try await eventually("five written") { raw.received.count == 5 }
        harness.clock.advance(seconds: 6)
        harness.hub.tick()
        try await eventually("closed as not reading") { harness.hub.connectedCount == 0 }
        #expect(harness.hub.counters.closedForMisbehaviour == 1)

        let log = EventLog()
        let again = harness.agent(identity: identity, log: log)
        again.start()
        try await eventually("all five delivered") { log.deliveries.count == 5 }
        #expect(log.deliveries.map(\.apnsID) == ids)
        again.stop()
        try await harness.stop()
    }

    @Test func aTextFrameThatIsNotUTF8ClosesWith1007() async throws {
        let harness = try await HubHarness()
        let (identity, _) = try await harness.enrolledDevice()
        let raw = try await harness.rawDevice(identity)
        try await eventually("raw device connected") { harness.hub.connectedCount == 1 }
        try await raw.send(bytes: [0x7B, 0xFF, 0xFE, 0x7D])
        try await eventually("closed with 1007") { raw.collector.closeCodes.withLock { $0 } == [1007] }
        #expect(raw.collector.texts.withLock { $0 }.contains { $0.contains(#""reason":"invalid_utf8""#) })
        try await eventually("the session ended") { harness.hub.connectedCount == 0 }
        try await harness.stop()
    }

    @Test func anOversizedFrameGetsAnErrorNamingTheLimitBeforeTheClose() async throws {
        var settings = HubSettings()
        settings.maximumFrameBytes = 1024
        let harness = try await HubHarness(hubSettings: settings)
        let big = #"{"type":"keep_alive","sequence":1,"pad":""# + String(repeating: "x", count: 2000) + #""}"#
        let texts = try #require(
            try await RawWebSocket.exchange(
                host: "127.0.0.1", port: harness.devicePort, texts: [big], group: harness.group))
        #expect(texts.count == 2)
        #expect(texts.first?.contains("devices.max_frame_bytes (1024 bytes)") == true)
        #expect(texts.last?.contains(#""reason":"protocol_error""#) == true)
        try await harness.stop()
    }
}
