import PushModel

/// A daily budget of reloads, as WidgetKit keeps one per widget ("Keeping a widget up to date": the
/// budget "is applied over a 24-hour period", "a widget the user frequently views typically receives 40 to
/// 70 refreshes a day"): a count in a 24-hour window that starts with the first reload. A pure value: time
/// comes in. Whether a push-triggered reload counts against the budget Apple does not say; Pushgate counts
/// it, and `policy.widgets.daily_budget` (or `policy.controls.daily_budget`) 0 turns the budget off.
public struct ReloadBudget: Sendable, Equatable {
    /// Start of the current window (ms since the epoch).
    private var windowStart: Int64
    private var used: Int32 = 0

    public static let windowMilliseconds: Int64 = 86_400_000

    public init(now: UnixTime) { windowStart = now.milliseconds }

    /// Reloads left at `now` out of `capacity`.
    public func left(capacity: Int, now: UnixTime) -> Int {
        now.milliseconds >= windowStart + Self.windowMilliseconds ? capacity : max(0, capacity - Int(used))
    }

    /// Spends `count` reloads at `now` (a new window begins when the last one is over).
    public mutating func spend(_ count: Int, now: UnixTime) {
        if now.milliseconds >= windowStart + Self.windowMilliseconds {
            windowStart = now.milliseconds
            used = 0
        }
        used += Int32(clamping: count)
    }

    /// Nothing spent in a window still open: nothing worth keeping.
    public func isFull(now: UnixTime) -> Bool {
        used == 0 || now.milliseconds >= windowStart + Self.windowMilliseconds
    }
}
