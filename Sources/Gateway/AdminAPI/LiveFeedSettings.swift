/// How the live feed (`/v1/live`) writes: how often, and how long a client that takes nothing is kept.
public struct LiveFeedSettings: Sendable, Equatable {
    /// One event this often.
    public var intervalMilliseconds: Int64 = 1000
    /// A client that has not taken an event for this long is closed; 0: never. Meanwhile at most one event
    /// waits for it (the next ones are skipped, and the one after covers the whole interval).
    public var stalledCloseSeconds: Int64 = 30

    public init() {}
}
