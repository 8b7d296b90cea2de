import PushModel

/// Settings of the provider API, in typed values. `Gateway` fills them from the configuration.
public struct ProviderSettings: Sendable, Equatable {
    /// The environment this gateway plays: keys and certificates limited to the other one are refused.
    public var environment: PushEnvironment = .development
    /// Accepted device token lengths in hex characters (APNs: 64).
    public var deviceTokenLengths: ClosedRange<Int> = 64...64
    public var perDeviceTokenRate: RateLimit = RateLimit(burst: 200, perSecond: 20)
    public var perTeamRate: RateLimit = RateLimit(burst: 400_000, perSecond: 200_000)
    public var auth = AuthSettings()
    public var http2 = HTTP2Limits()

    public init() {}
}

public struct AuthSettings: Sendable, Equatable {
    public var tokenLifetimeSeconds: Int64 = 3600
    public var allowedFutureSkewSeconds: Int64 = 60
    public var tokenUpdateBurst: Int = 2
    public var tokenUpdateIntervalSeconds: Int64 = 20 * 60
    /// Bad tokens one connection may present before it is closed with GOAWAY.
    public var maxFailedVerifications: Int = 16
    /// Failed verifications per source address (across its connections); past it, new tokens from that
    /// address are refused without being verified.
    public var failedVerificationsPerAddress = RateLimit(burst: 50, perSecond: 5)

    public init() {}
}

/// HTTP/2 limits of a provider connection.
public struct HTTP2Limits: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised to providers; a stream over it is refused alone.
    public var maxConcurrentStreams: Int = 1000
    /// SETTINGS_MAX_HEADER_LIST_SIZE advertised to providers; a request over it is answered 431.
    public var maxHeaderListSize: Int = 8192
    /// SETTINGS_MAX_FRAME_SIZE (16384 to 16777215).
    public var maxFrameSize: Int = 16384
    /// A connection with no open stream for this long is closed with GOAWAY `{"reason":"IdleTimeout"}`; 0 disables.
    public var idleTimeoutSeconds: Int64 = 3600
    /// The connection-level receive window the gateway keeps open.
    public var connectionWindowSize: Int = 1 << 20
    /// Answers written and not yet taken by the client's socket, in bytes, past which the gateway stops
    /// reading the connection's requests (back-pressure; reading resumes at half of it).
    public var outputLimitBytes: Int = 1 << 20
    /// A connection stopped that long (its client reads nothing) is closed; 0: never.
    public var stalledCloseSeconds: Int64 = 30
    /// SO_SNDBUF of each provider connection, in bytes; 0 leaves the kernel's default and its autotuning
    /// (up to `net.ipv4.tcp_wmem`'s maximum). What the kernel holds comes before `outputLimitBytes` counts.
    public var socketSendBufferBytes: Int = 0

    public init() {}

    public var streamLimits: StreamLimits {
        StreamLimits(concurrentStreams: maxConcurrentStreams, headerListSize: maxHeaderListSize)
    }
}
