import Synchronization

/// One rate limit shared by every connection, keyed by device token, team or source address.
/// Lock-striped so that connections on different event loops rarely meet on one lock.
public final class RequestRateLimiter<Key: Hashable & Sendable>: Sendable {
    private let limit: RateLimit
    private final class Shard: Sendable {
        let buckets = Mutex<[Key: TokenBucket]>([:])
    }

    private let shards: [Shard]
    /// Past this many buckets in a shard, full buckets (no state worth keeping) are dropped.
    private let pruneThreshold: Int

    public init(limit: RateLimit, shardCount: Int = 16, pruneThreshold: Int = 50_000) {
        self.limit = limit
        self.shards = (0..<max(1, shardCount)).map { _ in Shard() }
        self.pruneThreshold = pruneThreshold
    }

    /// Whether `key` has used up its limit at `now` (nothing is counted).
    public func isExhausted(for key: Key, now: UnixTime) -> Bool {
        guard limit.isEnabled else { return false }
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        return shard.buckets.withLock { buckets in buckets[key].map { !$0.hasToken(limit.rate, at: now) } ?? false }
    }

    /// Whether one more request for `key` is within the limit at `now` (and counts it if so).
    public func allowsRequest(for key: Key, now: UnixTime) -> Bool {
        guard limit.isEnabled else { return true }
        let shard = shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
        return shard.buckets.withLock { buckets in
            if let index = buckets.index(forKey: key) {
                return buckets.values[index].take(limit.rate, now: now)
            }
            if buckets.count >= pruneThreshold {
                buckets = buckets.filter { !$0.value.isFull(limit.rate, at: now) }
            }
            var bucket = TokenBucket(now: now)
            let allowed = bucket.take(limit.rate, now: now)
            buckets[key] = bucket
            return allowed
        }
    }
}
