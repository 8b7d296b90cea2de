import CoreMetrics
import PushModel
import Synchronization

/// What the provider API records on the request path: answers by status and reason, their latency, and
/// accepted notifications by push type and class. Every handle is made once (from the factory the
/// gateway passes, so each gateway has its own registry), so recording is an atomic add or a bucket
/// increment, never a lookup by name.
public final class ProviderMetrics: Sendable {
    /// By `RejectionReason.allCases` position; the last is 200.
    private let answers: [Counter]
    private let duration: Timer
    /// By push type position × class position.
    private let acceptedByKind: [Counter]
    /// Streams reset with PROTOCOL_ERROR because the request was malformed (RFC 9113 §8.1.1).
    private let malformedRequests: Counter
    /// Accepted pushes whose type does not match the payload, by `PushTypeMismatch` position.
    private let mismatches: [Counter]
    /// Streams refused alone because they went over a limit, by `StreamRefusal` position.
    private let refusedStreams: [Counter]
    /// Connections paused for not reading their answers, and closed for staying so.
    private let stalledPaused: Counter
    private let stalledClosed: Counter
    /// The same latencies counted per bucket of `durationBuckets` (and one past the last), for the live
    /// dashboard's percentiles (Prometheus' histogram cannot be read back).
    private let latencyCounts: Mutex<[Int]>
    private static let bucketNanoseconds: [Int64] = durationBuckets.map {
        $0.components.seconds * 1_000_000_000 + $0.components.attoseconds / 1_000_000_000
    }
    private static let reasons = RejectionReason.allCases
    private static let types = PushType.allCases
    private static let classes = NotificationClass.allCases

    /// Latency buckets: the request path answers in microseconds in memory, milliseconds with a store.
    public static let durationBuckets: [Duration] = [
        .microseconds(100), .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2),
        .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
    ]

    /// Handles that record nothing (tests and tools that assemble a provider context alone).
    public static let none = ProviderMetrics(factory: NOOPMetricsHandler.instance)

    public init(factory: any MetricsFactory) {
        let requests = MetricName.providerRequests.rawValue
        answers =
            Self.reasons.map { reason in
                Counter(
                    label: requests, dimensions: [("status", String(reason.status)), ("reason", reason.rawValue)],
                    factory: factory)
            } + [Counter(label: requests, dimensions: [("status", "200"), ("reason", "")], factory: factory)]
        duration = Timer(label: MetricName.providerRequestDuration.rawValue, dimensions: [], factory: factory)
        malformedRequests = Counter(label: MetricName.malformedRequests.rawValue, dimensions: [], factory: factory)
        mismatches = PushTypeMismatch.allCases.map {
            Counter(
                label: MetricName.pushTypeMismatches.rawValue, dimensions: [("mismatch", $0.rawValue)], factory: factory
            )
        }
        refusedStreams = StreamRefusal.allCases.map {
            Counter(label: MetricName.refusedStreams.rawValue, dimensions: [("limit", $0.rawValue)], factory: factory)
        }
        stalledPaused = Counter(
            label: MetricName.stalledConnections.rawValue, dimensions: [("outcome", "paused")], factory: factory)
        stalledClosed = Counter(
            label: MetricName.stalledConnections.rawValue, dimensions: [("outcome", "closed")], factory: factory)
        latencyCounts = Mutex(Array(repeating: 0, count: Self.durationBuckets.count + 1))
        acceptedByKind = Self.types.flatMap { type in
            Self.classes.map { kind in
                Counter(
                    label: MetricName.accepted.rawValue,
                    dimensions: [("push_type", type.rawValue), ("class", kind.rawValue)], factory: factory)
            }
        }
    }

    /// A request answered 200, or rejected for `reason`, `nanoseconds` after its headers arrived.
    public func answered(rejectedFor reason: RejectionReason?, nanoseconds: Int64) {
        answers[reason.map { Self.reasons.firstIndex(of: $0)! } ?? Self.reasons.count].increment()
        duration.recordNanoseconds(nanoseconds)
        let bucket = Self.bucketNanoseconds.firstIndex { nanoseconds <= $0 } ?? Self.bucketNanoseconds.count
        latencyCounts.withLock { $0[bucket] += 1 }
    }

    /// Requests answered so far per latency bucket: (upper bound in seconds, or nil past the last; count).
    public var latencyBuckets: [(upperSeconds: Double?, count: Int)] {
        let counts = latencyCounts.withLock { $0 }
        return counts.enumerated().map { index, count in
            (index < Self.bucketNanoseconds.count ? Double(Self.bucketNanoseconds[index]) / 1e9 : nil, count)
        }
    }

    /// A malformed request's stream was reset.
    public func malformed() { malformedRequests.increment() }

    /// A stream was refused alone for going over `limit`.
    public func refused(_ limit: StreamRefusal) {
        refusedStreams[StreamRefusal.allCases.firstIndex(of: limit)!].increment()
    }

    /// A connection's reading stopped for its unsent answers (`closed`: and it was closed for staying so).
    public func stalled(closed: Bool) { (closed ? stalledClosed : stalledPaused).increment() }

    /// An accepted push whose type does not match its payload.
    public func mismatched(_ mismatch: PushTypeMismatch) {
        mismatches[PushTypeMismatch.allCases.firstIndex(of: mismatch)!].increment()
    }

    public func accepted(_ type: PushType, _ kind: NotificationClass) {
        acceptedByKind[Self.types.firstIndex(of: type)! * Self.classes.count + Self.classes.firstIndex(of: kind)!]
            .increment()
    }
}

/// The limits over which one stream is refused and its connection kept.
public enum StreamRefusal: String, CaseIterable, Sendable {
    /// More open streams than SETTINGS_MAX_CONCURRENT_STREAMS: RST_STREAM REFUSED_STREAM.
    case concurrentStreams = "concurrent_streams"
    /// A header list over SETTINGS_MAX_HEADER_LIST_SIZE: 431.
    case headerListSize = "header_list_size"
}
