import AdminAPI
import ConnectionLimits
import DeviceHub
import Foundation
#if canImport(Glibc)
    import Glibc
#endif
import GatewayFiles
import Logging
import NodeLinks
import NIOCore
import NIOPosix
import NIOSSL
import ProviderAPI
import ProviderAuth
import PushIntake
import PushModel
import PushStore
import ServiceLifecycle
import UnixSignals
import WallClock

/// The gateway assembled from its configuration: the provider API's listeners and the registry reloader,
/// as services to run in one `ServiceGroup` (in dependency order).
public struct GatewayServices: Sendable {
    public let configuration: GatewayConfiguration
    public let context: ProviderContext
    public let directory: InMemoryDeviceDirectory
    public let hub: DeviceHub
    public let provider: ProviderServer
    /// The broadcast channel-management API (nil when both its listeners are off).
    public let channels: ChannelManagementServer?
    public let devices: DeviceServer
    public let reloader: RegistryReloader
    public let admin: AdminServer?
    public let store: StoreService
    /// With several nodes on one PostgreSQL database: the notices between them.
    public let cluster: ClusterService?
    public let metrics: GatewayMetrics
    /// Figures a fleet in the same process shows on the admin port (`pushgate demo`).
    public let attached = AttachedFigures()

    /// In dependency order: the store first and devices next, so that the provider API never hands a
    /// push to a hub that is not up; shutdown runs in reverse, so the store commits last. The admin API
    /// starts first and stops last: while the gateway drains, `/ready` answers 503 (`not_draining`
    /// false) and `/health` 200, until the process exits.
    public var services: [any Service] {
        var services: [any Service] = []
        if let admin { services.append(admin) }
        services.append(store)
        if let cluster { services.append(cluster) }
        services += [devices, provider] as [any Service]
        if let channels { services.append(channels) }
        services.append(reloader)
        return services
    }

    /// The one composition: `pushgate serve` (shut down by SIGTERM and SIGINT), the demo and the tests
    /// (`LocalGateway`, shut down when they are done) run these services in this group, so every run
    /// starts and shuts down in the same order.
    public func serviceGroup(stoppedBySignals: Bool, logger: Logger) -> ServiceGroup {
        ServiceGroup(
            configuration: .init(
                services: services.map { ServiceGroupConfiguration.ServiceConfiguration(service: $0) },
                gracefulShutdownSignals: stoppedBySignals ? [.sigterm, .sigint] : [], logger: logger))
    }

    /// Opens the store, assembles the services and runs `body` with them (which runs `serviceGroup`),
    /// beside what the store needs in the background — PostgreSQL's connection pool, the nodes'
    /// listening connection — in one task group: nothing outlives the call. `serve`, the demo and the
    /// tests (`LocalGateway`) all come in here.
    public static func withServices<Result>(
        configuration: GatewayConfiguration, group: any EventLoopGroup, logger: Logger,
        _ body: (GatewayServices) async throws -> Result
    ) async throws -> Result {
        let backend = try StoreService.backend(configuration.store)
        let cluster = (backend as? any ClusterStore).map {
            ClusterService(
                cluster: $0, settings: configuration.store.cluster, logger: Logger(label: "pushgate.cluster"))
        }
        return try await withThrowingTaskGroup(of: Void.self) { background in
            background.addTask { await backend.run() }
            if let cluster { background.addTask { await cluster.listen() } }
            defer { background.cancelAll() }
            let open: @Sendable () async throws -> GatewayServices = {
                try await GatewayServices(
                    configuration: configuration, backend: backend, cluster: cluster, group: group, logger: logger)
            }
            // A database that does not answer is reported, not waited for in silence (its pool retries
            // for ever); an embedded store opens a local file.
            guard cluster != nil else { return try await body(try await open()) }
            let seconds = configuration.store.startSeconds
            let place = (backend as? PostgresStore)?.place ?? "PostgreSQL"
            let services = try await Self.within(seconds: seconds, open) {
                ConfigError(
                    key: ConfigKeys.postgresURL.name, source: nil,
                    message:
                        "the database at \(place) did not answer within \(seconds) s (store.postgres.start_seconds): is the server running and reachable?"
                )
            }
            return try await body(services)
        }
    }

    /// `work`'s value, or `failure()` if it takes longer than `seconds` (then `work` is cancelled).
    private static func within<T: Sendable>(
        seconds: Int64, _ work: @escaping @Sendable () async throws -> T, failure: () -> any Error
    ) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { race in
            race.addTask { try await work() }
            race.addTask {
                try await Task.sleep(for: .seconds(seconds))
                return nil
            }
            defer { race.cancelAll() }
            guard let first = try await race.next(), let value = first else { throw failure() }
            return value
        }
    }

    /// Opens the store (migrations, then what it kept is restored into the hub) and assembles the
    /// services; the backend's background work and the cluster's listening run beside (`withServices`).
    private init(
        configuration: GatewayConfiguration, backend: any StoreBackend, cluster: ClusterService?,
        group: any EventLoopGroup, logger: Logger
    ) async throws {
        self.configuration = configuration
        let settings = configuration.provider
        let keys = try RegistryFiles.loadKeys(configuration.keysFile)
        let grants = try RegistryFiles.loadCertificates(configuration.certificatesFile)
        directory = InMemoryDeviceDirectory(
            try RegistryFiles.loadTokens(configuration.tokensFile, lengths: settings.deviceTokenLengths))
        self.cluster = cluster
        // Listening before the snapshot is read: a notice committed after it is queued, not missed.
        try await cluster?.waitUntilListening()
        let snapshot: StoreSnapshot
        do {
            snapshot = try await backend.open(now: UnixTime.now())
        } catch {
            cluster?.stop()
            throw error
        }
        // Every node names itself (store.postgres.node_id, or <hostname>:<devices.port>), SQLite ones too.
        let metrics = GatewayMetrics(node: configuration.store.nodeID)
        self.metrics = metrics
        store = StoreService(
            backend: backend, settings: configuration.store, logger: Logger(label: "pushgate.store"),
            onCommit: { metrics.committed(changes: $0, elapsed: $1) })
        hub = DeviceHub(
            // In memory, nothing survives the process anyway: the hub answers at once and writes nothing.
            registry: DeviceRegistry(
                writer: configuration.store.backend == .memory ? nil : store.writer,
                nodeID: cluster == nil ? nil : configuration.store.nodeID),
            policy: configuration.policy, settings: try Self.hubSettings(configuration),
            logger: Logger(label: "pushgate.devices"))
        let knownDevices = snapshot.devices.count
        // Consumed: the snapshot's rows are freed before the allocator is asked to return their pages.
        let restored = hub.restore(consume snapshot)
        // Several nodes: routed pushes go over the links, authenticated with the fleet's own secret.
        var links: (NodeLinks, NodeTokens)?
        if cluster != nil, let shared = backend as? any ClusterStore {
            let tokens = NodeTokens(secret: try await shared.fleetSecret())
            let made = NodeLinks(
                nodeID: shared.nodeID, tokens: tokens, group: group, settings: configuration.store.links,
                logger: Logger(label: "pushgate.links"), clock: UnixTime.now)
            hub.route(through: made)
            links = (made, tokens)
        }
        logger.info(
            "store opened",
            metadata: [
                "backend": "\(backend.kind)", "devices": "\(knownDevices)", "held_restored": "\(restored)",
                "node": "\(cluster == nil ? "-" : configuration.store.nodeID)",
            ])
        Self.returnFreedMemory()
        context = ProviderContext(
            settings: settings, keys: keys, directory: CombinedDirectory([hub.registry, directory]), intake: hub,
            certificateGrants: grants, metrics: metrics.provider, broadcasts: (hub.channels, hub))
        if let (_, tokens) = links { context.takeRoutes(hub, tokens: tokens) }

        var listeners: [ProviderListener] = []
        if configuration.tlsListener.enabled {
            let tls = try Self.tlsContext(configuration, logger: logger)
            listeners.append(
                ProviderListener(
                    host: configuration.tlsListener.host, port: configuration.tlsListener.port, security: .tls(tls),
                    setting: "provider.tls.port"))
        }
        if configuration.h2cListener.enabled {
            listeners.append(
                ProviderListener(
                    host: configuration.h2cListener.host, port: configuration.h2cListener.port, security: .cleartext,
                    setting: "provider.h2c.port"))
        }
        provider = ProviderServer(
            context: context, listeners: listeners, group: group, logger: logger,
            gracePeriod: .seconds(configuration.shutdownGraceSeconds),
            gate: ConnectionGate(name: "provider", limits: configuration.providerGate, logger: logger))
        cluster?.deliver(
            to: hub, links: links?.0,
            routeAddress: Self.routeAddress(configuration.store.routeAddress, listeners: listeners, provider: provider))
        var channelListeners: [ProviderListener] = []
        if configuration.channelTLSListener.enabled {
            channelListeners.append(
                ProviderListener(
                    host: configuration.channelTLSListener.host, port: configuration.channelTLSListener.port,
                    security: .tls(try Self.tlsContext(configuration, logger: logger)), setting: "channels.tls.port"))
        }
        if configuration.channelH2CListener.enabled {
            channelListeners.append(
                ProviderListener(
                    host: configuration.channelH2CListener.host, port: configuration.channelH2CListener.port,
                    security: .cleartext, setting: "channels.h2c.port"))
        }
        channels =
            channelListeners.isEmpty
            ? nil
            : ChannelManagementServer(
                context: context, directory: hub.channels, listeners: channelListeners, group: group,
                logger: Logger(label: "pushgate.channels"))
        var deviceListeners = [
            DeviceServer.Listener(
                host: configuration.deviceListener.host, port: configuration.deviceListener.port,
                setting: "devices.port")
        ]
        if configuration.deviceTLSListener.enabled {
            // WebSocket is HTTP/1.1: its own context, same certificate, ALPN http/1.1, no client certificates.
            let deviceTLS = try Self.tlsContext(
                configuration, logger: logger, alpn: ["http/1.1"], clientCertificates: false)
            deviceListeners.append(
                DeviceServer.Listener(
                    host: configuration.deviceTLSListener.host, port: configuration.deviceTLSListener.port,
                    tls: deviceTLS, setting: "devices.tls.port"))
        }
        let deviceLogger = Logger(label: "pushgate.devices")
        devices = DeviceServer(
            hub: hub, listeners: deviceListeners, group: group, logger: deviceLogger,
            gate: ConnectionGate(name: "devices", limits: configuration.deviceGate, logger: deviceLogger))
        admin =
            configuration.admin.enabled
            ? AdminServer(
                routes: AdminRoutes(
                    hub: hub,
                    readiness: Self.readiness(
                        provider, listeners.count, devices, deviceListeners.count, store, cluster),
                    storeFigures: { [store] in store.writer.figures },
                    providerConnections: { [provider] in provider.openConnections },
                    gates: { [provider, devices] in [provider.gate, devices.gate].compactMap { $0 } }, metrics: metrics,
                    attached: attached),
                host: configuration.admin.host, port: configuration.admin.port,
                token: configuration.adminToken, live: configuration.adminLive, group: group,
                logger: Logger(label: "pushgate.admin")) : nil
        reloader = RegistryReloader(
            configuration: configuration, context: context, directory: directory, logger: logger)
        logger.info(
            "registries loaded",
            metadata: [
                "keys": "\(keys.keys.count)", "certificates": "\(grants.byFingerprint.count)",
                "device_tokens": "\(directory.snapshot.count)", "environment": "\(settings.environment.rawValue)",
            ])
    }

    /// Where this node takes routed pushes, as its lease says it (`store.postgres.route_address`): the
    /// configured URL; none when "off"; otherwise the bound h2c listener's address (or the TLS one's)
    /// unless it is bound to every address (then the others cannot know which one reaches it).
    static func routeAddress(_ configured: String, listeners: [ProviderListener], provider: ProviderServer)
        -> @Sendable () -> String?
    {
        switch configured {
        case "off": return { nil }
        case "":
            return {
                let bound = provider.boundAddresses
                guard bound.count == listeners.count else { return nil }
                for cleartext in [true, false] {
                    for (listener, address) in zip(listeners, bound) {
                        let isCleartext: Bool
                        if case .cleartext = listener.security { isCleartext = true } else { isCleartext = false }
                        guard isCleartext == cleartext, let ip = address.ipAddress, let port = address.port,
                            ip != "0.0.0.0", ip != "::"
                        else { continue }
                        return NodeAddress(host: ip, port: port, tls: !cleartext).description
                    }
                }
                return nil
            }
        default: return { configured }
        }
    }

    /// `/ready`'s checks: the provider API's and the device port's listeners bound, not draining, and
    /// the store answering (its last check and commit succeeded).
    /// The hub's settings, with the enrolment secret of data_dir when none is configured.
    static func hubSettings(_ configuration: GatewayConfiguration) throws -> HubSettings {
        var settings = configuration.hub
        if settings.enrolmentSecret == nil {
            settings.enrolmentSecret = try EnrolmentSecret.ensure(dataDirectory: configuration.dataDirectory)
        }
        return settings
    }

    static func readiness(
        _ provider: ProviderServer, _ providerListeners: Int, _ devices: DeviceServer, _ deviceListeners: Int,
        _ store: StoreService, _ cluster: ClusterService?
    )
        -> @Sendable () -> [String: Bool]
    {
        {
            [
                "provider_listeners": provider.boundAddresses.count == providerListeners,
                "device_listeners": devices.boundAddresses.count == deviceListeners,
                "not_draining": !provider.context.isDraining,
                "store": store.isHealthy && (cluster?.isListening ?? true),
            ]
        }
    }

    /// The TLS listener's context: the configured certificate, or the development one (created if
    /// missing); ALPN h2; client certificates requested (optional) and checked against the client CA.
    /// Hands the pages freed since start back to the system: reading a store's snapshot of a large fleet
    /// makes millions of short-lived strings, and glibc's allocator keeps the pages they freed, between the
    /// registry's, as the process's own (docs/store.md, "Memory": a third of a node's memory at 100,000).
    static func returnFreedMemory() {
        // glibc's `malloc_trim` is not in Swift's Glibc module; looked up, it is simply absent elsewhere (musl).
        #if canImport(Glibc)
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
            typealias MallocTrim = @convention(c) (Int) -> Int32
            _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        #endif
    }

    public static func tlsContext(
        _ configuration: GatewayConfiguration, logger: Logger, alpn: [String] = ["h2"], clientCertificates: Bool = true
    ) throws -> NIOSSLContext {
        var certificatePath = configuration.tls.certificate
        var keyPath = configuration.tls.privateKey
        var clientCAPath = configuration.tls.clientCA
        let development = DevelopmentCertificates(dataDirectory: configuration.dataDirectory)
        if certificatePath.isEmpty {
            if try development.ensure() {
                logger.notice(
                    "created a development TLS certificate", metadata: ["ca": "\(development.caCertificatePath)"])
            }
            certificatePath = development.serverCertificatePath
            keyPath = development.serverKeyPath
        }
        if clientCAPath.isEmpty, FileManager.default.fileExists(atPath: development.caCertificatePath) {
            clientCAPath = development.caCertificatePath
        }
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
        } catch {
            throw ConfigError(
                key: "provider.tls.certificate", source: nil,
                message: "cannot read a PEM certificate from \(certificatePath): \(error)")
        }
        do {
            key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
        } catch {
            throw ConfigError(
                key: "provider.tls.private_key", source: nil,
                message: "cannot read a PEM private key from \(keyPath): \(error)")
        }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        tls.applicationProtocols = alpn
        tls.minimumTLSVersion = .tlsv12
        if clientCertificates, !clientCAPath.isEmpty {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(clientCAPath))
            } catch {
                throw ConfigError(
                    key: "provider.tls.client_ca", source: nil,
                    message: "cannot read PEM certificates from \(clientCAPath): \(error)")
            }
            tls.certificateVerification = .optionalVerification
        }
        return try NIOSSLContext(configuration: tls)
    }
}

/// Reloads the keys, certificates and device-token files when they change, so the `pushgate keys`,
/// `certs` and `tokens` commands take effect on a running gateway.
public struct RegistryReloader: Service {
    let configuration: GatewayConfiguration
    let context: ProviderContext
    let directory: InMemoryDeviceDirectory
    let logger: Logger

    public func run() async throws {
        guard configuration.reloadSeconds > 0 else {
            try? await gracefulShutdown()
            return
        }
        // Stops at once on graceful shutdown (its sleep is cancelled), so the services after it in the
        // shutdown order — the provider API's drain first — start at the signal.
        try? await cancelWhenGracefulShutdown { [self] in
            var seen = stamps()
            while !Task.isCancelled {
                try await Task.sleep(for: .seconds(configuration.reloadSeconds))
                let now = stamps()
                guard now != seen else { continue }
                seen = now
                reload()
            }
        }
    }

    private func reload() {
        do {
            context.replaceKeys(try RegistryFiles.loadKeys(configuration.keysFile))
            context.replaceCertificateGrants(try RegistryFiles.loadCertificates(configuration.certificatesFile))
            directory.replaceAll(
                try RegistryFiles.loadTokens(
                    configuration.tokensFile, lengths: configuration.provider.deviceTokenLengths))
            logger.info("registries reloaded", metadata: ["device_tokens": "\(directory.snapshot.count)"])
        } catch {
            // Keep serving with what was loaded before; say what is wrong with the file.
            logger.error("registry file not reloaded", metadata: ["error": "\(error)"])
        }
    }

    private func stamps() -> [Date?] {
        [configuration.keysFile, configuration.certificatesFile, configuration.tokensFile].map {
            (try? FileManager.default.attributesOfItem(atPath: $0))?[.modificationDate] as? Date
        }
    }
}
