import Foundation
import Histogram
import PushPolicy

/// A Pushgate gateway's own figures over a run: the difference of its admin counters (`/v1/counters`)
/// between the start and the end. Silent outcomes, completions and deadline misses, and the
/// accept-to-device-ack latency of what was delivered meanwhile.
public struct GatewayFigures: Codable, Sendable, Equatable {
    public var silentAccepted: Int
    public var alertingAccepted: Int
    public var wokenOnBudget: Int
    public var held: Int
    public var releasedOnAlert: Int
    public var releasedOnKeepAlive: Int
    /// Released on reconnect, on the app's opening or when a power-saving condition ended.
    public var releasedOtherwise: Int
    public var coalesced: Int
    public var expired: Int
    public var notStored: Int
    public var overflowed: Int
    /// Held at the end minus held at the start.
    public var stillHeld: Int
    public var completedNewData: Int
    public var completedNoData: Int
    public var completedFailed: Int
    public var completedLate: Int
    public var deadlineMisses: Int
    public var connectedDevices: Int
    /// Accept to device acknowledgement, for deliveries during the run.
    public var acceptToDeviceAck: LatencyFigures?

    /// The counters JSON the admin API answers (only the parts read here).
    public struct Counters: Decodable, Sendable {
        public var policy: PolicyCounters
        public var connectedDevices: Int
        /// Non-empty buckets of the accept-to-ack histogram: [value in µs, count].
        public var acceptToDeviceAckBuckets: [[UInt64]]?

        public init(json: Data) throws { self = try JSONDecoder().decode(Counters.self, from: json) }
    }

    public init(from before: Counters, to after: Counters) {
        let a = before.policy
        let b = after.policy
        silentAccepted = b.silentAccepted - a.silentAccepted
        alertingAccepted = b.alertingAccepted - a.alertingAccepted
        wokenOnBudget = b.wokenOnBudget - a.wokenOnBudget
        held = b.held - a.held
        releasedOnAlert = b.releasedOnAlert - a.releasedOnAlert
        releasedOnKeepAlive = b.releasedOnKeepAlive - a.releasedOnKeepAlive
        releasedOtherwise =
            (b.releasedOnReconnect + b.releasedOnAppOpened + b.releasedOnConditionEnded)
            - (a.releasedOnReconnect + a.releasedOnAppOpened + a.releasedOnConditionEnded)
        coalesced = b.coalesced - a.coalesced
        expired = b.expired - a.expired
        notStored = b.notStored - a.notStored
        overflowed = b.overflowed - a.overflowed
        stillHeld = b.heldNow - a.heldNow
        completedNewData = b.completedNewData - a.completedNewData
        completedNoData = b.completedNoData - a.completedNoData
        completedFailed = b.completedFailed - a.completedFailed
        completedLate = b.completedLate - a.completedLate
        deadlineMisses = b.deadlinePenalties - a.deadlinePenalties
        connectedDevices = after.connectedDevices
        if let afterBuckets = after.acceptToDeviceAckBuckets {
            let beforeCounts = Dictionary(
                (before.acceptToDeviceAckBuckets ?? []).compactMap { $0.count == 2 ? ($0[0], $0[1]) : nil },
                uniquingKeysWith: +)
            var histogram = Histogram<UInt64>(
                highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: .three)
            for bucket in afterBuckets where bucket.count == 2 {
                let count = bucket[1] - min(bucket[1], beforeCounts[bucket[0], default: 0])
                if count > 0 { _ = histogram.record(bucket[0], count: count) }
            }
            acceptToDeviceAck = histogram.totalCount > 0 ? LatencyFigures(histogram) : nil
        }
    }

    /// Final outcomes of silent pushes: each accepted silent push has exactly one of these (when the
    /// run's alerting pushes are all delivered at once, as priority 10 to online devices are).
    public var silentOutcomes: Int {
        wokenOnBudget + releasedOnAlert + releasedOnKeepAlive + releasedOtherwise + coalesced + expired + notStored
            + overflowed + stillHeld
    }
}
