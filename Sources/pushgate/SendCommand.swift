import ArgumentParser
import Foundation
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import WallClock

struct SendCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send", abstract: "Send one notification to an APNs-compatible server, as a backend would.")

    @Option(help: "Server URL: https://host:port (TLS) or http://host:port (h2c).")
    var url = "http://127.0.0.1:2198"

    @Option(help: "Device token (hex).")
    var token: String

    @Option(help: "apns-topic.")
    var topic: String

    @Option(help: "The .p8 private key that signs the provider token.")
    var key: String?

    @Option(help: "Team id (the token's iss).")
    var teamId: String?

    @Option(help: "Key id (the token's kid).")
    var keyId: String?

    @Option(help: "JSON payload.")
    var payload = #"{"aps":{"alert":"Hello from Pushgate"}}"#

    @Option(help: "apns-push-type (absent: inferred by the server).")
    var pushType: String?

    @Option(help: "apns-priority.")
    var priority: String?

    @Option(help: "apns-expiration.")
    var expiration: String?

    @Option(help: "apns-collapse-id.")
    var collapseId: String?

    @Option(help: "apns-id (absent: the server generates one).")
    var apnsId: String?

    @Option(help: "CA to trust for https (PEM); absent: no verification (development).")
    var caFile: String?

    @Option(help: "Client certificate (PEM) for certificate-based auth.")
    var certificate: String?

    @Option(help: "Private key (PEM) of --certificate.")
    var certificateKey: String?

    func run() async throws {
        guard let parsed = URL(string: url), let scheme = parsed.scheme, let host = parsed.host else {
            throw ValidationError("--url must look like https://host:port or http://host:port")
        }
        let port = parsed.port ?? (scheme == "https" ? 443 : 80)
        var headers: [(String, String)] = [("apns-topic", topic)]
        if let key {
            guard let teamId, let keyId else { throw ValidationError("--key needs --team-id and --key-id") }
            let signer = try ProviderTokenSigner(
                teamID: teamId, keyID: keyId, p8PEM: try String(contentsOfFile: key, encoding: .utf8))
            headers.append(("authorization", "bearer \(try signer.token(issuedAt: UnixTime.now()))"))
        }
        for (name, value) in [
            ("apns-push-type", pushType), ("apns-priority", priority), ("apns-expiration", expiration),
            ("apns-collapse-id", collapseId), ("apns-id", apnsId),
        ] {
            if let value { headers.append((name, value)) }
        }
        let security: ProviderClient.Security
        switch scheme {
        case "https":
            var clientCertificate: (String, String)?
            if let certificate {
                guard let certificateKey else { throw ValidationError("--certificate needs --certificate-key") }
                clientCertificate = (certificate, certificateKey)
            }
            security = .tls(trustRoots: caFile.map { [$0] } ?? [], alpn: ["h2"], clientCertificate: clientCertificate)
        case "http": security = .cleartext
        default: throw ValidationError("--url scheme must be https or http")
        }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let client = try await ProviderClient.connect(host: host, port: port, security: security, group: group)
        let response = try await client.post(path: "/3/device/\(token)", headers: headers, body: Array(payload.utf8))
        await client.close()
        try await group.shutdownGracefully()
        print(
            "\(response.status) apns-id: \(response.header("apns-id") ?? "-")\(response.body.isEmpty ? "" : " " + response.bodyText)"
        )
        if response.status != 200 { throw ExitCode(1) }
    }
}
