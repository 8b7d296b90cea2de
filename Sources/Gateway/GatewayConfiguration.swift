import ConnectionLimits
import DeviceHub
import Foundation
import Logging
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
    public var nodeID = "pushgate"
    /// Several nodes: leases, takeovers and the sweep for undecided pushes.
    public var cluster = ClusterSettings()
    public var retentionSeconds: Int64 = 86400
    public var pruneSeconds: Int64 = 60

    public init() {}
}

/// The gateway's configuration in typed values, validated at start.
public struct GatewayConfiguration: Sendable {
    public struct Listener: Sendable, Equatable {
        public var enabled: Bool
        public var host: String
        public var port: Int
    }

    public struct TLSFiles: Sendable, Equatable {
        /// Empty paths: use (and create if needed) the development certificate in data_dir/tls.
        public var certificate: String
        public var privateKey: String
        public var clientCA: String

        public init(certificate: String, privateKey: String, clientCA: String) {
            self.certificate = certificate
            self.privateKey = privateKey
            self.clientCA = clientCA
        }
    }

    public var dataDirectory: String
    public var logLevel: Logger.Level
    /// `log.modules`: a level per module (the logger label's second part, `pushgate.<module>`).
    public var moduleLogLevels: [String: Logger.Level] = [:]
    public var eventLoops: Int
    public var shutdownGraceSeconds: Int64
    public var provider: ProviderSettings
    public var tlsListener: Listener
    public var h2cListener: Listener
    public var tls: TLSFiles
    public var keysFile: String
    public var certificatesFile: String
    public var tokensFile: String
    public var reloadSeconds: Int64
    public var policy: PolicySettings
    public var deviceListener: Listener
    public var deviceTLSListener: Listener
    public var hub: HubSettings
    /// The doors of the provider API's and the device port's listeners.
    public var providerGate: ConnectionGate.Limits
    public var deviceGate: ConnectionGate.Limits
    public var admin: Listener
    public var adminToken: String?
    public var store: StoreSettings

    public init(_ raw: RawConfiguration) throws {
        var reader = ConfigReader(raw: raw)
        dataDirectory = try reader.string("data_dir", nonEmpty: true)
        logLevel = try reader.parse(
            "log.level", expected: "one of trace, debug, info, notice, warning, error, critical"
        ) {
            Logger.Level(rawValue: $0)
        }
        moduleLogLevels = try Self.moduleLevels(&reader)
        eventLoops = try reader.int("event_loops", in: 0...256)
        shutdownGraceSeconds = Int64(try reader.int("shutdown.grace_seconds", in: 0...3600))

        var provider = ProviderSettings()
        provider.environment = try reader.parse("environment", expected: "development or production") {
            PushEnvironment(rawValue: $0)
        }
        let minLength = try reader.int("provider.device_token.min_length", in: 2...1024)
        let maxLength = try reader.int("provider.device_token.max_length", in: 2...1024)
        guard minLength <= maxLength else {
            throw ConfigError(
                key: "provider.device_token.min_length", source: raw.value("provider.device_token.min_length").source,
                message: "must not exceed provider.device_token.max_length (\(maxLength))")
        }
        provider.deviceTokenLengths = minLength...maxLength
        provider.perDeviceTokenRate = RateLimit(
            burst: try reader.int("provider.rate.device_token.burst", in: 0...Int(Int32.max)),
            perSecond: try reader.double("provider.rate.device_token.per_second", in: 0...1e9))
        provider.perTeamRate = RateLimit(
            burst: try reader.int("provider.rate.team.burst", in: 0...Int(Int32.max)),
            perSecond: try reader.double("provider.rate.team.per_second", in: 0...1e9))
        provider.auth.tokenLifetimeSeconds = Int64(
            try reader.int("provider.auth.token_lifetime_seconds", in: 1...(365 * 86400)))
        provider.auth.allowedFutureSkewSeconds = Int64(
            try reader.int("provider.auth.future_skew_seconds", in: 0...86400))
        provider.auth.tokenUpdateBurst = try reader.int("provider.auth.token_update_burst", in: 0...1_000_000)
        provider.auth.tokenUpdateIntervalSeconds = Int64(
            try reader.int("provider.auth.token_update_interval_seconds", in: 1...(365 * 86400)))
        provider.auth.maxFailedVerifications = try reader.int("provider.auth.max_failed_verifications", in: 1...1_000_000)
        let failedPerSecond = try reader.double("provider.auth.failed_verifications_per_second", in: 0...1_000_000)
        provider.auth.failedVerificationsPerAddress = RateLimit(
            burst: Int((failedPerSecond * 10).rounded(.up)), perSecond: failedPerSecond)
        provider.http2.maxConcurrentStreams = try reader.int("provider.http2.max_concurrent_streams", in: 1...1_000_000)
        provider.http2.maxHeaderListSize = try reader.int("provider.http2.max_header_list_size", in: 1024...(1 << 24))
        provider.http2.maxFrameSize = try reader.int("provider.http2.max_frame_size", in: 16384...16_777_215)
        provider.http2.idleTimeoutSeconds = Int64(
            try reader.int("provider.http2.idle_timeout_seconds", in: 0...(30 * 86400)))
        provider.http2.connectionWindowSize = try reader.int(
            "provider.http2.connection_window_bytes", in: 65535...Int(Int32.max))
        self.provider = provider

        tlsListener = Listener(
            enabled: try reader.bool("provider.tls.enabled"),
            host: try reader.string("provider.tls.host", nonEmpty: true),
            port: try reader.int("provider.tls.port", in: 0...65535))
        h2cListener = Listener(
            enabled: try reader.bool("provider.h2c.enabled"),
            host: try reader.string("provider.h2c.host", nonEmpty: true),
            port: try reader.int("provider.h2c.port", in: 0...65535))
        tls = TLSFiles(
            certificate: try reader.string("provider.tls.certificate"),
            privateKey: try reader.string("provider.tls.private_key"),
            clientCA: try reader.string("provider.tls.client_ca"))
        if tls.certificate.isEmpty != tls.privateKey.isEmpty {
            let key = tls.certificate.isEmpty ? "provider.tls.certificate" : "provider.tls.private_key"
            throw ConfigError(
                key: key, source: nil,
                message: "provider.tls.certificate and provider.tls.private_key must be set together")
        }
        let dataDirectory = self.dataDirectory
        func inData(_ key: String, _ file: String) throws -> String {
            let value = try reader.string(key)
            return value.isEmpty ? (dataDirectory as NSString).appendingPathComponent(file) : value
        }
        keysFile = try inData("provider.auth.keys_file", "provider-keys.yaml")
        certificatesFile = try inData("provider.auth.certificates_file", "provider-certificates.yaml")
        tokensFile = try inData("devices.tokens_file", "device-tokens.yaml")
        reloadSeconds = Int64(try reader.int("devices.reload_seconds", in: 0...86400))
        policy = try Self.policy(&reader)
        let deviceHost = try reader.string("devices.host", nonEmpty: true)
        deviceListener = Listener(enabled: true, host: deviceHost, port: try reader.int("devices.port", in: 0...65535))
        deviceTLSListener = Listener(
            enabled: try reader.bool("devices.tls.enabled"), host: deviceHost,
            port: try reader.int("devices.tls.port", in: 0...65535))
        var hub = HubSettings()
        hub.keepAliveSeconds = try reader.int("devices.keep_alive_seconds", in: 1...86400)
        hub.messageBurst = try reader.int("devices.message_burst", in: 1...1_000_000)
        hub.messagesPerSecond = try reader.double("devices.messages_per_second", in: 0.01...1_000_000)
        hub.notReadingTimeoutSeconds = Int64(try reader.int("devices.not_reading_timeout_seconds", in: 1...86400))
        hub.deliveryWindow = try reader.int("devices.delivery_window", in: 1...100_000)
        hub.maximumWaiting = try reader.int("devices.max_waiting", in: 1...10_000_000)
        guard hub.maximumWaiting >= hub.deliveryWindow else {
            throw ConfigError(
                key: "devices.max_waiting", source: nil,
                message: "must be at least devices.delivery_window (\(hub.deliveryWindow)), was \(hub.maximumWaiting)")
        }
        hub.helloTimeoutSeconds = Int64(try reader.int("devices.hello_timeout_seconds", in: 1...3600))
        hub.maximumFrameBytes = try reader.int("devices.max_frame_bytes", in: 1024...(16 << 20))
        // Empty: the gateway's own secret in data_dir, read (or made) when it starts.
        let enrolmentSecret = try reader.string("devices.enrolment_secret")
        hub.enrolmentSecret = enrolmentSecret.isEmpty ? nil : enrolmentSecret
        let enrolments = try reader.int("devices.enrolments_per_minute_per_address", in: 0...1_000_000)
        hub.enrolmentsPerAddress = RateLimit(burst: enrolments, perSecond: Double(enrolments) / 60)
        hub.pruneAfterSeconds = Int64(try reader.int("devices.prune_after_days", in: 0...36500)) * 86400
        self.hub = hub
        (providerGate, deviceGate) = try Self.gates(&reader, descriptors: ConnectionGate.descriptorLimit())
        admin = Listener(
            enabled: try reader.bool("admin.enabled"), host: try reader.string("admin.host", nonEmpty: true),
            port: try reader.int("admin.port", in: 0...65535))
        let token = try reader.string("admin.token")
        adminToken = token.isEmpty ? nil : token
        let loopback = ["127.0.0.1", "::1", "localhost"].contains(admin.host)
        if admin.enabled, !loopback, adminToken == nil {
            throw ConfigError(
                key: "admin.token", source: nil,
                message:
                    "required when admin.host (\(admin.host)) is not loopback: the admin API shows devices and tokens")
        }
        store = try Self.store(&reader, dataDirectory: dataDirectory, devicesPort: deviceListener.port)
        readKeys = reader.read
    }

    /// The modules whose loggers `log.modules` can set (`Logger(label: "pushgate.<module>")`).
    public static let logModules = ["provider", "devices", "store", "cluster", "admin"]

    static func moduleLevels(_ reader: inout ConfigReader) throws -> [String: Logger.Level] {
        let text = try reader.string("log.modules")
        var levels: [String: Logger.Level] = [:]
        for entry in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, Self.logModules.contains(parts[0]), let level = Logger.Level(rawValue: parts[1])
            else {
                throw ConfigError(
                    key: "log.modules", source: reader.raw.value("log.modules").source,
                    message:
                        "expected module=level pairs separated by commas (modules: \(Self.logModules.joined(separator: ", ")); levels: trace, debug, info, notice, warning, error, critical), got '\(entry)'"
                )
            }
            levels[parts[0]] = level
        }
        return levels
    }

    /// The level for a logger label: its module's from `log.modules`, else `log.level`.
    public func logLevel(forLabel label: String) -> Logger.Level {
        let parts = label.split(separator: ".")
        guard parts.count >= 2, parts[0] == "pushgate", let level = moduleLogLevels[String(parts[1])] else {
            return logLevel
        }
        return level
    }

    static func store(_ reader: inout ConfigReader, dataDirectory: String, devicesPort: Int) throws -> StoreSettings {
        var store = StoreSettings()
        store.backend = try reader.parse("store.backend", expected: "sqlite, postgres or memory") {
            StoreSettings.Backend(rawValue: $0)
        }
        let path = try reader.string("store.sqlite.path")
        store.sqlitePath = path.isEmpty ? (dataDirectory as NSString).appendingPathComponent("pushgate.sqlite") : path
        store.synchronous = try reader.parse("store.sqlite.synchronous", expected: "full or normal") {
            SQLiteStore.Synchronous(rawValue: $0)
        }
        store.postgresURL = try reader.string("store.postgres.url")
        if store.backend == .postgres, store.postgresURL.isEmpty {
            throw ConfigError(
                key: "store.postgres.url", source: reader.raw.value("store.postgres.url").source,
                message: "required when store.backend is postgres (postgres://user:password@host:port/database)")
        }
        let node = try reader.string("store.postgres.node_id")
        guard node.utf8.count <= 200, !node.contains(where: { $0.isWhitespace || $0.isNewline }) else {
            throw ConfigError(
                key: "store.postgres.node_id", source: reader.raw.value("store.postgres.node_id").source,
                message: "expected a name of at most 200 characters without spaces, got '\(node)'")
        }
        store.nodeID = node.isEmpty ? "\(ProcessInfo.processInfo.hostName):\(devicesPort)" : node
        store.cluster.leaseSeconds = try reader.int("store.postgres.lease_seconds", in: 1...3600)
        store.cluster.sweepSeconds = try reader.int("store.postgres.sweep_seconds", in: 1...86400)
        store.retentionSeconds = Int64(try reader.int("store.retention_seconds", in: 0...(365 * 86400)))
        store.pruneSeconds = Int64(try reader.int("store.prune_seconds", in: 1...86400))
        return store
    }

    /// The connection caps (0: made from the process's descriptor limit, leaving room for each other and
    /// for the store, the admin API and files) and handshake timeouts.
    static func gates(_ reader: inout ConfigReader, descriptors: Int) throws -> (
        provider: ConnectionGate.Limits, devices: ConnectionGate.Limits
    ) {
        let reserve = 256
        var provider = try reader.int("provider.max_connections", in: 0...10_000_000)
        if provider == 0 { provider = max(64, descriptors / 10) }
        var devices = try reader.int("devices.max_connections", in: 0...10_000_000)
        if devices == 0 { devices = max(64, descriptors - provider - reserve) }
        return (
            ConnectionGate.Limits(
                maxConnections: provider,
                maxPerAddress: try reader.int("provider.max_connections_per_address", in: 0...10_000_000),
                handshakeTimeout: .seconds(Int64(try reader.int("provider.handshake_timeout_seconds", in: 1...3600)))),
            ConnectionGate.Limits(
                maxConnections: devices,
                maxPerAddress: try reader.int("devices.max_connections_per_address", in: 0...10_000_000),
                handshakeTimeout: .seconds(Int64(try reader.int("devices.upgrade_timeout_seconds", in: 1...3600))))
        )
    }

    static func policy(_ reader: inout ConfigReader) throws -> PolicySettings {
        var policy = PolicySettings()
        policy.budgetCapacity = try reader.int("policy.budget.capacity", in: 1...1000)
        policy.refillIntervalSeconds = Int64(try reader.int("policy.budget.refill_seconds", in: 1...(30 * 86400)))
        let limit = try reader.int("policy.held.limit", in: 1...100)
        policy.heldStorage = try reader.parse("policy.held.storage", expected: "newest_only or up_to") { text in
            switch text {
            case "newest_only": return .newestOnly
            case "up_to": return .upTo(limit)
            default: return nil
            }
        }
        policy.alertPiggybackScope = try reader.parse("policy.piggyback.alert_scope", expected: "all_apps or same_app")
        {
            PolicySettings.PiggybackScope(rawValue: $0)
        }
        policy.completionDeadlineSeconds = Int64(try reader.int("policy.completion.deadline_seconds", in: 1...3600))
        policy.lateCompletionWindowSeconds = Int64(
            try reader.int("policy.completion.late_window_seconds", in: 0...86400))
        policy.defaultStorageSeconds = Int64(try reader.int("policy.storage.default_seconds", in: 0...(365 * 86400)))
        policy.missStrike = try reader.double("policy.strikes.miss", in: 0...100)
        policy.failedStrike = try reader.double("policy.strikes.failed", in: 0...100)
        policy.noDataRelief = try reader.double("policy.strikes.no_data_relief", in: 0...100)
        policy.newDataRelief = try reader.double("policy.strikes.new_data_relief", in: 0...100)
        policy.strikeHalfLifeSeconds = Int64(try reader.int("policy.strikes.half_life_seconds", in: 0...(365 * 86400)))
        policy.coolingBaseSeconds = Int64(try reader.int("policy.cooling.base_seconds", in: 0...(30 * 86400)))
        policy.coolingMaxSeconds = Int64(try reader.int("policy.cooling.max_seconds", in: 0...(365 * 86400)))
        policy.coolingSlowdown = try reader.double("policy.cooling.slowdown", in: 1...1000)
        return policy
    }

    /// The keys this configuration read (a test checks that it reads every key in the table).
    public private(set) var readKeys: Set<String> = []

    public static func defaults() -> GatewayConfiguration {
        // The defaults are valid by construction; a failure here is a mistake in ConfigKeys.
        try! GatewayConfiguration(RawConfiguration())
    }
}

/// Typed reads from a `RawConfiguration`, with errors that name the key and where its value came from.
struct ConfigReader {
    let raw: RawConfiguration
    var read: Set<String> = []

    init(raw: RawConfiguration) { self.raw = raw }

    mutating func parse<T>(_ key: String, expected: String, _ transform: (String) -> T?) throws -> T {
        read.insert(key)
        let (text, source) = raw.value(key)
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard let value = transform(trimmed) else {
            throw ConfigError(key: key, source: source, message: "expected \(expected), got '\(text)'")
        }
        return value
    }

    mutating func string(_ key: String, nonEmpty: Bool = false) throws -> String {
        try parse(key, expected: "a non-empty value") { nonEmpty && $0.isEmpty ? nil : $0 }
    }

    mutating func int(_ key: String, in range: ClosedRange<Int>) throws -> Int {
        try parse(key, expected: "a whole number from \(range.lowerBound) to \(range.upperBound)") { text in
            Int(text).flatMap { range.contains($0) ? $0 : nil }
        }
    }

    mutating func double(_ key: String, in range: ClosedRange<Double>) throws -> Double {
        try parse(key, expected: "a number from \(range.lowerBound) to \(range.upperBound)") { text in
            Double(text).flatMap { $0.isFinite && range.contains($0) ? $0 : nil }
        }
    }

    mutating func bool(_ key: String) throws -> Bool {
        try parse(key, expected: "true or false") { text in
            switch text.lowercased() {
            case "true", "yes", "on", "1": return true
            case "false", "no", "off", "0": return false
            default: return nil
            }
        }
    }
}
