import Foundation
import NIOCore
import NIOHPACK
import ProviderClient
import PushModel
import Testing

@testable import ProviderAPI

@Suite struct AcceptanceTests {
    @Test(arguments: TestGateway.Transport.allCases)
    func acceptsAndEndsOnHeaders(over transport: TestGateway.Transport) async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client(transport)
            let id = "4f6a2b1c-9d8e-4f7a-8b6c-5d4e3f2a1b0c"
            let response = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(extra: [("apns-id", id)]),
                body: alertPayload)
            #expect(response.status == 200)
            #expect(response.endedOnHeaders)
            #expect(response.dataFrames == 0)
            #expect(response.header("apns-id") == id)
            let received = try #require(gateway.intake.notifications.first)
            #expect(received.id.value == id)
            #expect(received.notificationClass == .alerting)
            #expect(received.pushType == .alert)
            #expect(received.priority == .immediate)
            #expect(received.teamID == Fixture.team)
            #expect(received.bundleID == Fixture.bundle)
            await client.close()
        }
    }

    /// The development environment answers a 200 with `apns-unique-id` too (Apple's sandbox does, for the
    /// Push Notifications Console's delivery log): derived from the apns-id, leading back to it; no error
    /// carries one, and production answers without it.
    @Test(arguments: TestGateway.Transport.allCases)
    func developmentAnswersWithAUniqueID(over transport: TestGateway.Transport) async throws {
        let id = "4f6a2b1c-9d8e-4f7a-8b6c-5d4e3f2a1b0c"
        try await TestGateway.with { gateway in
            let client = try await gateway.client(transport)
            let accepted = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(extra: [("apns-id", id)]),
                body: alertPayload)
            #expect(accepted.status == 200)
            let unique = try #require(accepted.header("apns-unique-id").flatMap { APNsID(header: $0) })
            #expect(unique != APNsID(header: id))
            #expect(unique.value == APNsID(header: id)!.uniqueID.value)
            #expect(APNsID(uniqueID: unique) == APNsID(header: id))
            let rejected = try await client.post(
                path: "/3/device/\(Fixture.unknownToken.hex)", headers: gateway.headers(), body: alertPayload)
            #expect(rejected.status != 200)
            #expect(rejected.header("apns-unique-id") == nil)
            await client.close()
        }
        try await TestGateway.with(configure: { $0.environment = .production }) { gateway in
            let client = try await gateway.client(transport)
            let accepted = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(extra: [("apns-id", id)]),
                body: alertPayload)
            #expect(accepted.status == 200)
            #expect(accepted.header("apns-unique-id") == nil)
            await client.close()
        }
    }

    @Test func echoesUpperCaseIDExactlyAndGeneratesLowerCase() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let upper = "4F6A2B1C-9D8E-4F7A-8B6C-5D4E3F2A1B0C"
            let echoed = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(extra: [("apns-id", upper)]),
                body: alertPayload)
            #expect(echoed.header("apns-id") == upper)
            let generated = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload)
            let id = try #require(generated.header("apns-id"))
            #expect(APNsID(header: id) != nil)
            #expect(id == id.lowercased())
            // On errors too.
            let rejected = try await client.post(
                path: "/3/device/\(Fixture.unknownToken.hex)", headers: gateway.headers(extra: [("apns-id", upper)]),
                body: alertPayload)
            #expect(rejected.header("apns-id") == upper)
            await client.close()
        }
    }

    @Test func classifiesAndInfersPushTypes() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let path = "/3/device/\(Fixture.token.hex)"
            // Silent without apns-push-type or priority: inferred background at priority 5.
            #expect(try await client.post(path: path, headers: gateway.headers(), body: silentPayload).status == 200)
            // VoIP inferred from the topic suffix.
            #expect(
                try await client.post(
                    path: path, headers: gateway.headers(topic: Fixture.bundle + ".voip"), body: alertPayload
                ).status == 200)
            // Alert with content-available and a badge is alerting, not silent.
            let mixed = Array(#"{"aps":{"content-available":1,"badge":3}}"#.utf8)
            #expect(
                try await client.post(
                    path: path, headers: gateway.headers(extra: [("apns-push-type", "alert")]), body: mixed
                ).status == 200)
            // Widgets push with its topic.
            let widgets = Array(#"{"aps":{"content-changed":true}}"#.utf8)
            #expect(
                try await client.post(
                    path: path,
                    headers: gateway.headers(
                        topic: Fixture.bundle + ".push-type.widgets", extra: [("apns-push-type", "widgets")]),
                    body: widgets
                ).status == 200)
            let received = gateway.intake.notifications
            #expect(received.map(\.notificationClass) == [.silent, .other, .alerting, .other])
            #expect(received.map(\.pushType) == [.background, .voip, .alert, .widgets])
            #expect(received[0].priority == .conservePower)
            #expect(received.map(\.bundleID) == Array(repeating: Fixture.bundle, count: 4))
            await client.close()
        }
    }

    @Test func payloadAndCollapseIDBoundaries() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let path = "/3/device/\(Fixture.token.hex)"
            func payload(size: Int) -> [UInt8] {
                let frame = #"{"aps":{"alert":""}}"#.utf8.count
                return Array(#"{"aps":{"alert":"\#(String(repeating: "x", count: size - frame))"}}"#.utf8)
            }
            #expect(payload(size: 4096).count == 4096)
            #expect(
                try await client.post(path: path, headers: gateway.headers(), body: payload(size: 4096)).status == 200)
            #expect(
                try await client.post(path: path, headers: gateway.headers(), body: payload(size: 4097)).status == 413)
            let voip = gateway.headers(topic: Fixture.bundle + ".voip", extra: [("apns-push-type", "voip")])
            #expect(try await client.post(path: path, headers: voip, body: payload(size: 5120)).status == 200)
            #expect(try await client.post(path: path, headers: voip, body: payload(size: 5121)).status == 413)
            let collapse64 = gateway.headers(extra: [("apns-collapse-id", String(repeating: "é", count: 32))])
            #expect(try await client.post(path: path, headers: collapse64, body: alertPayload).status == 200)
            let collapse65 = gateway.headers(extra: [("apns-collapse-id", String(repeating: "é", count: 32) + "x")])
            #expect(
                try await client.post(path: path, headers: collapse65, body: alertPayload).reason == "BadCollapseId")
            await client.close()
        }
    }

    @Test func manyConcurrentStreamsOnOneConnection() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client(.tls)
            let headers = gateway.headers()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for i in 0..<600 {
                    group.addTask {
                        // Every tenth request is bad, to mix errors among successes on one connection.
                        let body = i % 10 == 0 ? Array("{".utf8) : alertPayload
                        return try await client.post(
                            path: "/3/device/\(Fixture.token.hex)", headers: headers, body: body
                        ).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 540)
            #expect(statuses.filter { $0 == 400 }.count == 60)
            #expect(gateway.intake.notifications.count == 540)
            await client.close()
        }
    }

    @Test func tlsWithoutALPNStillSpeaksHTTP2() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client(.tls, alpn: [])
            let response = try await client.post(
                path: "/3/device/\(Fixture.token.hex)", headers: gateway.headers(), body: alertPayload)
            #expect(response.status == 200)
            await client.close()
        }
    }

    @Test func expirationAndCollapseIDTravelTyped() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let headers = gateway.headers(extra: [
                ("apns-expiration", "0"), ("apns-collapse-id", "score"), ("apns-priority", "5"),
            ])
            #expect(
                try await client.post(path: "/3/device/\(Fixture.token.hex)", headers: headers, body: alertPayload)
                    .status == 200)
            let received = try #require(gateway.intake.notifications.first)
            #expect(received.expiration == .immediateOnly)
            #expect(received.collapseID?.value == "score")
            #expect(received.priority == .conservePower)
            await client.close()
        }
    }
}
