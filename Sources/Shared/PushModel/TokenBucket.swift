/// A token bucket with time passed in, its rate passed in too: the one rate-limiting primitive. Each
/// limiter that uses it is named for the question it answers and keeps its rate where that question's
/// settings are: a device's flood limit, the provider API's request limits and provider-token updates,
/// a Live Activity's priority-10 budget (its rate grows with frequent pushes), an app's silent budget
/// (its refill slows while the app cools off, so that throttle works out the refill itself and hands it
/// to `refill(adding:capacity:to:)`).
///
/// Twelve bytes, so that a fleet's millions of them cost little: the time it is settled to and the tokens
/// left then, a `Float` (each refill is worked out in `Double` and rounded once). A bucket no one has
/// taken from is *untouched*: full at whatever capacity it is used with, so a capacity changed by a
/// setting applies to it whole.
public struct TokenBucket: Sendable, Equatable {
    /// How large a bucket is and how fast it fills.
    public struct Rate: Sendable, Equatable {
        public var capacity: Int
        /// One token comes back every this many milliseconds.
        public var refillIntervalMilliseconds: Double

        public init(capacity: Int, refillIntervalMilliseconds: Double) {
            self.capacity = capacity
            self.refillIntervalMilliseconds = max(1e-3, refillIntervalMilliseconds)
        }

        public init(capacity: Int, refillSeconds: Int64) {
            self.init(capacity: capacity, refillIntervalMilliseconds: Double(refillSeconds) * 1000)
        }

        /// `perSecond` tokens a second after a burst of `burst`.
        public init(burst: Int, perSecond: Double) {
            self.init(capacity: burst, refillIntervalMilliseconds: 1000 / max(1e-6, perSecond))
        }
    }

    /// Refill is applied up to this time (milliseconds since the epoch).
    public private(set) var settledAt: Int64
    /// Tokens left at `settledAt`; NaN while untouched.
    private var level: Float

    /// Whole tokens are counted with this much slack, so that refills rounded to `Float` still add up.
    private static let slack: Float = 1e-4

    /// An untouched bucket (full) at `now`.
    public init(now: UnixTime) {
        settledAt = now.milliseconds
        level = .nan
    }

    /// A bucket brought back from the store: `tokens` left at `settledAt` (nil: untouched).
    public init(tokens: Float?, settledAt: Int64) {
        self.settledAt = settledAt
        level = tokens ?? .nan
    }

    /// No token was ever taken from it: it is full, at any capacity.
    public var isUntouched: Bool { level.isNaN }

    /// Tokens left at `settledAt` (nil: untouched), as the store keeps them.
    public var tokens: Float? { level.isNaN ? nil : level }

    /// Takes one token at `now` if there is one.
    public mutating func take(_ rate: Rate, now: UnixTime) -> Bool {
        refill(rate, to: now)
        return takeSettled(capacity: rate.capacity)
    }

    /// Takes one token if there is one, with the refill already applied (`refill(adding:capacity:to:)`).
    public mutating func takeSettled(capacity: Int) -> Bool {
        if level.isNaN { level = Float(capacity) }
        guard level >= 1 - Self.slack else { return false }
        level = max(0, level - 1)
        return true
    }

    /// Gives back a token taken for something that did not happen (never above `capacity`).
    public mutating func giveBack(capacity: Int) {
        guard !level.isNaN else { return }
        level = min(Float(capacity), level + 1)
    }

    /// Takes every token (a penalty).
    public mutating func empty() { level = 0 }

    /// Whole tokens left at `now`.
    public func left(_ rate: Rate, now: UnixTime) -> Int {
        var copy = self
        copy.refill(rate, to: now)
        guard !copy.level.isNaN else { return rate.capacity }
        return Int((copy.level + Self.slack).rounded(.down))
    }

    /// Tokens left at `now`, fractions included.
    public func exactly(_ rate: Rate, now: UnixTime) -> Double {
        var copy = self
        copy.refill(rate, to: now)
        return copy.level.isNaN ? Double(rate.capacity) : Double(copy.level)
    }

    /// Whether `take` would succeed at `now` (nothing is taken).
    public func hasToken(_ rate: Rate, at now: UnixTime) -> Bool { left(rate, now: now) >= 1 }

    /// Refilled to the brim at `now`: nothing worth remembering.
    public func isFull(_ rate: Rate, at now: UnixTime) -> Bool { left(rate, now: now) >= rate.capacity }

    /// Refills at `rate` up to `now`, never above its capacity (a bucket filled at a larger capacity is
    /// cut to the smaller one at once).
    public mutating func refill(_ rate: Rate, to now: UnixTime) {
        let to = now.milliseconds
        let gained = to > settledAt ? Double(to - settledAt) / rate.refillIntervalMilliseconds : 0
        refill(adding: gained, capacity: rate.capacity, to: now)
    }

    /// Adds `gained` tokens (worked out by a limiter whose rate changed since `settledAt`), never above
    /// `capacity`, and settles at `now` (never back in time).
    public mutating func refill(adding gained: Double, capacity: Int, to now: UnixTime) {
        if !level.isNaN { level = Float(min(Double(capacity), Double(level) + gained)) }
        settledAt = max(settledAt, now.milliseconds)
    }
}
