import Foundation
import PushModel

extension BroadcastFanout {
    /// The gateway's answer to `GET /v1/broadcasts`, oldest first (it keeps the last 32).
    public static func list(json: Data) throws -> [BroadcastFanout] {
        struct Answer: Decodable { var broadcasts: [BroadcastFanout] }
        return try JSONDecoder().decode(Answer.self, from: json).broadcasts
    }
}

/// The fan-outs of a run's broadcasts, summed up for the report.
public struct BroadcastFanouts: Codable, Sendable, Equatable {
    /// Each broadcast the gateway still had figures for, oldest first.
    public var fanouts: [BroadcastFanout]

    public init(fanouts: [BroadcastFanout]) { self.fanouts = fanouts }

    public var written: Int { fanouts.reduce(0) { $0 + $1.written } }
    public var acknowledged: Int { fanouts.reduce(0) { $0 + $1.acknowledged } }
    /// The earliest first acknowledgement, the median of the medians, the worst p99 and the worst last.
    public var first: Double? { fanouts.compactMap(\.firstMilliseconds).min() }
    public var median: Double? {
        let medians = fanouts.compactMap(\.medianMilliseconds).sorted()
        return medians.isEmpty ? nil : medians[medians.count / 2]
    }
    public var worstP99: Double? { fanouts.compactMap(\.p99Milliseconds).max() }
    public var worstLast: Double? { fanouts.compactMap(\.lastMilliseconds).max() }
}
