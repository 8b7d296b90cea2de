import PushModel

/// The device-wide budget of background wakes, as Apple's developer technical support describes the
/// throttle in the field (developer forums, thread 776933): budgets for the whole device's battery and
/// data, shared by every app, "reset every 24 hours", "up to several background push notifications per
/// hour across all apps on a device". A pure value: time comes in.
///
/// The period starts at the device's own time of day (`phase`), so that a fleet does not reset in step.
/// The device's other apps — the ones the gateway does not serve — draw from the same budget: the device
/// says how many wakes a day (`othersPerDay`), and they are taken evenly over the period.
public struct DeviceDailyBudget: Sendable, Equatable {
    /// Start of the current 24-hour period (ms since the epoch); nil before the first use.
    private var periodStart: Int64?
    /// Wakes the gateway's apps had this period.
    private var used: Int32 = 0
    /// Background wakes a day the device's other apps draw from the same budget.
    public var othersPerDay: Float = 0

    public static let periodMilliseconds: Int64 = 86_400_000

    public init() {}

    /// The device's reset time, as milliseconds after midnight UTC: spread over the day by the slot.
    public static func phase(of device: DeviceSlot) -> Int64 {
        Int64(truncatingIfNeeded: (device &* 0x9E37_79B9_7F4A_7C15) >> 17) % periodMilliseconds
    }

    /// Wakes left at `now` out of `capacity` (after the other apps' share so far).
    public func left(capacity: Int, device: DeviceSlot, now: UnixTime) -> Int {
        let (start, used) = period(at: now.milliseconds, device: device)
        guard othersPerDay > 0 else { return max(0, capacity - Int(used)) }
        let others = Int(Double(othersPerDay) * Double(now.milliseconds - start) / Double(Self.periodMilliseconds))
        return max(0, capacity - Int(used) - others)
    }

    /// `count` wakes were given at `now` (a negative count gives wakes back).
    public mutating func spend(_ count: Int, device: DeviceSlot, now: UnixTime) {
        let (start, used) = period(at: now.milliseconds, device: device)
        periodStart = start
        self.used = max(0, used + Int32(clamping: count))
    }

    /// When the budget is next full again.
    public func resetsAt(device: DeviceSlot, now: UnixTime) -> UnixTime {
        UnixTime(milliseconds: period(at: now.milliseconds, device: device).start + Self.periodMilliseconds)
    }

    /// The period `now` falls in, and the wakes used in it.
    private func period(at now: Int64, device: DeviceSlot) -> (start: Int64, used: Int32) {
        let day = Self.periodMilliseconds
        guard let start = periodStart else {
            // The last reset at the device's time of day, at or before now.
            let phase = Self.phase(of: device)
            return (now - (((now - phase) % day) + day) % day, 0)
        }
        guard now >= start + day else { return (start, used) }
        return (start + ((now - start) / day) * day, 0)
    }
}
