import PushModel

/// When a device sends its keep-alives: the first at a random phase within the first interval after it
/// connects, each next one an interval later moved by jitter, so that a fleet never fires in step
/// (ntfy's issue #509 is what firing in step does). Seeded: the simulator's agents and a forecast ask the
/// same schedule and get the same times.
public struct KeepAliveSchedule: Sendable {
    public let intervalMilliseconds: Int64
    /// The share of the interval each keep-alive may move, either way.
    public let jitter: Double
    private var random: FastRandom
    /// The next keep-alive.
    public private(set) var next: UnixTime

    public init(connectedAt: UnixTime, intervalSeconds: Int, jitter: Double = 0.1, seed: UInt64) {
        intervalMilliseconds = max(1, Int64(intervalSeconds) * 1000)
        self.jitter = min(max(jitter, 0), 0.9)
        random = FastRandom(seed: seed ^ 0x4B45_4550_414C_4956)
        next = connectedAt.adding(milliseconds: max(1, Int64(Self.uniform(&random) * Double(intervalMilliseconds))))
    }

    /// Moves to the keep-alive after the current one.
    public mutating func advance() {
        let spread = Double(intervalMilliseconds) * jitter
        let delay = Double(intervalMilliseconds) + (Self.uniform(&random) * 2 - 1) * spread
        next = next.adding(milliseconds: max(1, Int64(delay)))
    }

    /// The first keep-alive at or after `time` (the ones before it are passed over).
    public mutating func first(atOrAfter time: UnixTime) -> UnixTime {
        while next < time { advance() }
        return next
    }

    private static func uniform(_ random: inout FastRandom) -> Double { Double(random.next() >> 11) / Double(1 << 53) }
}
