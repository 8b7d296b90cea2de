import Foundation
import Gateway
import GatewayFiles
import ProviderAuth
import ProviderClient
import PushModel
import SwiftASN1
import Testing
import X509

@testable import ProviderAPI

/// Certificate-based provider authentication over real TLS with client certificates.
@Suite struct CertificateAuthTests {
    struct Issued {
        var certificate: String
        var key: String
        var sha256: String
    }

    func issue(_ gateway: TestGateway, _ name: String) throws -> Issued {
        let issued = try gateway.certificates.issueClientCertificate(topic: Fixture.bundle, teamID: Fixture.team)
        let certificate = gateway.directory + "/\(name).pem"
        let key = gateway.directory + "/\(name)-key.pem"
        try issued.certificate.write(toFile: certificate, atomically: true, encoding: .utf8)
        try issued.privateKey.write(toFile: key, atomically: true, encoding: .utf8)
        return Issued(certificate: certificate, key: key, sha256: issued.sha256)
    }

    /// Apple's push certificates name the bundle id in the subject's UID (clients that send no topic read
    /// it there), and each PEM ends with a newline so that certificate and key concatenate into one file.
    @Test func issuedCertificatesLookLikeApplesAndConcatenate() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("pushgate-cert-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let issued = try DevelopmentCertificates(dataDirectory: directory)
            .issueClientCertificate(topic: "com.example.app", teamID: "TEAM123456")
        #expect(issued.certificate.hasSuffix("-----END CERTIFICATE-----\n"))
        #expect(issued.privateKey.hasSuffix("-----END PRIVATE KEY-----\n"))
        let certificate = try Certificate(pemEncoded: issued.certificate)
        let subject = certificate.subject.description
        #expect(subject.contains("0.9.2342.19200300.100.1.1=com.example.app"), "UID: \(subject)")
        #expect(subject.contains("CN=Apple Push Services: com.example.app"), "\(subject)")
        #expect(subject.contains("OU=TEAM123456"), "\(subject)")
        // One file with both reads back as both.
        let both = issued.certificate + issued.privateKey
        #expect(
            try Certificate(pemEncoded: String(both.prefix(upTo: both.range(of: "-----BEGIN PRIVATE KEY")!.lowerBound)))
                == certificate)
    }

    @Test func registeredCertificatePushesToItsTopics() async throws {
        try await TestGateway.with { gateway in
            let good = try issue(gateway, "good")
            let production = try issue(gateway, "production")
            let unknown = try issue(gateway, "unknown")
            gateway.server.context.replaceCertificateGrants(
                CertificateGrants([
                    good.sha256: CertificateGrant(teamID: Fixture.team, topics: [Fixture.bundle]),
                    production.sha256: CertificateGrant(topics: [Fixture.bundle], environment: .production),
                ]))
            let path = "/3/device/\(Fixture.token.hex)"

            let client = try await gateway.client(.tls, clientCertificate: (good.certificate, good.key))
            // The topic may be omitted: the certificate has one.
            #expect(try await client.post(path: path, headers: [], body: alertPayload).status == 200)
            #expect(
                try await client.post(path: path, headers: [("apns-topic", Fixture.bundle)], body: alertPayload).status
                    == 200)
            let other = try await client.post(
                path: "/3/device/\(Fixture.otherAppToken.hex)", headers: [("apns-topic", Fixture.otherBundle)],
                body: alertPayload)
            #expect(other.reason == "TopicDisallowed")
            let location = try await client.post(
                path: path,
                headers: [("apns-topic", Fixture.bundle + ".location-query"), ("apns-push-type", "location")],
                body: alertPayload)
            #expect(location.reason == "InvalidPushType")
            // Live Activities too: ActivityKit's tokens are for token-based connections only.
            let liveActivity = try await client.post(
                path: path,
                headers: [
                    ("apns-topic", Fixture.bundle + ".push-type.liveactivity"), ("apns-push-type", "liveactivity"),
                ],
                body: Array(#"{"aps":{"timestamp":1700000000,"event":"update","content-state":{}}}"#.utf8))
            #expect(liveActivity.reason == "InvalidPushType")
            #expect(gateway.intake.notifications.map(\.teamID) == [Fixture.team, Fixture.team])
            await client.close()

            let wrongEnvironment = try await gateway.client(
                .tls, clientCertificate: (production.certificate, production.key))
            #expect(
                try await wrongEnvironment.post(path: path, headers: [], body: alertPayload).reason
                    == "BadCertificateEnvironment")
            await wrongEnvironment.close()

            let stranger = try await gateway.client(.tls, clientCertificate: (unknown.certificate, unknown.key))
            let refused = try await stranger.post(path: path, headers: gateway.headers(), body: alertPayload)
            #expect(refused.status == 403)
            #expect(refused.reason == "BadCertificate")
            await stranger.close()
        }
    }
}
