/// A token bucket with time passed in: `capacity` tokens, one more every `refillInterval` milliseconds.
/// The one rate-limiting primitive; each limiter that uses it is named for the question it answers.
public struct TokenBucket: Sendable, Equatable {
    public var capacity: Double
    public var refillIntervalMilliseconds: Double
    public private(set) var tokens: Double
    public private(set) var updatedAt: UnixTime

    public init(capacity: Int, refillIntervalMilliseconds: Int64, now: UnixTime) {
        self.capacity = Double(capacity)
        self.refillIntervalMilliseconds = Double(max(1, refillIntervalMilliseconds))
        self.tokens = Double(capacity)
        self.updatedAt = now
    }

    /// Takes one token if there is one.
    public mutating func take(now: UnixTime) -> Bool {
        refill(now: now)
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Whether the bucket is full at `now` (a full bucket carries no state worth keeping).
    /// Whether `take` would succeed at `now` (nothing is taken).
    public func hasToken(at now: UnixTime) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.tokens >= 1 - 1e-9
    }

    public func isFull(at now: UnixTime) -> Bool {
        var copy = self
        copy.refill(now: now)
        return copy.tokens >= capacity
    }

    public mutating func refill(now: UnixTime) {
        guard now > updatedAt else { return }
        let elapsed = Double(now.milliseconds - updatedAt.milliseconds)
        tokens = min(capacity, tokens + elapsed / refillIntervalMilliseconds)
        updatedAt = now
    }
}
