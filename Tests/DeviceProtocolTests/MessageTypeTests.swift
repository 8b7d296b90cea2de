import DeviceProtocol
import Foundation
import Testing

/// The device protocol's wire names come from one table (`MessageType`): every message of either
/// direction carries its type's name, reads back as itself, and is refused by the other direction.
@Suite struct MessageTypeTests {
    static let delivery = Delivery(
        apnsID: "01a3185c-5000-7abc-8def-0123456789ab", topic: "com.example.a", bundleID: "com.example.a",
        pushType: "alert", priority: 10, collapseID: nil, kind: "alerting", deadlineSeconds: nil, rule: "alerting",
        payload: "{}")
    static let fromDevices: [DeviceMessage] = [
        .register(enrolment: "secret"), .hello(deviceID: "d", secret: "s"), .install(bundleID: "a"),
        .uninstall(bundleID: "a"), .ack(apnsID: "x"), .complete(apnsID: "x", bundleID: "a", result: "newData"),
        .notWoken(apnsID: "x", bundleID: "a", reason: "no_silent_pushes"),
        .keepAlive(sequence: 3), .appState(bundleID: "a", state: "background"),
        .conditions(
            lowPowerMode: true, backgroundAppRefreshOff: false, debuggerAttached: true, otherAppsWakesPerDay: 24),
        .rebooted,
        .activityToken(bundleID: "a", purpose: .pushToStart(attributesType: "GameAttributes")),
        .subscribeChannel(bundleID: "a", channelID: "Y2hhbm5lbA=="), .unsubscribeChannel(channelID: "Y2hhbm5lbA=="),
        .frequentPushes(bundleID: "a", enabled: true),
    ]
    static let fromGateway: [GatewayMessage] = [
        .registered(deviceID: "d", secret: "s"),
        .welcome(deviceID: "d", apps: [InstalledApp(bundleID: "a", token: "t")], keepAliveSeconds: 60),
        .installed(InstalledApp(bundleID: "a", token: "t")), .uninstalled(bundleID: "a"), .notification(delivery),
        .keepAliveAck(sequence: 3, notifications: [delivery]),
        .closing(reason: "shutdown", reconnectAfterMilliseconds: 2000),
        .error(message: "no"),
        .activityToken(bundleID: "a", purpose: .update(activityID: "act-1"), token: "t"),
        .channelSubscribed(bundleID: "a", channelID: "Y2hhbm5lbA=="),
    ]

    static func type(_ bytes: [UInt8]) throws -> String {
        let object = try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
        return try #require(object?["type"] as? String)
    }

    @Test func everyTypeIsSentOnceAndReadsBack() throws {
        var seen: [String] = []
        for message in Self.fromDevices {
            let bytes = message.encoded()
            seen.append(try Self.type(bytes))
            #expect(try DeviceMessage.decode(bytes) == message)
            #expect(throws: ProtocolError.self) { try GatewayMessage.decode(bytes) }
        }
        for message in Self.fromGateway {
            let bytes = message.encoded()
            seen.append(try Self.type(bytes))
            #expect(try GatewayMessage.decode(bytes) == message)
            #expect(throws: ProtocolError.self) { try DeviceMessage.decode(bytes) }
        }
        #expect(seen == MessageType.allCases.map(\.rawValue))
    }

    /// An ack reads the same through the fast path (the encoder's exact bytes) and the decoder (any other
    /// spelling); what the fast path does not take still decodes, or is refused, as before.
    @Test func anAckReadsTheSameEitherWay() throws {
        let id = "01a3185c-5000-7abc-8def-0123456789ab"
        let encoded = DeviceMessage.ack(apnsID: id).encoded()
        #expect(String(decoding: encoded, as: UTF8.self) == #"{"apns_id":"\#(id)","type":"ack"}"#)
        #expect(try DeviceMessage.decode(encoded) == .ack(apnsID: id))
        // An id the fast path does not write goes through the encoder, and reads back the same.
        for odd in ["x y", #"q"uote"#, String(repeating: "a", count: 65), "é"] {
            #expect(try DeviceMessage.decode(DeviceMessage.ack(apnsID: odd).encoded()) == .ack(apnsID: odd))
        }
        for text in [
            #"{"type":"ack","apns_id":"\#(id)"}"#, #"{ "apns_id" : "\#(id)", "type" : "ack" }"#,
            #"{"apns_id":"a-b","type":"ack"}"#, #"{"apns_id":"x y","type":"ack"}"#,
        ] {
            let expected = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String]
            #expect(try DeviceMessage.decode(Array(text.utf8)) == .ack(apnsID: expected?["apns_id"] ?? ""))
        }
        for text in [#"{"apns_id":"x","type":"ack""#, #"{"apns_id":"x","type":"acks"}"#] {
            #expect(throws: ProtocolError.self, "\(text)") { try DeviceMessage.decode(Array(text.utf8)) }
        }
    }

    /// A wake's answer (`complete`, `not_woken`) is written without the encoder in the encoder's own
    /// bytes and read back without the decoder; any other spelling or value reads the same through the
    /// coders, and a malformed one is refused either way.
    @Test func aWakesAnswerReadsTheSameEitherWay() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let id = "01a3185c-5000-7abc-8def-0123456789ab"
        let messages: [(DeviceMessage, [String: String])] = [
            (
                .complete(apnsID: id, bundleID: "com.example.news", result: "newData"),
                ["type": "complete", "apns_id": id, "bundle_id": "com.example.news", "result": "newData"]
            ),
            (
                .notWoken(apnsID: id, bundleID: "com.example.news", reason: "no_silent_pushes"),
                ["type": "not_woken", "apns_id": id, "bundle_id": "com.example.news", "reason": "no_silent_pushes"]
            ),
        ]
        for (message, fields) in messages {
            let encoded = message.encoded()
            #expect(encoded == Array(try encoder.encode(fields)))
            #expect(try DeviceMessage.decode(encoded) == message)
            // Spaced, or in another order: the coders read it, to the same message.
            let spaced = try JSONSerialization.data(withJSONObject: fields, options: [.prettyPrinted])
            #expect(try DeviceMessage.decode(Array(spaced)) == message)
        }
        // Values the fast path does not write go through the encoder, and read back the same.
        for odd in ["x y", #"q"uote"#, String(repeating: "a", count: 256), "é", ""] {
            let message = DeviceMessage.complete(apnsID: id, bundleID: odd, result: "noData")
            #expect(try DeviceMessage.decode(message.encoded()) == message)
        }
        for text in [
            #"{"apns_id":"x","bundle_id":"a","result":"newData","type":"complete""#,
            #"{"apns_id":"x","bundle_id":"a","type":"complete"}"#,
            #"{"apns_id":"x","bundle_id":"a","result":"newData","type":"completes"}"#,
        ] {
            #expect(throws: ProtocolError.self, "\(text)") { try DeviceMessage.decode(Array(text.utf8)) }
        }
    }

    /// A notification reads the same through its short envelope (the encoder's key order) and the full
    /// one (any other spelling); a message that only starts like one is read, or refused, by its type.
    @Test func aNotificationReadsTheSameEitherWay() throws {
        let delivery = Delivery(
            apnsID: "01a3185c-5000-7abc-8def-0123456789ab", topic: "com.example.scores.push-type.liveactivity",
            bundleID: "com.example.scores", pushType: "liveactivity", priority: 10, collapseID: nil, kind: "other",
            deadlineSeconds: nil, rule: "broadcast", payload: #"{"aps":{"event":"update","timestamp":1795000000}}"#,
            channel: "Y2hhbm5lbC1vbmU=")
        let encoded = GatewayMessage.notification(delivery).encoded()
        #expect(String(decoding: encoded.prefix(17), as: UTF8.self) == #"{"notification":{"#)
        #expect(try GatewayMessage.decode(encoded) == .notification(delivery))
        let inner = String(decoding: encoded.dropFirst(16).dropLast(23), as: UTF8.self)
        let reordered = Array(#"{"type":"notification","notification":\#(inner)}"#.utf8)
        #expect(try GatewayMessage.decode(reordered) == .notification(delivery))
        #expect(throws: ProtocolError.self) {
            try GatewayMessage.decode(Array(#"{"notification":\#(inner),"type":"welcome"}"#.utf8))
        }
        #expect(throws: ProtocolError.self) {
            try GatewayMessage.decode(Array(#"{"notification":{"apns_id":"x"},"type":"notification"}"#.utf8))
        }
    }

    /// A Live Activity token names exactly one of an attributes type (push-to-start) or an activity.
    @Test func anActivityTokenNamesOneThing() throws {
        for purpose in [ActivityTokenPurpose.pushToStart(attributesType: "T"), .update(activityID: "a1")] {
            let request = DeviceMessage.activityToken(bundleID: "a", purpose: purpose)
            #expect(try DeviceMessage.decode(request.encoded()) == request)
            #expect(ActivityTokenPurpose(key: purpose.key) == purpose)
        }
        for json in [
            #"{"type":"request_activity_token","bundle_id":"a"}"#,
            #"{"type":"request_activity_token","bundle_id":"a","attributes_type":"T","activity_id":"x"}"#,
            #"{"type":"request_activity_token","bundle_id":"a","attributes_type":""}"#,
        ] {
            #expect(throws: ProtocolError.self) { try DeviceMessage.decode(Array(json.utf8)) }
        }
        #expect(ActivityTokenPurpose(key: "start:") == nil)
        #expect(ActivityTokenPurpose(key: "other:x") == nil)
        // A Live Activity update names the token it was sent to; other deliveries need not.
        var delivery = Self.delivery
        delivery.token = "abcd"
        let back = try GatewayMessage.decode(GatewayMessage.notification(delivery).encoded())
        #expect(back == .notification(delivery))
    }
}
