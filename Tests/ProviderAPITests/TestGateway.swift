import Crypto
import Foundation
import Gateway
import GatewayFiles
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import ProviderAuth
import ProviderClient
import PushIntake
import PushModel
import Synchronization
import TestSupport

@testable import ProviderAPI

/// A wall clock the test moves by hand.

/// Records what the provider API hands on; answers as told for some tokens.
final class RecordingIntake: NotificationIntake {
    let received = Mutex<[PushNotification]>([])
    /// Tokens whose submissions fail (500) or are refused as overloaded (503).
    let failing: Set<DeviceToken>
    let overloaded: Set<DeviceToken>

    init(failing: Set<DeviceToken> = [], overloaded: Set<DeviceToken> = []) {
        self.failing = failing
        self.overloaded = overloaded
    }

    func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply {
        if failing.contains(notification.deviceToken) {
            struct StoreDown: Error {}
            return .later(eventLoop.makeFailedFuture(StoreDown()))
        }
        if overloaded.contains(notification.deviceToken) {
            return .later(eventLoop.makeSucceededFuture(.rejected(Rejection(.serviceUnavailable))))
        }
        received.withLock { $0.append(notification) }
        return .now(.accepted)
    }

    var notifications: [PushNotification] { received.withLock { $0 } }
}

/// Keys, tokens and a gateway on loopback (TLS and h2c on free ports) for one test.
struct Fixture {
    static let team = "TEAM123456"
    static let otherTeam = "OTHER12345"
    static let bundle = "com.example.app"
    static let otherBundle = "com.example.other"

    static let token = DeviceToken(String(repeating: "ab", count: 32))!
    static let otherAppToken = DeviceToken(String(repeating: "cd", count: 32))!
    static let uninstalledToken = DeviceToken(String(repeating: "ef", count: 32))!
    static let expiredToken = DeviceToken(String(repeating: "12", count: 32))!
    static let failingToken = DeviceToken(String(repeating: "34", count: 32))!
    static let overloadedToken = DeviceToken(String(repeating: "56", count: 32))!
    static let unknownToken = DeviceToken(String(repeating: "78", count: 32))!
    static let uninstalledAt = UnixTime(milliseconds: 1_700_000_000_123)

    /// Signers by role.
    static let main = signer(keyID: "KEY1234567", team: team)
    static let second = signer(keyID: "KEY2222222", team: team)
    static let otherTeamKey = signer(keyID: "KEYOTHER01", team: otherTeam)
    static let productionOnly = signer(keyID: "KEYPROD001", team: team)
    static let revoked = signer(keyID: "KEYREVOKED", team: team)
    static let narrow = signer(keyID: "KEYNARROW1", team: team)
    static let unregisteredKey = signer(keyID: "KEYUNKNOWN", team: team)

    static func signer(keyID: String, team: String) -> ProviderTokenSigner {
        ProviderTokenSigner(teamID: team, keyID: keyID, privateKey: P256.Signing.PrivateKey())
    }

    static var keys: KeyRegistry {
        KeyRegistry([
            ProviderKey(teamID: team, keyID: main.keyID, publicKey: main.privateKey.publicKey),
            ProviderKey(teamID: team, keyID: second.keyID, publicKey: second.privateKey.publicKey),
            ProviderKey(teamID: otherTeam, keyID: otherTeamKey.keyID, publicKey: otherTeamKey.privateKey.publicKey),
            ProviderKey(
                teamID: team, keyID: productionOnly.keyID, publicKey: productionOnly.privateKey.publicKey,
                environment: .production),
            ProviderKey(teamID: team, keyID: revoked.keyID, publicKey: revoked.privateKey.publicKey, revoked: true),
            ProviderKey(teamID: team, keyID: narrow.keyID, publicKey: narrow.privateKey.publicKey, topics: [bundle]),
        ])
    }

    static var directory: InMemoryDeviceDirectory {
        InMemoryDeviceDirectory([
            token: .active(bundleID: bundle),
            otherAppToken: .active(bundleID: otherBundle),
            uninstalledToken: .unregistered(bundleID: bundle, since: uninstalledAt),
            expiredToken: .expired(bundleID: bundle, since: uninstalledAt),
            failingToken: .active(bundleID: bundle),
            overloadedToken: .active(bundleID: bundle),
        ])
    }
}

final class TestGateway: Sendable {
    let server: ProviderServer
    let intake: RecordingIntake
    let clock: ManualClock
    let group: MultiThreadedEventLoopGroup
    let directory: String
    let certificates: DevelopmentCertificates
    let tlsPort: Int
    let h2cPort: Int

    /// Starts a gateway; `configure` adjusts its settings.
    static func start(
        grants: [String: CertificateGrant] = [:], configure: (inout ProviderSettings) -> Void = { _ in }
    ) async throws -> TestGateway {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushgate-test-\(UUID().uuidString)"
        ).path
        let certificates = DevelopmentCertificates(dataDirectory: directory)
        try certificates.ensure()
        var settings = ProviderSettings()
        settings.perDeviceTokenRate = .unlimited
        configure(&settings)
        let clock = ManualClock()
        let intake = RecordingIntake(failing: [Fixture.failingToken], overloaded: [Fixture.overloadedToken])
        let context = ProviderContext(
            settings: settings, keys: Fixture.keys, directory: Fixture.directory, intake: intake,
            certificateGrants: CertificateGrants(grants), clock: { clock.now })
        var configuration = GatewayConfiguration.defaults()
        configuration.tls = .init(
            certificate: certificates.serverCertificatePath, privateKey: certificates.serverKeyPath,
            clientCA: certificates.caCertificatePath)
        let tls = try GatewayServices.tlsContext(configuration, logger: Logger(label: "test"))
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = ProviderServer(
            context: context,
            listeners: [
                ProviderListener(host: "127.0.0.1", port: 0, security: .tls(tls)),
                ProviderListener(host: "127.0.0.1", port: 0, security: .cleartext),
            ],
            group: group, logger: Logger(label: "test"), gracePeriod: .seconds(5))
        try await server.start()
        let ports = server.boundAddresses.map { $0.port! }
        return TestGateway(
            server: server, intake: intake, clock: clock, group: group, directory: directory,
            certificates: certificates, tlsPort: ports[0], h2cPort: ports[1])
    }

    private init(
        server: ProviderServer, intake: RecordingIntake, clock: ManualClock, group: MultiThreadedEventLoopGroup,
        directory: String, certificates: DevelopmentCertificates, tlsPort: Int, h2cPort: Int
    ) {
        self.server = server
        self.intake = intake
        self.clock = clock
        self.group = group
        self.directory = directory
        self.certificates = certificates
        self.tlsPort = tlsPort
        self.h2cPort = h2cPort
    }

    enum Transport: CaseIterable, Sendable { case h2c, tls }

    func client(_ transport: Transport = .h2c, alpn: [String] = ["h2"], clientCertificate: (String, String)? = nil)
        async throws -> ProviderClient
    {
        switch transport {
        case .h2c:
            return try await ProviderClient.connect(
                host: "127.0.0.1", port: h2cPort, security: .cleartext, group: group)
        case .tls:
            return try await ProviderClient.connect(
                host: "127.0.0.1", port: tlsPort,
                security: .tls(
                    trustRoots: [certificates.caCertificatePath], alpn: alpn, clientCertificate: clientCertificate),
                group: group)
        }
    }

    func stop() async throws {
        try await server.shutdown()
        try await group.shutdownGracefully()
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `body` with a started gateway and always stops it.
    static func with<T>(
        grants: [String: CertificateGrant] = [:], configure: (inout ProviderSettings) -> Void = { _ in },
        _ body: (TestGateway) async throws -> T
    ) async throws -> T {
        let gateway = try await start(grants: grants, configure: configure)
        do {
            let result = try await body(gateway)
            try await gateway.stop()
            return result
        } catch {
            try? await gateway.stop()
            throw error
        }
    }

    // MARK: Requests

    func bearer(_ signer: ProviderTokenSigner = Fixture.main, issuedAt: UnixTime? = nil) -> String {
        "bearer " + (try! signer.token(issuedAt: issuedAt ?? clock.now))
    }

    /// The headers of a valid alert push; tests change one thing.
    func headers(
        topic: String? = Fixture.bundle, signer: ProviderTokenSigner? = Fixture.main, extra: [(String, String)] = []
    ) -> [(String, String)] {
        var headers: [(String, String)] = []
        if let signer { headers.append(("authorization", bearer(signer))) }
        if let topic { headers.append(("apns-topic", topic)) }
        return headers + extra
    }
}

let alertPayload = Array(#"{"aps":{"alert":"hello"}}"#.utf8)
let silentPayload = Array(#"{"aps":{"content-available":1}}"#.utf8)

extension ProviderClient.Response {
    var reason: String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return object["reason"] as? String
    }

    var timestamp: Int64? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { return nil }
        return (object["timestamp"] as? NSNumber)?.int64Value
    }
}

extension TestGateway {
    /// A client that writes frames exactly as told, connected over h2c once the SETTINGS exchange is done
    /// both ways.
    func rawClient() async throws -> RawHTTP2 {
        let client = try await RawHTTP2(port: h2cPort, group: group)
        // The server's SETTINGS (ACKed by the client before anything else it sends) and its ACK of ours.
        try await client.waitFor { frames in
            frames.contains { $0.type == RawHTTP2.Frame.settings && $0.flags == 0 }
                && frames.contains { $0.type == RawHTTP2.Frame.settings && $0.flags == 1 }
        }
        return client
    }

    /// A valid request's header fields for `rawClient`.
    func rawRequest(path: String, extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "localhost")] + headers() + extra
    }
}
