import DeviceHub
import Foundation
import PushMetrics
import PushPolicy

/// What the live dashboard shows each second (`/v1/live`, server-sent events): rates and outcome counts
/// over the last interval, POST latency percentiles over it, and the gateway's state now.
struct LiveFigures: Encodable, Equatable {
    /// Milliseconds since 1970, and the interval's length in seconds.
    var at: Int64
    var seconds: Double
    /// Pushes per second reaching the policy, by class.
    var rates: [String: Double]
    /// Silent outcomes in the interval (`woken_on_budget`, `held`, `released`, `coalesced`, `expired`).
    var outcomes: [String: Int]
    /// POST latency over the interval (bucket upper bounds, milliseconds; nil: no request).
    var postLatencyMs: Percentiles?
    /// Accept-to-device-ack latency since start (pushes delivered at once), milliseconds.
    var deviceLatencyMs: Percentiles?
    var connectedDevices: Int
    var heldNow: Int
    var deadlineMisses: Int
    var acceptedTotal: Int

    struct Percentiles: Encodable, Equatable {
        var p50: Double
        var p90: Double
        var p99: Double
    }
}

/// One dashboard's feed: each `next()` reads the counters and reports the difference from the last.
struct LiveFeed {
    let hub: DeviceHub
    let metrics: GatewayMetrics?
    private var last: (at: Date, policy: PolicyCounters, latency: [Int])?

    init(hub: DeviceHub, metrics: GatewayMetrics?) {
        self.hub = hub
        self.metrics = metrics
    }

    mutating func next(now: Date = Date()) -> LiveFigures {
        let policy = hub.policyCounters
        let buckets = metrics?.provider.latencyBuckets ?? []
        let counts = buckets.map(\.count)
        let before = last ?? (now, policy, counts)
        last = (now, policy, counts)
        let seconds = max(0.001, now.timeIntervalSince(before.at))
        func per(_ field: KeyPath<PolicyCounters, Int>) -> Int {
            policy[keyPath: field] - before.policy[keyPath: field]
        }
        let released =
            per(\.releasedOnAlert) + per(\.releasedOnKeepAlive) + per(\.releasedOnReconnect)
            + per(\.releasedOnAppOpened)
            + per(\.releasedOnConditionEnded)
        var latency: LiveFigures.Percentiles?
        let interval = zip(counts, before.latency).map { $0 - $1 }
        let total = interval.reduce(0, +)
        if total > 0 {
            func percentile(_ p: Double) -> Double {
                var seen = 0
                for (index, count) in interval.enumerated() {
                    seen += count
                    if Double(seen) >= p * Double(total) { return (buckets[index].upperSeconds ?? 10) * 1000 }
                }
                return (buckets.last?.upperSeconds ?? 10) * 1000
            }
            latency = .init(p50: percentile(0.5), p90: percentile(0.9), p99: percentile(0.99))
        }
        let device = hub.deliveryLatency
        return LiveFigures(
            at: Int64(now.timeIntervalSince1970 * 1000), seconds: seconds,
            rates: [
                "alerting": Double(per(\.alertingAccepted)) / seconds,
                "silent": Double(per(\.silentAccepted)) / seconds,
                "other": Double(per(\.otherAccepted)) / seconds,
            ],
            outcomes: [
                "woken_on_budget": per(\.wokenOnBudget), "held": per(\.held), "released": released,
                "coalesced": per(\.coalesced), "expired": per(\.expired) + per(\.overflowed),
            ],
            postLatencyMs: latency,
            deviceLatencyMs: device.count == 0
                ? nil
                : .init(
                    p50: Double(device.p50) / 1000, p90: Double(device.p90) / 1000, p99: Double(device.p99) / 1000),
            connectedDevices: hub.connectedCount, heldNow: policy.heldNow, deadlineMisses: policy.deadlinePenalties,
            acceptedTotal: policy.acceptedTotal)
    }
}
