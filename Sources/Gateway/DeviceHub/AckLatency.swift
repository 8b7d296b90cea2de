import Histogram
import NIOCore
import PushModel

/// Accept-to-device-ack latency of pushes delivered at once: when each push written at once was accepted
/// (bounded: past `sampleLimit` waiting, the rest is not measured), and the histogram of the time to its
/// device's acknowledgement.
struct AckLatency: Sendable {
    static let sampleLimit = 100_000

    private var accepted: [APNsID: NIODeadline] = [:]
    private var histogram = Histogram<UInt64>(highestTrackableValue: 60_000_000, numberOfSignificantValueDigits: .three)

    /// A push written now, accepted at `at`.
    mutating func written(_ id: APNsID, acceptedAt at: NIODeadline) {
        if accepted.count < Self.sampleLimit { accepted[id] = at }
    }

    /// Its device acknowledged it at `now`.
    mutating func acknowledged(_ id: APNsID, now: NIODeadline) {
        guard let at = accepted.removeValue(forKey: id) else { return }
        _ = histogram.record(UInt64(max(0, (now - at).nanoseconds / 1000)))
    }

    /// The histogram's non-empty buckets, [microseconds, count].
    var buckets: [[UInt64]] { histogram.recordedValues().map { [$0.value, UInt64($0.count)] } }

    var summary: DeliveryLatency {
        DeliveryLatency(
            count: histogram.totalCount, p50: histogram.valueAtPercentile(50), p90: histogram.valueAtPercentile(90),
            p99: histogram.valueAtPercentile(99), max: histogram.max)
    }
}

/// The hub's periodic checks, each due when its interval has passed since it last ran.
struct PeriodicChecks: Sendable {
    var stalled = UnixTime(milliseconds: 0)
    var cursorStore = UnixTime(milliseconds: 0)
    var prune = UnixTime(milliseconds: 0)

    /// Whether `every` milliseconds have passed since the check last ran (which is then now).
    mutating func due(_ check: WritableKeyPath<PeriodicChecks, UnixTime>, every milliseconds: Int64, now: UnixTime)
        -> Bool
    {
        guard now.milliseconds - self[keyPath: check].milliseconds >= milliseconds else { return false }
        self[keyPath: check] = now
        return true
    }
}
