import AdminAPI
import Crypto
import DeviceHub
import Foundation
import GatewayFiles
import Logging
import NIOCore
import ProviderAPI
import ProviderAuth
import ServiceLifecycle
import Synchronization

/// A whole gateway on loopback, on free ports, with a fresh data directory and one provider key: what
/// `pushgate demo` runs and what end-to-end tests talk to. It runs the services `pushgate serve` runs,
/// in the same `ServiceGroup` and order (`GatewayServices.serviceGroup`), for as long as the body of
/// `run` does; then it shuts them down as `serve` does on SIGTERM and removes the directory.
public struct LocalGateway: Sendable {
    public let services: GatewayServices
    public let signer: ProviderTokenSigner
    public let dataDirectory: String
    public let providerPort: Int
    public let devicePort: Int
    public let adminPort: Int
    private let group: ServiceGroup

    /// The channel-management API's ports, TLS first when it is on (none when both are off).
    public var channelPorts: [Int] { services.channels?.boundAddresses.compactMap(\.port) ?? [] }

    /// Runs a gateway whose provider key may push to `topic` while `body` runs.
    public static func run<Result>(
        topic: String, settings: [String] = [], group: any EventLoopGroup, logger: Logger,
        _ body: (LocalGateway) async throws -> Result
    ) async throws -> Result {
        try await run(topics: [topic], settings: settings, group: group, logger: logger, body)
    }

    /// Runs a gateway whose provider key may push to each of `topics` while `body` runs. `settings`: more
    /// `key=value` overrides (the listeners' ports and the data directory are set here). The gateway is
    /// shut down gracefully when `body` returns or throws (or `shutDown()` is called from it).
    public static func run<Result>(
        topics: [String], settings: [String] = [], group: any EventLoopGroup, logger: Logger,
        _ body: (LocalGateway) async throws -> Result
    ) async throws -> Result {
        let dataDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("pushgate-local-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dataDirectory) }
        let raw = try RawConfiguration.load(
            path: nil, environment: [:],
            flags: [
                "data_dir=\(dataDirectory)", "provider.tls.enabled=false", "provider.h2c.port=0", "devices.port=0",
                "devices.tls.enabled=false", "admin.port=0", "devices.reload_seconds=0", "channels.tls.enabled=false",
                "channels.h2c.port=0",
            ] + settings)
        let configuration = try GatewayConfiguration(raw)
        let key = P256.Signing.PrivateKey()
        let signer = ProviderTokenSigner(teamID: "LOCALTEAM1", keyID: "LOCALKEY01", privateKey: key)
        try RegistryFiles.addKey(
            .init(
                team_id: signer.teamID, key_id: signer.keyID, public_key: key.publicKey.pemRepresentation,
                topics: topics, environment: nil),
            to: configuration.keysFile)
        return try await GatewayServices.withServices(configuration: configuration, group: group, logger: logger) {
            services in
            let serviceGroup = services.serviceGroup(stoppedBySignals: false, logger: logger)
            return try await withThrowingTaskGroup(of: Void.self) { tasks in
                let failure = Mutex<(any Error)?>(nil)
                tasks.addTask {
                    do {
                        try await serviceGroup.run()
                    } catch {
                        failure.withLock { $0 = error }
                        throw error
                    }
                }
                let result: Result
                do {
                    let gateway = try await listening(
                        services, signer: signer, dataDirectory: dataDirectory, group: serviceGroup,
                        failure: { failure.withLock { $0 } })
                    result = try await body(gateway)
                } catch {
                    await serviceGroup.triggerGracefulShutdown()
                    try? await tasks.waitForAll()
                    throw error
                }
                await serviceGroup.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            }
        }
    }

    /// Shuts the gateway down now, as `serve` does on SIGTERM (the provider API drains, the store commits
    /// last); `run` returns once its body does and every service has stopped.
    public func shutDown() async {
        await group.triggerGracefulShutdown()
    }

    /// Waits until every listener is bound (the services start together in the group), or the group
    /// failed.
    private static func listening(
        _ services: GatewayServices, signer: ProviderTokenSigner, dataDirectory: String, group: ServiceGroup,
        failure: () -> (any Error)?
    ) async throws -> LocalGateway {
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            if let failure = failure() { throw failure }
            let channelsBound = services.channels?.isBound ?? true
            if let providerPort = services.provider.boundAddresses.first?.port,
                let devicePort = services.devices.boundAddresses.first?.port, let adminPort = services.admin?.boundPort,
                channelsBound
            {
                return LocalGateway(
                    services: services, signer: signer, dataDirectory: dataDirectory, providerPort: providerPort,
                    devicePort: devicePort, adminPort: adminPort, group: group)
            }
            try await Task.sleep(for: .milliseconds(5))  // clock-ok: real listeners binding, bounded
        }
        throw ConfigError(
            key: "admin.enabled", source: nil, message: "a local gateway's listeners were not bound within 30 s")
    }
}
