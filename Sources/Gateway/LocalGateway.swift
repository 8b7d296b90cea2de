import AdminAPI
import Crypto
import Foundation
import GatewayFiles
import Logging
import NIOCore
import ProviderAuth

/// A whole gateway on loopback, on free ports, with a fresh data directory and one provider key: what
/// `pushgate demo` runs and what end-to-end tests talk to. Its listeners are started; `stop()` stops
/// them and removes the directory.
public struct LocalGateway: Sendable {
    public let services: GatewayServices
    public let signer: ProviderTokenSigner
    public let dataDirectory: String
    public let providerPort: Int
    public let devicePort: Int
    public let adminPort: Int

    /// `settings`: more `key=value` overrides (the listeners' ports and the data directory are set here).
    public static func start(
        topic: String, settings: [String] = [], group: any EventLoopGroup, logger: Logger
    ) async throws -> LocalGateway {
        try await start(topics: [topic], settings: settings, group: group, logger: logger)
    }

    /// A gateway whose provider key may push to each of `topics`.
    public static func start(
        topics: [String], settings: [String] = [], group: any EventLoopGroup, logger: Logger
    ) async throws -> LocalGateway {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushgate-local-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        let raw = try RawConfiguration.load(
            path: nil, environment: [:],
            flags: [
                "data_dir=\(dataDirectory)", "provider.tls.enabled=false", "provider.h2c.port=0", "devices.port=0",
                "devices.tls.enabled=false", "admin.port=0", "devices.reload_seconds=0",
            ] + settings)
        let configuration = try GatewayConfiguration(raw)
        let key = P256.Signing.PrivateKey()
        let signer = ProviderTokenSigner(teamID: "LOCALTEAM1", keyID: "LOCALKEY01", privateKey: key)
        try RegistryFiles.addKey(
            .init(
                team_id: signer.teamID, key_id: signer.keyID, public_key: key.publicKey.pemRepresentation,
                topics: topics, environment: nil),
            to: configuration.keysFile)
        let services = try await GatewayServices(configuration: configuration, group: group, logger: logger)
        services.store.start()
        try await services.devices.start()
        try await services.provider.start()
        try await services.admin?.start()
        guard let providerPort = services.provider.boundAddresses.first?.port,
            let devicePort = services.devices.boundAddresses.first?.port, let adminPort = services.admin?.boundPort
        else { throw ConfigError(key: "admin.enabled", source: nil, message: "a local gateway needs every listener") }
        return LocalGateway(
            services: services, signer: signer, dataDirectory: dataDirectory, providerPort: providerPort,
            devicePort: devicePort, adminPort: adminPort)
    }

    public func stop() async throws {
        try await services.provider.shutdown()
        try await services.devices.shutdown()
        await services.admin?.shutdown()
        await services.store.shutdown()
        try? FileManager.default.removeItem(atPath: dataDirectory)
    }
}
