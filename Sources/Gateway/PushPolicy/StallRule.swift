import PushModel

/// What one stall check found: the devices to close, how many had stalled, and whether that was too
/// many at once to blame the devices.
public struct StallCheck: Equatable, Sendable {
    public var close: [DeviceSlot]
    public var stalled: Int
    public var massStall: Bool
}

/// When devices that stopped acknowledging are the devices' fault. One device silent for the timeout
/// has stopped reading; a twentieth of a node's devices at once (and at least 50) have not — they are
/// waiting on the gateway, its machine or the network, and a gateway that closed them all would turn
/// its own congestion into a reconnection storm (measured: `Benchmarks/fleet.sh` at 100,000 devices on
/// 2 cores, tens of thousands closed and reconnecting after a node's loss, the fleet never caught up).
public enum StallRule {
    /// At least this many stalled devices…
    public static let massStallMinimum = 50
    /// …and at least this share of the connected ones, make a mass stall.
    public static let massStallFraction = 0.05
    /// In a mass stall only devices silent this many times the timeout are closed.
    public static let massStallFactor: Int64 = 4

    public static func isMassStall(stalled: Int, connected: Int) -> Bool {
        stalled >= massStallMinimum && Double(stalled) >= Double(connected) * massStallFraction
    }
}
