import NIOCore

/// Timer slack for a fleet's many timers (keep-alives, the runtime's deadlines): a deadline is moved
/// to the end of its 100 ms window, so timers due in one window fire in one wake-up of the event loop
/// instead of one each. 10,000 simulated devices otherwise wake the loop a few hundred times a second,
/// and the kernel's task switches were the largest share of the idle fleet's CPU (perf).
enum TimerSlack {
    static let window: Int64 = 100_000_000

    /// `delay` from now, rounded up to the next window's end.
    static func deadline(in delay: TimeAmount) -> NIODeadline {
        let at = NIODeadline.now().uptimeNanoseconds + UInt64(max(0, delay.nanoseconds))
        let window = UInt64(Self.window)
        return .uptimeNanoseconds((at + window - 1) / window * window)
    }
}
