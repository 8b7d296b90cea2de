/// An app on a simulated iPhone: its place among the device's apps, in installation order (0 is the
/// first). The runtime's events and actions name apps by it, so that they hold no string: a forecast
/// handles tens of millions of them, and a bundle id of 16 bytes or more is a heap string whose every
/// copy counts references. `DeviceRuntime.bundleID(of:)` and `slot(of:)` translate at the edges (the
/// device protocol, the policy).
public struct AppSlot: Hashable, Sendable, Comparable, ExpressibleByIntegerLiteral, CustomStringConvertible {
    public let index: UInt8

    public init(_ index: Int) { self.index = UInt8(index) }

    public init(integerLiteral value: UInt8) { index = value }

    public static func < (lhs: AppSlot, rhs: AppSlot) -> Bool { lhs.index < rhs.index }

    public var description: String { "app \(index)" }
}
