import PushModel
import Synchronization

/// A wall clock the test moves by hand (what the code under test reads as `now`).
public final class ManualClock: Sendable {
    private let value: Atomic<Int64>

    public init(_ start: UnixTime = UnixTime(seconds: 1_800_000_000)) { value = Atomic(start.milliseconds) }

    public var now: UnixTime { UnixTime(milliseconds: value.load(ordering: .relaxed)) }

    public func advance(seconds: Int64) { value.add(seconds * 1000, ordering: .relaxed) }
}
