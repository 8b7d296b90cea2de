import PushModel

/// iOS's budget for one Live Activity's priority-10 updates, as a pure token bucket: `capacity`
/// updates in a burst, one refilled every `refillSeconds`. Apple says only that "the system allows for a
/// certain budget of ActivityKit push notifications per hour", that priority-10 ones count against it
/// and priority-5 ones do not, and that `NSSupportsLiveActivitiesFrequentUpdates` raises it; the sizes
/// are not published, so both pairs are settings (docs/live-activities.md). An activity is named by its
/// update token, so the bucket is kept per token.
public struct LiveActivityBudget: Sendable, Equatable {
    /// A bucket's size: the app's own (`PolicySettings.liveActivityBudget(frequentPushes:)`), larger
    /// while it has frequent pushes.
    public struct Size: Sendable, Equatable {
        public var capacity: Int
        public var refillSeconds: Int64

        public init(capacity: Int, refillSeconds: Int64) {
            self.capacity = capacity
            self.refillSeconds = refillSeconds
        }
    }

    /// Tokens left at `settledAt`.
    private(set) var tokens: Float
    /// Refill is applied up to this time (milliseconds since the epoch).
    private(set) var settledAt: Int64

    /// A full bucket at `now`.
    public init(size: Size, now: UnixTime) {
        tokens = Float(size.capacity)
        settledAt = now.milliseconds
    }

    /// Spends one update if the bucket has one.
    public mutating func take(size: Size, now: UnixTime) -> Bool {
        settle(size: size, now: now)
        guard tokens >= 1 - 1e-4 else { return false }
        tokens = max(0, tokens - 1)
        return true
    }

    /// Updates left at `now` (whole ones).
    public func left(size: Size, now: UnixTime) -> Int {
        var copy = self
        copy.settle(size: size, now: now)
        return Int((copy.tokens + 1e-4).rounded(.down))
    }

    /// Refilled to the brim: nothing worth remembering.
    public func isFull(size: Size, now: UnixTime) -> Bool {
        left(size: size, now: now) >= size.capacity
    }

    /// Refill up to `now`, never above the size's capacity (a bucket filled while the app had frequent
    /// pushes is cut to the smaller capacity when they are turned off).
    private mutating func settle(size: Size, now: UnixTime) {
        let to = now.milliseconds
        let gained = to > settledAt ? Double(to - settledAt) / (Double(size.refillSeconds) * 1000) : 0
        tokens = Float(min(Double(size.capacity), Double(tokens) + gained))
        settledAt = max(settledAt, to)
    }
}
