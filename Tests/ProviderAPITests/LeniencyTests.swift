import ProviderClient
import PushModel
import Testing

@testable import ProviderAPI

/// Where Apple says APNs accepts a push and may then delay or drop it, Pushgate accepts it too: classified
/// by its push type, with the mismatch on the notification (the decision log and
/// `pushgate_push_type_mismatches_total` take it from there).
@Suite struct LeniencyTests {
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var headers: [(String, String)]
        var topic = Fixture.bundle
        var payload: String
        var kind: NotificationClass
        var type: PushType
        var mismatch: PushTypeMismatch?
    }

    static let cases: [Case] = [
        // aapns always adds an alert, so every background push it sends is one of these.
        Case(
            description: "background with an alert",
            headers: [("apns-push-type", "background"), ("apns-priority", "5")],
            payload: #"{"aps":{"alert":"hi","content-available":1}}"#, kind: .silent, type: .background,
            mismatch: .backgroundWithVisibleContent),
        Case(
            description: "background without content-available", headers: [("apns-push-type", "background")],
            payload: #"{"aps":{},"job":1}"#, kind: .silent, type: .background,
            mismatch: .backgroundWithoutContentAvailable),
        Case(
            description: "alert with nothing to show", headers: [("apns-push-type", "alert")],
            payload: #"{"aps":{"category":"c"}}"#, kind: .other, type: .alert, mismatch: .alertWithoutVisibleContent),
        Case(
            description: "alert without aps", headers: [("apns-push-type", "alert")], payload: #"{"data":1}"#,
            kind: .other, type: .alert, mismatch: .noAPS),
        Case(
            description: "voip without aps", headers: [("apns-push-type", "voip")], topic: Fixture.bundle + ".voip",
            payload: #"{"caller":"Ann"}"#, kind: .other, type: .voip, mismatch: nil),
        Case(
            description: "a plain alert", headers: [], payload: #"{"aps":{"alert":"hi"}}"#, kind: .alerting,
            type: .alert, mismatch: nil),
    ]

    @Test(arguments: cases)
    func acceptedClassifiedByPushTypeWithTheMismatchRecorded(_ lenient: Case) async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let response = try await client.post(
                path: "/3/device/\(Fixture.token.hex)",
                headers: gateway.headers(topic: lenient.topic, extra: lenient.headers),
                body: Array(lenient.payload.utf8))
            #expect(response.status == 200, "\(lenient): \(response.reason ?? "")")
            let received = try #require(gateway.intake.notifications.last)
            #expect(received.notificationClass == lenient.kind)
            #expect(received.pushType == lenient.type)
            #expect(received.mismatch == lenient.mismatch)
            await client.close()
        }
    }
}
