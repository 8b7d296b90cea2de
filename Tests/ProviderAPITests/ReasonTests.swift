import Foundation
import NIOHPACK
import ProviderAuth
import ProviderClient
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// One request per reason APNs can give without devices, sent over real HTTP/2 (h2c and TLS).
@Suite struct ReasonTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var reason: RejectionReason
        var path: String = "/3/device/" + Fixture.token.hex
        var method: String = "POST"
        var topic: String? = Fixture.bundle
        var signer: ProviderTokenSigner? = Fixture.main
        var extra: [(String, String)] = []
        var body: [UInt8] = alertPayload
        var testDescription: String { reason.rawValue }
    }

    static let cases: [Case] = [
        Case(reason: .badCollapseId, extra: [("apns-collapse-id", String(repeating: "c", count: 65))]),
        Case(reason: .badDeviceToken, path: "/3/device/not-hex"),
        Case(reason: .badDeviceToken, path: "/3/device/" + Fixture.unknownToken.hex),
        Case(reason: .badExpirationDate, extra: [("apns-expiration", "tomorrow")]),
        Case(reason: .badMessageId, extra: [("apns-id", "not-a-uuid")]),
        Case(reason: .badPriority, extra: [("apns-priority", "7")]),
        Case(
            reason: .badPriority, extra: [("apns-push-type", "background"), ("apns-priority", "10")],
            body: silentPayload),
        Case(reason: .badTopic, extra: [("apns-push-type", "voip")]),
        Case(reason: .badTopic, topic: "com.example app"),
        Case(reason: .deviceTokenNotForTopic, path: "/3/device/" + Fixture.otherAppToken.hex),
        Case(reason: .duplicateHeaders, extra: [("apns-priority", "10"), ("apns-priority", "5")]),
        Case(reason: .invalidPushType, extra: [("apns-push-type", "banana")]),
        Case(reason: .missingDeviceToken, path: "/3/device/"),
        Case(reason: .missingTopic, topic: nil),
        Case(reason: .payloadEmpty, body: []),
        Case(
            reason: .topicDisallowed, path: "/3/device/" + Fixture.otherAppToken.hex, topic: Fixture.otherBundle,
            signer: Fixture.narrow),
        Case(reason: .expiredProviderToken, signer: nil, extra: [("authorization", "EXPIRED")]),
        Case(reason: .forbidden, signer: Fixture.revoked),
        Case(reason: .invalidProviderToken, signer: Fixture.unregisteredKey),
        Case(reason: .missingProviderToken, signer: nil),
        Case(reason: .badEnvironmentKeyIdInToken, signer: Fixture.productionOnly),
        Case(reason: .badPath, path: "/4/device/" + Fixture.token.hex),
        Case(reason: .badPath, path: "/"),
        Case(reason: .methodNotAllowed, method: "GET", body: []),
        Case(reason: .unregistered, path: "/3/device/" + Fixture.uninstalledToken.hex),
        Case(reason: .expiredToken, path: "/3/device/" + Fixture.expiredToken.hex),
        Case(
            reason: .payloadTooLarge, body: Array(#"{"aps":{"alert":"\#(String(repeating: "x", count: 4096))"}}"#.utf8)),
        Case(reason: .internalServerError, path: "/3/device/" + Fixture.failingToken.hex),
        Case(reason: .serviceUnavailable, path: "/3/device/" + Fixture.overloadedToken.hex),
    ]

    @Test(arguments: cases, TestGateway.Transport.allCases)
    func rejects(_ testCase: Case, over transport: TestGateway.Transport) async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client(transport)
            var headers = gateway.headers(topic: testCase.topic, signer: testCase.signer, extra: testCase.extra)
            if let index = headers.firstIndex(where: { $0.1 == "EXPIRED" }) {
                headers[index].1 = gateway.bearer(issuedAt: gateway.clock.now.adding(seconds: -3601))
            }
            var head: HPACKHeaders = [
                ":method": testCase.method, ":scheme": "https", ":path": testCase.path, ":authority": "localhost",
            ]
            for (name, value) in headers { head.add(name: name, value: value) }
            let steps: [ProviderClient.Step] =
                testCase.body.isEmpty
                ? [.headers(head, endStream: true)]
                : [.headers(head, endStream: false), .data(testCase.body, endStream: true)]
            let response = try await client.send(steps)
            #expect(response.status == testCase.reason.status)
            #expect(response.reason == testCase.reason.rawValue)
            #expect(response.dataFrames == 1, "an error is one JSON DATA frame")
            #expect(response.header("apns-id") != nil)
            if testCase.reason.carriesTimestamp {
                #expect(response.timestamp == Fixture.uninstalledAt.milliseconds)
            } else {
                #expect(response.timestamp == nil)
            }
            #expect(gateway.intake.notifications.isEmpty)
            await client.close()
        }
    }

    @Test func everyReasonHasOneStatusFromApplesTable() {
        let byStatus = Dictionary(grouping: RejectionReason.allCases, by: \.status)
        #expect(Set(byStatus.keys) == [400, 403, 404, 405, 410, 413, 429, 500, 503])
        #expect(byStatus[400]?.count == 14)
        #expect(byStatus[403]?.count == 8)
        #expect(RejectionReason.allCases.count == 32)
    }

    @Test func tooManyRequestsPerDeviceToken() async throws {
        try await TestGateway.with(configure: { $0.perDeviceTokenRate = RateLimit(burst: 3, perSecond: 1) }) {
            gateway in
            let client = try await gateway.client()
            var statuses: [Int] = []
            for _ in 0..<4 {
                statuses.append(
                    try await client.post(
                        path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload
                    ).status)
            }
            #expect(statuses == [200, 200, 200, 429])
            let last = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload)
            #expect(last.reason == "TooManyRequests")
            gateway.clock.advance(seconds: 1)
            #expect(
                try await client.post(
                    path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload
                ).status == 200)
            await client.close()
        }
    }

    @Test func tooManyRequestsPerTeam() async throws {
        try await TestGateway.with(configure: { $0.perTeamRate = RateLimit(burst: 2, perSecond: 1) }) { gateway in
            let client = try await gateway.client()
            var reasons: [String?] = []
            for _ in 0..<3 {
                reasons.append(
                    try await client.post(
                        path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload
                    ).reason)
            }
            #expect(reasons == [nil, nil, "TooManyRequests"])
            await client.close()
        }
    }

    @Test func shutdownAnswersLateStreams() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            gateway.server.context.startDraining()
            let response = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload)
            #expect(response.status == 503)
            #expect(response.reason == "Shutdown")
            await client.close()
        }
    }
}
