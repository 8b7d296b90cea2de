import PushModel

/// What a (device, app)'s throttle state must keep across a restart besides its held pushes: the
/// budget, the strikes, the cooling period and the app's state. The store writes it; held pushes are
/// stored as notifications and handed back with it.
public struct ThrottleBudget: Sendable, Equatable {
    /// Tokens left; nil until the first wake (a full bucket).
    public var tokens: Float?
    public var strikes: Float
    /// Refill and decay are applied up to this time (milliseconds since the epoch).
    public var settledAt: Int64
    /// Until then the bucket refills more slowly (milliseconds since the epoch).
    public var coolingUntil: Int64
    public var appState: AppState

    /// An app the policy has no state for: a full bucket, no strikes, in the background.
    public static let untouched = ThrottleBudget(
        tokens: nil, strikes: 0, settledAt: 0, coolingUntil: 0, appState: .background)

    public init(tokens: Float?, strikes: Float, settledAt: Int64, coolingUntil: Int64, appState: AppState) {
        self.tokens = tokens
        self.strikes = strikes
        self.settledAt = settledAt
        self.coolingUntil = coolingUntil
        self.appState = appState
    }
}

extension PolicySettings {
    /// When a push stops being kept (nil: `apns-expiration: 0`, never kept).
    public func expiry(of push: PushNotification) -> UnixTime? { AppThrottle.expiry(of: push, settings: self) }
}
