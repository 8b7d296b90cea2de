import Foundation
import NIOHTTP2
import ProviderAuth
import ProviderClient
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// Provider-token (JWT) rules over a real connection, with the gateway's clock moved by hand.
@Suite struct ProviderTokenTests {
    let path = "/3/device/\(Fixture.token.hex)"

    func send(_ client: ProviderClient, _ gateway: TestGateway, authorization: String) async throws
        -> ProviderClient.Response
    {
        try await client.post(
            path: path, headers: [("authorization", authorization), ("apns-topic", Fixture.bundle)], body: alertPayload)
    }

    @Test func badSignatureIsInvalid() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let good = try Fixture.main.token(issuedAt: gateway.clock.now)
            var parts = good.split(separator: ".").map(String.init)
            let forged = try Fixture.second.token(issuedAt: gateway.clock.now).split(separator: ".")[2]
            parts[2] = String(forged)
            #expect(
                try await send(client, gateway, authorization: "bearer " + parts.joined(separator: ".")).reason
                    == "InvalidProviderToken")
            #expect(try await send(client, gateway, authorization: "bearer not.a.jwt").reason == "InvalidProviderToken")
            #expect(try await send(client, gateway, authorization: "bearer").reason == "MissingProviderToken")
            // A value ending in white space is malformed HTTP/2 (RFC 9113 §8.2.1): the stream is reset.
            await #expect(throws: ProviderClient.ClientError.streamReset(.protocolError)) {
                _ = try await send(client, gateway, authorization: "bearer ")
            }
            #expect(try await send(client, gateway, authorization: "basic abc").reason == "MissingProviderToken")
            await client.close()
        }
    }

    /// A connection that keeps presenting forged tokens is closed with GOAWAY once it has spent its
    /// budget of failed verifications; another connection is not affected.
    @Test func aConnectionPresentingForgedTokensIsClosed() async throws {
        try await TestGateway.with { gateway in
            let forger = try await gateway.client()
            var answers: [String?] = []
            for second in 0..<20 {
                let forged = try Fixture.second.token(issuedAt: gateway.clock.now.adding(seconds: Int64(-second)))
                let parts = try Fixture.main.token(issuedAt: gateway.clock.now).split(separator: ".")
                let mixed = [parts[0], parts[1], forged.split(separator: ".")[2]].joined(separator: ".")
                guard let response = try? await send(forger, gateway, authorization: "bearer " + mixed) else { break }
                answers.append(response.reason)
            }
            #expect(answers.count == ProviderSettings().auth.maxFailedVerifications, "closed after the budget")
            #expect(answers.allSatisfy { $0 == "InvalidProviderToken" })
            let honest = try await gateway.client()
            let good = try Fixture.main.token(issuedAt: gateway.clock.now)
            #expect(try await send(honest, gateway, authorization: "bearer " + good).status == 200)
            await forger.close()
            await honest.close()
        }
    }

    @Test func otherAlgorithmIsInvalid() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let token = try Fixture.main.token(issuedAt: gateway.clock.now, algorithm: "HS256")
            #expect(try await send(client, gateway, authorization: "bearer " + token).reason == "InvalidProviderToken")
            let none = try Fixture.main.token(issuedAt: gateway.clock.now, algorithm: "none")
            #expect(try await send(client, gateway, authorization: "bearer " + none).reason == "InvalidProviderToken")
            await client.close()
        }
    }

    @Test func expiresAfterAnHourEvenWhenCached() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let token = gateway.bearer()
            #expect(try await send(client, gateway, authorization: token).status == 200)
            gateway.clock.advance(seconds: 3600)
            #expect(try await send(client, gateway, authorization: token).status == 200)
            gateway.clock.advance(seconds: 1)
            #expect(try await send(client, gateway, authorization: token).reason == "ExpiredProviderToken")
            await client.close()
        }
    }

    @Test func futureIssuedAtIsInvalid() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let nearFuture = gateway.bearer(issuedAt: gateway.clock.now.adding(seconds: 30))
            #expect(try await send(client, gateway, authorization: nearFuture).status == 200)
            let client2 = try await gateway.client()
            let farFuture = gateway.bearer(issuedAt: gateway.clock.now.adding(seconds: 600))
            #expect(try await send(client2, gateway, authorization: farFuture).reason == "InvalidProviderToken")
            await client.close()
            await client2.close()
        }
    }

    @Test func unknownKeyIsInvalid() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            #expect(
                try await send(client, gateway, authorization: gateway.bearer(Fixture.unregisteredKey)).reason
                    == "InvalidProviderToken")
            await client.close()
        }
    }

    @Test func issuedAtAsStringIsAccepted() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let token = try Fixture.main.token(issuedAt: gateway.clock.now, iatAsString: true)
            #expect(try await send(client, gateway, authorization: "bearer " + token).status == 200)
            await client.close()
        }
    }

    @Test func secondTeamOnOneConnectionIsUnrelated() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            #expect(try await send(client, gateway, authorization: gateway.bearer()).status == 200)
            #expect(
                try await send(client, gateway, authorization: gateway.bearer(Fixture.otherTeamKey)).reason
                    == "UnrelatedKeyIdInToken")
            // The connection's own team still works, and another connection may use the other team.
            #expect(try await send(client, gateway, authorization: gateway.bearer()).status == 200)
            let other = try await gateway.client()
            #expect(try await send(other, gateway, authorization: gateway.bearer(Fixture.otherTeamKey)).reason == nil)
            await client.close()
            await other.close()
        }
    }

    @Test func tokenChurnIsLimitedPerConnection() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            func fresh() -> String {
                gateway.clock.advance(seconds: 1)
                return gateway.bearer()
            }
            let first = fresh()
            #expect(try await send(client, gateway, authorization: first).status == 200)
            // The default burst allows two changes; the third within 20 minutes is refused.
            #expect(try await send(client, gateway, authorization: fresh()).status == 200)
            let second = fresh()
            #expect(try await send(client, gateway, authorization: second).status == 200)
            #expect(try await send(client, gateway, authorization: fresh()).reason == "TooManyProviderTokenUpdates")
            // The token in use keeps working, and so does the one before it (requests in flight at a refresh).
            #expect(try await send(client, gateway, authorization: second).status == 200)
            // After 20 minutes one more change is allowed.
            gateway.clock.advance(seconds: 20 * 60)
            #expect(try await send(client, gateway, authorization: gateway.bearer()).status == 200)
            await client.close()
        }
    }
}
