import Foundation
import Gateway
import GatewayFiles
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import ProviderAPI
import ProviderAuth
import ProviderClient
import PushModel
import TestSupport
import Testing
import WallClock

/// The channel-management API on its own listener, over h2c and TLS, as Apple documents it: create (201,
/// `apns-channel-id`), read (200, the policy), list (`all-channels`), delete (204), each answer with the
/// request's `apns-request-id` (or a new one); and Apple's errors for the path, method, channel id, body,
/// credential and the per-app limit.
@Suite(.timeLimit(.minutes(5))) struct ChannelManagementTests {
    static let bundle = "com.example.scores"

    enum Transport: CaseIterable { case h2c, tls }

    @Test(arguments: Transport.allCases) func channelsAreCreatedReadListedAndDeleted(over transport: Transport)
        async throws
    {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await run(transport, group)
            try await group.shutdownGracefully()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    func run(_ transport: Transport, _ group: MultiThreadedEventLoopGroup) async throws {
        try await LocalGateway.run(
            topic: Self.bundle,
            settings: [
                "log.level=error", "channels.tls.enabled=true", "channels.tls.port=0", "broadcast.channels_per_app=2",
            ],
            group: group, logger: Logger(label: "test")
        ) { gateway in
            let ports = gateway.channelPorts
            #expect(ports.count == 2)
            let port = try #require(transport == .tls ? ports.first : ports.last)
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: port,
                security: transport == .tls
                    ? .tls(trustRoots: [], alpn: ["h2"], clientCertificate: nil) : .cleartext,
                group: group)
            let authorization = "bearer " + (try gateway.signer.token(issuedAt: UnixTime.now()))
            func request(
                _ method: String, _ path: String, _ headers: [(String, String)] = [], body: String = "",
                authorized: Bool = true
            ) async throws -> ProviderClient.Response {
                var head: HPACKHeaders = [
                    ":method": method, ":scheme": "https", ":path": path, ":authority": "localhost",
                ]
                if authorized { head.add(name: "authorization", value: authorization) }
                for (name, value) in headers { head.add(name: name, value: value) }
                if body.isEmpty { return try await client.send([.headers(head, endStream: true)]) }
                return try await client.send([
                    .headers(head, endStream: false), .data(Array(body.utf8), endStream: true),
                ])
            }
            let channels = "/1/apps/\(Self.bundle)/channels"
            let requestID = "2288cf3f-70d8-46a6-97d7-dd5d00867127"

            let created = try await request(
                "POST", channels, [("apns-request-id", requestID)],
                body: #"{"message-storage-policy": 1, "push-type": "LiveActivity"}"#)
            #expect(created.status == 201)
            #expect(created.header("apns-request-id") == requestID)
            let id = try #require(created.header("apns-channel-id"))
            #expect(ChannelID(id) != nil)

            let read = try await request("GET", channels, [("apns-channel-id", id)])
            #expect(read.status == 200)
            #expect(read.bodyText == #"{"message-storage-policy":1,"push-type":"LiveActivity"}"#)
            #expect(APNsID(header: read.header("apns-request-id") ?? "") != nil, "a generated request id")

            let second = try await request(
                "POST", channels, body: #"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#)
            let secondID = try #require(second.header("apns-channel-id"))
            let list = try await request("GET", "/1/apps/\(Self.bundle)/all-channels")
            #expect(list.status == 200)
            let listed = try JSONSerialization.jsonObject(with: Data(list.bodyText.utf8)) as? [String: Any]
            #expect(listed?["channels"] as? [String] == [id, secondID])

            // Apple's errors, each with its status.
            func reason(_ response: ProviderClient.Response) -> String {
                "\(response.status) "
                    + ((try? JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any])?[
                        "reason"] as? String ?? "-")
            }
            #expect(
                reason(
                    try await request(
                        "POST", channels, body: #"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#))
                    == "400 CannotCreateChannelConfig")
            #expect(reason(try await request("GET", channels)) == "400 MissingChannelId")
            #expect(
                reason(try await request("GET", channels, [("apns-channel-id", "not base64!")])) == "400 BadChannelId")
            #expect(
                reason(try await request("GET", channels, [("apns-channel-id", "b3RoZXI=")]))
                    == "400 ChannelNotRegistered")
            #expect(reason(try await request("PUT", channels)) == "405 MethodNotAllowed")
            #expect(reason(try await request("POST", "/1/apps/\(Self.bundle)/all-channels")) == "405 MethodNotAllowed")
            #expect(reason(try await request("GET", "/1/apps/\(Self.bundle)/other")) == "404 BadPath")
            #expect(reason(try await request("POST", channels, body: "{not json")) == "400 BadRequestPayload")
            #expect(
                reason(try await request("POST", channels, body: #"{"message-storage-policy": 0}"#))
                    == "400 MissingPushType")
            #expect(
                reason(
                    try await request("POST", channels, body: #"{"message-storage-policy": 0, "push-type": "Alert"}"#))
                    == "400 InvalidPushType")
            #expect(
                reason(
                    try await request(
                        "POST", channels,
                        body: #"{"message-storage-policy": 0, "push-type": "LiveActivity", "color": 1}"#))
                    == "400 BadRequestParams")
            #expect(
                reason(try await request("GET", channels, [("apns-channel-id", id)], authorized: false))
                    == "403 MissingProviderToken")
            #expect(reason(try await request("GET", "/1/apps/com.example.other/all-channels")) == "403 TopicMismatch")

            let deleted = try await request("DELETE", channels, [("apns-channel-id", id)])
            #expect(deleted.status == 204)
            #expect(reason(try await request("GET", channels, [("apns-channel-id", id)])) == "400 ChannelNotRegistered")
            #expect(
                reason(try await request("DELETE", channels, [("apns-channel-id", id)])) == "400 ChannelNotRegistered")
            // The deleted channel's place is free again.
            #expect(
                try await request(
                    "POST", channels, body: #"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#
                )
                .status == 201)
            await client.close()
        }
    }

    /// A registered client certificate manages its app's channels without a provider token (mTLS, as
    /// Apple allows); another app's path is `TopicMismatch`; a certificate the gateway does not know is
    /// `BadCertificate`.
    @Test func aClientCertificateManagesItsAppsChannels() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            try await LocalGateway.run(
                topic: Self.bundle,
                settings: [
                    "log.level=error", "channels.tls.enabled=true", "channels.tls.port=0", "channels.h2c.enabled=false",
                ],
                group: group, logger: Logger(label: "test")
            ) { gateway in
                let port = try #require(gateway.channelPorts.first)
                let certificates = DevelopmentCertificates(dataDirectory: gateway.dataDirectory)
                func issue(_ name: String) throws -> (chain: String, key: String, sha256: String) {
                    let issued = try certificates.issueClientCertificate(topic: Self.bundle, teamID: "LOCALTEAM1")
                    let chain = gateway.dataDirectory + "/\(name).pem"
                    let key = gateway.dataDirectory + "/\(name)-key.pem"
                    try issued.certificate.write(toFile: chain, atomically: true, encoding: .utf8)
                    try issued.privateKey.write(toFile: key, atomically: true, encoding: .utf8)
                    return (chain, key, issued.sha256)
                }
                let registered = try issue("registered")
                let stranger = try issue("stranger")
                gateway.services.provider.context.replaceCertificateGrants(
                    CertificateGrants([registered.sha256: CertificateGrant(teamID: "LOCALTEAM1", topics: [Self.bundle])]
                    ))
                func connect(_ certificate: (chain: String, key: String, sha256: String)) async throws -> ProviderClient
                {
                    try await ProviderClient.connect(
                        host: "127.0.0.1", port: port,
                        security: .tls(
                            trustRoots: [], alpn: ["h2"], clientCertificate: (certificate.chain, certificate.key)),
                        group: group)
                }
                func post(_ client: ProviderClient, _ bundle: String) async throws -> ProviderClient.Response {
                    try await client.post(
                        path: "/1/apps/\(bundle)/channels", headers: [],
                        body: Array(#"{"message-storage-policy": 0, "push-type": "LiveActivity"}"#.utf8))
                }
                let client = try await connect(registered)
                #expect(try await post(client, Self.bundle).status == 201)
                #expect(try await post(client, "com.example.other").bodyText.contains("TopicMismatch"))
                await client.close()
                let unknown = try await connect(stranger)
                let refused = try await post(unknown, Self.bundle)
                #expect(refused.status == 403)
                #expect(refused.bodyText.contains("BadCertificate"))
                await unknown.close()
            }
            try await group.shutdownGracefully()
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }
}
