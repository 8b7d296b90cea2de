import Foundation
import Histogram

/// Latency percentiles, in milliseconds.
public struct LatencyFigures: Codable, Sendable, Equatable {
    public var count: UInt64
    public var p50: Double
    public var p90: Double
    public var p99: Double
    public var p999: Double
    public var max: Double
    public var mean: Double

    public init(_ histogram: Histogram<UInt64>, unitsPerMillisecond: Double = 1000) {
        count = histogram.totalCount
        p50 = Double(histogram.valueAtPercentile(50)) / unitsPerMillisecond
        p90 = Double(histogram.valueAtPercentile(90)) / unitsPerMillisecond
        p99 = Double(histogram.valueAtPercentile(99)) / unitsPerMillisecond
        p999 = Double(histogram.valueAtPercentile(99.9)) / unitsPerMillisecond
        max = Double(histogram.max) / unitsPerMillisecond
        mean = histogram.totalCount == 0 ? 0 : histogram.mean / unitsPerMillisecond
    }
}

/// Everything a run measured, as `--json` writes it and the summary and HTML report show it.
public struct BenchResult: Codable, Sendable {
    public struct Kind: Codable, Sendable, Equatable {
        public var name: String
        public var silent: Bool
        public var sent: Int
        public var accepted: Int
    }

    public struct CurvePoint: Codable, Sendable, Equatable {
        public var percentile: Double
        public var milliseconds: Double
    }

    public var target: String
    public var startedAt: Date
    public var seconds: Double
    public var scenario: Scenario
    public var sent: Int
    public var accepted: Int
    /// Answers other than 200, by "status reason".
    public var rejected: [String: Int]
    /// Requests without an answer, by cause.
    public var failed: [String: Int]
    /// Accepted requests over the time from the start to the last answer.
    public var acceptedPerSecond: Double
    /// POST latency (from the intended send time in an open-loop run).
    public var latency: LatencyFigures
    public var percentileCurve: [CurvePoint]
    public var kinds: [Kind]
    public var timeline: [BenchRecorder.Second]
    /// The gateway's own figures over the run, when its admin API was given.
    public var gateway: GatewayFigures?
    /// The broadcasts' fan-outs, as the gateway measured them, when the mix had broadcasts and its admin
    /// API was given.
    public var broadcasts: BroadcastFanouts?
    /// The simulated iPhones' freshness figures, when the run had a fleet of them (`pushgate demo`).
    public var fleet: FleetFigures?

    init(
        recorder: BenchRecorder, mix: [PushKind], scenario: Scenario, target: String, startedAt: Date,
        seconds: Double
    ) {
        self.target = target
        self.startedAt = startedAt
        self.seconds = seconds
        self.scenario = scenario
        sent = recorder.sent
        accepted = recorder.accepted
        rejected = recorder.rejected
        failed = recorder.failed
        // Over the time the answers took: from the start to the last answer.
        let answering = Double(recorder.lastAnswerAt) / 1e9
        acceptedPerSecond = answering > 0 ? Double(recorder.accepted) / answering : 0
        latency = LatencyFigures(recorder.latency)
        percentileCurve = Self.curve(recorder.latency)
        kinds = mix.indices.map {
            Kind(
                name: mix[$0].name, silent: mix[$0].isSilent, sent: recorder.sentByKind[$0],
                accepted: recorder.acceptedByKind[$0])
        }
        timeline = recorder.seconds
    }

    public var rejectedCount: Int { rejected.values.reduce(0, +) }
    public var failedCount: Int { failed.values.reduce(0, +) }
    public var acceptedSilent: Int { kinds.filter(\.silent).reduce(0) { $0 + $1.accepted } }

    /// Percentiles at 0, 50, 75, 87.5, … (halving the distance to 100), as HdrHistogram plots them.
    static func curve(_ histogram: Histogram<UInt64>) -> [CurvePoint] {
        guard histogram.totalCount > 0 else { return [] }
        var points: [CurvePoint] = []
        var percentile = 0.0
        var remaining = 100.0
        while percentile < 99.9999 {
            points.append(
                CurvePoint(percentile: percentile, milliseconds: Double(histogram.valueAtPercentile(percentile)) / 1000)
            )
            remaining /= 2
            percentile = 100 - remaining
        }
        points.append(CurvePoint(percentile: 100, milliseconds: Double(histogram.max) / 1000))
        return points
    }

    public func json() throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return try encoder.encode(self)
    }
}
