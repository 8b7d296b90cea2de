/// Which broadcast a message is: its channel, and its sequence on that channel — the microsecond it was
/// accepted, made to grow on each node (`BroadcastSequencer`). A subscription's cursor is the highest
/// sequence its device acknowledged; the newest message past it is what a device that comes back gets.
/// Two nodes broadcasting on one channel in the same microsecond order by chance, as APNs may reorder a
/// channel's notifications.
public struct BroadcastStamp: Hashable, Sendable {
    public var channel: ChannelID
    public var sequence: Int64

    public init(channel: ChannelID, sequence: Int64) {
        self.channel = channel
        self.sequence = sequence
    }
}

/// Hands out broadcast sequences that only grow on this node, close to the wall clock's microseconds.
public struct BroadcastSequencer: Sendable {
    private var last: Int64 = 0

    public init() {}

    public mutating func next(at now: UnixTime) -> Int64 {
        last = max(last + 1, now.milliseconds * 1000)
        return last
    }
}
