import ProviderAuth
import PushIntake
import PushMetrics
import PushModel
import Synchronization
import WallClock

/// What every provider connection shares: settings, keys, the device directory, the limiters and the intake.
public final class ProviderContext: Sendable {
    public let settings: ProviderSettings
    public let directory: any DeviceDirectory
    public let intake: any NotificationIntake
    public let metrics: ProviderMetrics
    /// Broadcasts (`POST /4/broadcasts/apps/<bundle>`): the channels and where accepted ones go (nil:
    /// answered 400 FeatureNotEnabled).
    public let broadcasts: (channels: any ChannelDirectory, intake: any BroadcastIntake)?
    let tokenLimiter: RequestRateLimiter<DeviceToken>
    let teamLimiter: RequestRateLimiter<String>
    /// Failed token verifications by source address.
    let verificationLimiter: RequestRateLimiter<String>
    let clock: @Sendable () -> UnixTime
    private let keyRegistry: Mutex<KeyRegistry>
    private let grants: Mutex<CertificateGrants>
    private let drainingFlag = Atomic<Bool>(false)
    private let routeTaker = Mutex<(intake: any RouteIntake, tokens: NodeTokens)?>(nil)

    public init(
        settings: ProviderSettings, keys: KeyRegistry, directory: any DeviceDirectory, intake: any NotificationIntake,
        certificateGrants: CertificateGrants = CertificateGrants(), metrics: ProviderMetrics = .none,
        broadcasts: (channels: any ChannelDirectory, intake: any BroadcastIntake)? = nil,
        clock: @escaping @Sendable () -> UnixTime = UnixTime.now
    ) {
        self.metrics = metrics
        self.broadcasts = broadcasts
        self.settings = settings
        self.directory = directory
        self.intake = intake
        self.grants = Mutex(certificateGrants)
        self.keyRegistry = Mutex(keys)
        self.tokenLimiter = RequestRateLimiter(limit: settings.perDeviceTokenRate)
        self.teamLimiter = RequestRateLimiter(limit: settings.perTeamRate, shardCount: 4)
        self.verificationLimiter = RequestRateLimiter(limit: settings.auth.failedVerificationsPerAddress, shardCount: 4)
        self.clock = clock
    }

    /// The registered keys. Read only when a connection meets a token it has not verified yet.
    public var keys: KeyRegistry { keyRegistry.withLock { $0 } }

    /// Replaces the registered keys (e.g. after `pushgate keys generate`); open connections keep the
    /// tokens they already verified until those expire.
    public func replaceKeys(_ keys: KeyRegistry) { keyRegistry.withLock { $0 = keys } }

    /// The registered client certificates. Read once per TLS connection that presents one.
    public var certificateGrants: CertificateGrants { grants.withLock { $0 } }
    public func replaceCertificateGrants(_ value: CertificateGrants) { grants.withLock { $0 = value } }

    /// Where pushes other nodes of the fleet route here go (`RouteBatch.path`), and the fleet's tokens that
    /// authenticate them; nil (the path answers 404) until a node of several has opened its store.
    public var routes: (intake: any RouteIntake, tokens: NodeTokens)? { routeTaker.withLock { $0 } }
    public func takeRoutes(_ intake: any RouteIntake, tokens: NodeTokens) {
        routeTaker.withLock { $0 = (intake, tokens) }
    }

    /// While draining, new streams are answered 503 Shutdown.
    public var isDraining: Bool { drainingFlag.load(ordering: .relaxed) }
    func startDraining() { drainingFlag.store(true, ordering: .relaxed) }

    var authPolicy: ConnectionAuthentication.Policy {
        ConnectionAuthentication.Policy(
            verifier: ProviderTokenVerifier(
                lifetimeSeconds: settings.auth.tokenLifetimeSeconds,
                allowedFutureSkewSeconds: settings.auth.allowedFutureSkewSeconds),
            updateBurst: settings.auth.tokenUpdateBurst,
            updateIntervalMilliseconds: settings.auth.tokenUpdateIntervalSeconds * 1000,
            maxFailedVerifications: settings.auth.maxFailedVerifications)
    }
}
