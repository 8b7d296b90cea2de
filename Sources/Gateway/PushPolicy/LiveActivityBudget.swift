import PushModel

/// iOS's budget for one Live Activity's priority-10 updates, as a pure token bucket: `capacity`
/// updates in a burst, one refilled every `refillSeconds`. Apple says only that "the system allows for a
/// certain budget of ActivityKit push notifications per hour", that priority-10 ones count against it
/// and priority-5 ones do not, and that `NSSupportsLiveActivitiesFrequentUpdates` raises it; the size is
/// not published, so both numbers are settings (docs/live-activities.md). An activity is named by its
/// update token, so the bucket is kept per token.
public struct LiveActivityBudget: Sendable, Equatable {
    /// Tokens left at `settledAt`.
    private(set) var tokens: Float
    /// Refill is applied up to this time (milliseconds since the epoch).
    private(set) var settledAt: Int64

    /// A full bucket at `now`.
    public init(settings: PolicySettings, now: UnixTime) {
        tokens = Float(settings.liveActivityCapacity)
        settledAt = now.milliseconds
    }

    /// Spends one update if the bucket has one.
    public mutating func take(settings: PolicySettings, now: UnixTime) -> Bool {
        settle(settings: settings, now: now)
        guard tokens >= 1 - 1e-4 else { return false }
        tokens = max(0, tokens - 1)
        return true
    }

    /// Updates left at `now` (whole ones).
    public func left(settings: PolicySettings, now: UnixTime) -> Int {
        var copy = self
        copy.settle(settings: settings, now: now)
        return Int((copy.tokens + 1e-4).rounded(.down))
    }

    /// Refilled to the brim: nothing worth remembering.
    public func isFull(settings: PolicySettings, now: UnixTime) -> Bool {
        left(settings: settings, now: now) >= settings.liveActivityCapacity
    }

    private mutating func settle(settings: PolicySettings, now: UnixTime) {
        let to = now.milliseconds
        guard to > settledAt else { return }
        let gained = Double(to - settledAt) / (Double(settings.liveActivityRefillSeconds) * 1000)
        tokens = Float(min(Double(settings.liveActivityCapacity), Double(tokens) + gained))
        settledAt = to
    }
}
