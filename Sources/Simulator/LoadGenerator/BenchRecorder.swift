import Histogram

/// What a run measured, fed by the connections: requests sent and answered, answers by status and
/// reason, latency (HdrHistogram, microseconds) overall and per second of the run. Time is an argument
/// (nanoseconds since the run's start), so the recorder is tested without a clock.
public struct BenchRecorder: Sendable {
    public enum Outcome: Sendable, Equatable {
        case accepted
        /// An HTTP answer other than 200: its status and `reason`.
        case rejected(status: Int, reason: String)
        /// No answer: the stream was reset, the connection closed, the run ended first.
        case failed(String)
    }

    /// One second of the run.
    public struct Second: Sendable, Equatable, Codable {
        public var second: Int
        public var sent = 0
        public var accepted = 0
        public var rejected = 0
        public var failed = 0
        public var p50Milliseconds = 0.0
        public var p99Milliseconds = 0.0
        public var maxMilliseconds = 0.0
    }

    /// Latencies above this are recorded as this (an overloaded open-loop run can queue for long).
    public static let highestMicroseconds: UInt64 = 300_000_000

    public private(set) var sent = 0
    public private(set) var accepted = 0
    /// Answers other than 200, by "status reason".
    public private(set) var rejected: [String: Int] = [:]
    /// Requests without an answer, by cause.
    public private(set) var failed: [String: Int] = [:]
    /// Accepted (200) requests by the mix's kind index.
    public private(set) var acceptedByKind: [Int]
    public private(set) var sentByKind: [Int]
    /// When the last answer came (nanoseconds since the start).
    public private(set) var lastAnswerAt: Int64 = 0
    public private(set) var latency = Histogram<UInt64>(
        highestTrackableValue: highestMicroseconds, numberOfSignificantValueDigits: .three)
    /// Closed seconds, in order (every second up to the last event, empty ones included).
    public private(set) var seconds: [Second] = []
    private var current = Second(second: 0)
    private var currentLatency = Histogram<UInt64>(
        highestTrackableValue: highestMicroseconds, numberOfSignificantValueDigits: .two)

    public init(kinds: Int) {
        acceptedByKind = Array(repeating: 0, count: kinds)
        sentByKind = Array(repeating: 0, count: kinds)
    }

    public var answered: Int { accepted + rejected.values.reduce(0, +) }
    public var failures: Int { failed.values.reduce(0, +) }

    public mutating func sent(kind: Int, at nanoseconds: Int64) {
        roll(to: nanoseconds)
        sent += 1
        sentByKind[kind] += 1
        current.sent += 1
    }

    /// A request's end: its outcome, and its latency (from its intended send time in an open-loop run).
    public mutating func completed(kind: Int, _ outcome: Outcome, latencyNanoseconds: Int64, at nanoseconds: Int64) {
        roll(to: nanoseconds)
        if case .failed = outcome {} else { lastAnswerAt = max(lastAnswerAt, nanoseconds) }
        switch outcome {
        case .accepted:
            accepted += 1
            acceptedByKind[kind] += 1
            current.accepted += 1
        case .rejected(let status, let reason):
            rejected["\(status) \(reason)", default: 0] += 1
            current.rejected += 1
        case .failed(let cause):
            failed[cause, default: 0] += 1
            current.failed += 1
            return  // no answer, no latency
        }
        let micros = UInt64(max(0, latencyNanoseconds) / 1000)
        _ = latency.record(min(micros, Self.highestMicroseconds))
        _ = currentLatency.record(min(micros, Self.highestMicroseconds))
    }

    /// Closes the seconds up to `nanoseconds` (call at the end of the run, with its end).
    public mutating func finish(at nanoseconds: Int64) {
        roll(to: nanoseconds)
        close()
    }

    private mutating func roll(to nanoseconds: Int64) {
        let second = Int(max(0, nanoseconds) / 1_000_000_000)
        while current.second < second {
            close()
            current = Second(second: current.second + 1)
        }
    }

    private mutating func close() {
        if currentLatency.totalCount > 0 {
            current.p50Milliseconds = Double(currentLatency.valueAtPercentile(50)) / 1000
            current.p99Milliseconds = Double(currentLatency.valueAtPercentile(99)) / 1000
            current.maxMilliseconds = Double(currentLatency.max) / 1000
        }
        if let last = seconds.last, last.second == current.second {
            seconds[seconds.count - 1] = current
        } else {
            seconds.append(current)
        }
        currentLatency.reset()
    }
}
