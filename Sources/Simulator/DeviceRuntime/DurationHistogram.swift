/// Durations in milliseconds, kept as counts in log-linear buckets (exact below 128 ms, then 64 buckets
/// per doubling: within 1.6 %), so that millions of transfers cost a fixed few kilobytes and two
/// histograms add up. Percentiles answer in seconds.
public struct DurationHistogram: Sendable, Equatable {
    private var counts: [UInt32] = []
    public private(set) var count = 0

    static let linear: Int64 = 128
    static let perDoubling = 64

    public init() {}

    public mutating func record(_ milliseconds: Int64) {
        let bucket = Self.bucket(of: max(0, milliseconds))
        if bucket >= counts.count { counts += repeatElement(0, count: bucket - counts.count + 1) }
        counts[bucket] &+= 1
        count += 1
    }

    public mutating func add(_ other: DurationHistogram) {
        if other.counts.count > counts.count { counts += repeatElement(0, count: other.counts.count - counts.count) }
        for (index, value) in other.counts.enumerated() { counts[index] &+= value }
        count += other.count
    }

    /// The value at quantile `p` (0…1) in seconds, as the lowest value of its bucket; nil when empty.
    public func percentile(_ p: Double) -> Double? {
        guard count > 0 else { return nil }
        // The same rank as a sorted array's `values[Int(count × p)]`.
        let rank = min(count - 1, Int(Double(count) * p))
        var seen = 0
        for (bucket, value) in counts.enumerated() {
            seen += Int(value)
            if seen > rank { return Double(Self.lowest(of: bucket)) / 1000 }
        }
        return nil
    }

    static func bucket(of value: Int64) -> Int {
        guard value >= linear else { return Int(value) }
        // Doublings above 128 ms, then the position within the doubling.
        let exponent = 63 - value.leadingZeroBitCount  // ≥ 7
        let doubling = exponent - 7
        let offset = Int((value - (Int64(1) << exponent)) >> (exponent - 6))  // 0..<64
        return Int(linear) + doubling * perDoubling + offset
    }

    static func lowest(of bucket: Int) -> Int64 {
        guard bucket >= Int(linear) else { return Int64(bucket) }
        let doubling = (bucket - Int(linear)) / perDoubling
        let offset = Int64((bucket - Int(linear)) % perDoubling)
        let exponent = doubling + 7
        return (Int64(1) << exponent) + offset << (exponent - 6)
    }
}
