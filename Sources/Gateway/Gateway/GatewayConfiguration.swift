import AdminAPI
import ConnectionLimits
import DescriptorLimit
import DeviceHub
import Foundation
import Logging
import NodeLinks
import NIOCore
import ProviderAPI
import PushModel
import PushPolicy
import PushStore

/// Where and how the gateway keeps what must survive a restart.
public struct StoreSettings: Sendable, Equatable {
    public enum Backend: String, Sendable, CaseIterable {
        case sqlite
        case postgres
        case memory
    }

    public var backend: Backend = .sqlite
    public var sqlitePath = "./data/pushgate.sqlite"
    public var synchronous: SQLiteStore.Synchronous = .full
    public var postgresURL = ""
    /// This node's name among those sharing the PostgreSQL database.
    public var nodeID = ""
    /// Several nodes: leases, takeovers and the sweep for undecided pushes.
    public var cluster = ClusterSettings()
    /// Several nodes: where this node takes routed pushes (a URL; empty: made from the provider
    /// listeners; "off": none), and the links to the others.
    public var routeAddress = ""
    public var links = NodeLinkSettings()
    /// How long a node waits for PostgreSQL at start.
    public var startSeconds: Int64 = 30
    public var retentionSeconds: Int64 = 86400
    public var pruneSeconds: Int64 = 60
    /// How long a change someone waits for may wait for its commit to start; 0: no limit.
    public var waitLimitSeconds: Int64 = 10
    /// How long a change no one waits for may wait for others before its commit; 0: none.
    public var unansweredWaitMilliseconds: Int64 = 100

    public init() {}
}

/// The gateway's configuration in typed values, validated at start: each key of `ConfigKeys` puts its
/// value in place, then what depends on several keys (or on the machine) is settled.
public struct GatewayConfiguration: Sendable {
    public struct Listener: Sendable, Equatable {
        public var enabled = true
        public var host = "127.0.0.1"
        public var port = 0
    }

    public struct TLSFiles: Sendable, Equatable {
        /// Empty paths: use (and create if needed) the development certificate in data_dir/tls.
        public var certificate: String
        public var privateKey: String
        public var clientCA: String

        public init(certificate: String = "", privateKey: String = "", clientCA: String = "") {
            self.certificate = certificate
            self.privateKey = privateKey
            self.clientCA = clientCA
        }
    }

    public var dataDirectory = ""
    public var logLevel: Logger.Level = .info
    /// `log.modules`: a level per module (the logger label's second part, `pushgate.<module>`).
    public var moduleLogLevels: [String: Logger.Level] = [:]
    public var eventLoops = 0
    public var shutdownGraceSeconds: Int64 = 0
    public var provider = ProviderSettings()
    public var tlsListener = Listener()
    public var h2cListener = Listener()
    /// The channel-management API's listeners (broadcast channels; Apple serves it on its own port).
    public var channelTLSListener = Listener()
    public var channelH2CListener = Listener()
    public var tls = TLSFiles()
    public var keysFile = ""
    public var certificatesFile = ""
    public var tokensFile = ""
    public var reloadSeconds: Int64 = 0
    public var policy = PolicySettings()
    public var deviceListener = Listener()
    public var deviceTLSListener = Listener()
    public var hub = HubSettings()
    /// The doors of the provider API's and the device port's listeners.
    public var providerGate = ConnectionGate.Limits(maxConnections: 0, maxPerAddress: 0, handshakeTimeout: .seconds(5))
    public var deviceGate = ConnectionGate.Limits(maxConnections: 0, maxPerAddress: 0, handshakeTimeout: .seconds(5))
    public var admin = Listener()
    public var adminToken: String?
    public var adminLive = LiveFeedSettings()
    public var store = StoreSettings()

    /// Values as their keys gave them, which `settle` combines with others.
    struct AsRead: Sendable {
        var deviceTokenMinLength = 0
        var deviceTokenMaxLength = 0
        var heldUpTo = false
        var heldLimit = 0
    }
    var asRead = AsRead()

    public init(_ raw: RawConfiguration) throws {
        for key in ConfigKeys.all {
            let (text, source) = raw.value(key.name)
            if let refused = key.apply(text.trimmingCharacters(in: .whitespaces), &self) {
                // The text as given, unless only a part of it is wrong.
                let shown = refused == text.trimmingCharacters(in: .whitespaces) ? text : refused
                throw ConfigError(key: key.name, source: source, message: "expected \(key.expected), got '\(shown)'")
            }
        }
        try settle(raw, descriptors: DescriptorLimit.current())
    }

    /// What depends on several keys: checks between them, paths in data_dir, defaults made from the
    /// machine (node name, connection caps from the descriptor limit).
    private mutating func settle(_ raw: RawConfiguration, descriptors: Int) throws {
        func refuse(_ key: ConfigKey, _ message: String) -> ConfigError {
            ConfigError(key: key.name, source: raw.value(key.name).source, message: message)
        }
        guard asRead.deviceTokenMinLength <= asRead.deviceTokenMaxLength else {
            throw refuse(
                ConfigKeys.deviceTokenMinLength,
                "must not exceed \(ConfigKeys.deviceTokenMaxLength.name) (\(asRead.deviceTokenMaxLength))")
        }
        provider.deviceTokenLengths = asRead.deviceTokenMinLength...asRead.deviceTokenMaxLength
        policy.heldStorage = asRead.heldUpTo ? .upTo(asRead.heldLimit) : .newestOnly
        if tls.certificate.isEmpty != tls.privateKey.isEmpty {
            throw refuse(
                tls.certificate.isEmpty ? ConfigKeys.tlsCertificate : ConfigKeys.tlsPrivateKey,
                "\(ConfigKeys.tlsCertificate.name) and \(ConfigKeys.tlsPrivateKey.name) must be set together")
        }
        func inData(_ path: String, _ file: String) -> String {
            path.isEmpty ? (dataDirectory as NSString).appendingPathComponent(file) : path
        }
        keysFile = inData(keysFile, "provider-keys.yaml")
        certificatesFile = inData(certificatesFile, "provider-certificates.yaml")
        tokensFile = inData(tokensFile, "device-tokens.yaml")
        store.sqlitePath = inData(store.sqlitePath, "pushgate.sqlite")
        // One host for both device listeners.
        deviceTLSListener.host = deviceListener.host
        guard hub.maximumWaiting >= hub.deliveryWindow else {
            throw refuse(
                ConfigKeys.maxWaiting,
                "must be at least \(ConfigKeys.deliveryWindow.name) (\(hub.deliveryWindow)), was \(hub.maximumWaiting)")
        }
        // The connection caps (0: made from the process's descriptor limit, leaving room for each other
        // and for the store, the admin API and files).
        if providerGate.maxConnections == 0 { providerGate.maxConnections = max(64, descriptors / 10) }
        if deviceGate.maxConnections == 0 {
            deviceGate.maxConnections = max(64, descriptors - providerGate.maxConnections - 256)
        }
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(admin.host)
        if admin.enabled, !loopback, adminToken == nil {
            throw refuse(
                ConfigKeys.adminToken,
                "required when \(ConfigKeys.adminHost.name) (\(admin.host)) is not loopback: the admin API shows devices and tokens"
            )
        }
        if store.backend == .postgres, store.postgresURL.isEmpty {
            throw refuse(
                ConfigKeys.postgresURL,
                "required when \(ConfigKeys.storeBackend.name) is postgres (postgres://user:password@host:port/database)"
            )
        }
        if store.nodeID.isEmpty { store.nodeID = "\(ProcessInfo.processInfo.hostName):\(deviceListener.port)" }
    }

    /// The level for a logger label: its module's from `log.modules`, else `log.level`.
    public func logLevel(forLabel label: String) -> Logger.Level {
        let parts = label.split(separator: ".")
        guard parts.count >= 2, parts[0] == "pushgate", let level = moduleLogLevels[String(parts[1])] else {
            return logLevel
        }
        return level
    }

    public static func defaults() -> GatewayConfiguration {
        // The defaults are valid by construction; a failure here is a mistake in ConfigKeys.
        try! GatewayConfiguration(RawConfiguration())
    }
}

/// `log.modules`: module=level pairs separated by commas.
enum ModuleLogLevels {
    /// The modules whose loggers `log.modules` can set (`Logger(label: "pushgate.<module>")`).
    static let modules = ["provider", "channels", "devices", "store", "cluster", "admin"]

    static let expected =
        "module=level pairs separated by commas (modules: \(modules.joined(separator: ", ")); levels: \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")))"

    @Sendable static func parse(_ text: String) throws(ConfigKey.Refused) -> [String: Logger.Level]? {
        var levels: [String: Logger.Level] = [:]
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, modules.contains(parts[0]), let level = Logger.Level(rawValue: parts[1]) else {
                throw ConfigKey.Refused(part: entry)
            }
            levels[parts[0]] = level
        }
        return levels
    }
}
