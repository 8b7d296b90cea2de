/// When each request of an open-loop run is due, as an offset from the run's start: a constant rate,
/// or stages whose rate moves linearly from one value to another (a ramp). Pure arithmetic, so the
/// schedule is exact and tested without a clock; the connections send request `i` at `offset(of: i)`
/// and measure its latency from there, whether or not they could send it on time (no coordinated
/// omission: a stalled server shows as latency, not as fewer requests).
public struct RateSchedule: Sendable, Equatable, Codable {
    public struct Stage: Sendable, Equatable, Codable {
        /// Requests per second at the stage's start and end.
        public var fromRate: Double
        public var toRate: Double
        public var seconds: Double

        public init(fromRate: Double, toRate: Double, seconds: Double) {
            self.fromRate = fromRate
            self.toRate = toRate
            self.seconds = seconds
        }

        /// Requests in the stage: the area under the rate line.
        var count: Int { Int(((fromRate + toRate) / 2 * seconds).rounded(.down)) }
    }

    public var stages: [Stage]

    public init(stages: [Stage]) { self.stages = stages }

    public static func constant(perSecond rate: Double, seconds: Double) -> RateSchedule {
        RateSchedule(stages: [Stage(fromRate: rate, toRate: rate, seconds: seconds)])
    }

    public static func ramp(from: Double, to: Double, seconds: Double) -> RateSchedule {
        RateSchedule(stages: [Stage(fromRate: from, toRate: to, seconds: seconds)])
    }

    /// Requests in the whole schedule.
    public var count: Int { stages.reduce(0) { $0 + $1.count } }

    public var seconds: Double { stages.reduce(0) { $0 + $1.seconds } }

    /// Nanoseconds from the start at which request `index` (from 0) is due; nil past the schedule's end.
    public func offset(of index: Int) -> Int64? {
        guard index >= 0 else { return nil }
        var base = 0
        var startSeconds = 0.0
        for stage in stages {
            let count = stage.count
            if index < base + count {
                let n = Double(index - base)
                let r0 = stage.fromRate
                let slope = (stage.toRate - stage.fromRate) / stage.seconds
                let within: Double
                if stage.fromRate == stage.toRate {
                    // Exact for whole rates: request n at n / rate seconds.
                    if r0 == r0.rounded(), r0 > 0 {
                        return Int64((startSeconds * 1e9).rounded()) + Int64(index - base) * 1_000_000_000 / Int64(r0)
                    }
                    within = n / r0
                } else {
                    // The n-th request is where the area under the rate line reaches n:
                    // r0·t + slope·t²/2 = n.
                    within = (-r0 + (r0 * r0 + 2 * slope * n).squareRoot()) / slope
                }
                return Int64(((startSeconds + within) * 1e9).rounded(.down))
            }
            base += count
            startSeconds += stage.seconds
        }
        return nil
    }
}
