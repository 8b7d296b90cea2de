/// A rate limit: a burst, then a sustained rate. Zero in either disables it.
public struct RateLimit: Sendable, Equatable {
    public var burst: Int
    public var perSecond: Double

    public init(burst: Int, perSecond: Double) {
        self.burst = burst
        self.perSecond = perSecond
    }

    public static let unlimited = RateLimit(burst: 0, perSecond: 0)
    public var isEnabled: Bool { perSecond > 0 && burst > 0 }
    /// The limit as a token bucket's rate.
    public var rate: TokenBucket.Rate { TokenBucket.Rate(burst: burst, perSecond: perSecond) }
}
