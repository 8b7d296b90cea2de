import NIOCore
import PushModel
import Synchronization

/// How the last broadcasts fanned out, as `GET /v1/broadcasts` gives them: from the moment each was
/// stored (its 200) to the first, median, 99th-percentile and last acknowledgement, and how many
/// subscribers it was written to and acknowledged by. Kept for the last `capacity` broadcasts accepted
/// or heard of here.
public final class BroadcastFigures: Sendable {
    private struct Tracked {
        var fanout: BroadcastFanout
        var started: NIODeadline
        var offsets: [UInt32] = []
    }

    private let state = Mutex<[Tracked]>([])
    private let capacity: Int

    public init(capacity: Int = 32) { self.capacity = capacity }

    /// A broadcast is being fanned out from now.
    func started(_ stamp: BroadcastStamp, id: APNsID) {
        state.withLock { tracked in
            tracked.append(
                Tracked(
                    fanout: BroadcastFanout(
                        apnsID: id.value, channelID: stamp.channel.value, sequence: stamp.sequence, written: 0,
                        acknowledged: 0),
                    started: .now()))
            if tracked.count > capacity { tracked.removeFirst(tracked.count - capacity) }
        }
    }

    func wrote(_ count: Int, of stamp: BroadcastStamp, finished: Bool) {
        guard count > 0 || finished else { return }
        state.withLock { tracked in
            guard let index = tracked.lastIndex(where: { $0.fanout.sequence == stamp.sequence }) else { return }
            tracked[index].fanout.written += count
            if finished {
                tracked[index].fanout.fanoutMilliseconds = Self.milliseconds(since: tracked[index].started)
            }
        }
    }

    func acknowledged(_ stamp: BroadcastStamp) {
        let now = NIODeadline.now()
        state.withLock { tracked in
            guard let index = tracked.lastIndex(where: { $0.fanout.sequence == stamp.sequence }) else { return }
            let micros = max(0, (now - tracked[index].started).nanoseconds / 1000)
            tracked[index].offsets.append(UInt32(clamping: micros))
            tracked[index].fanout.acknowledged += 1
        }
    }

    /// The last broadcasts, oldest first.
    public var recent: [BroadcastFanout] {
        state.withLock { tracked in
            tracked.map { entry in
                var fanout = entry.fanout
                let sorted = entry.offsets.sorted()
                if let first = sorted.first, let last = sorted.last {
                    func at(_ fraction: Double) -> Double {
                        Double(sorted[min(sorted.count - 1, Int(Double(sorted.count - 1) * fraction))]) / 1000
                    }
                    fanout.firstMilliseconds = Double(first) / 1000
                    fanout.medianMilliseconds = at(0.5)
                    fanout.p99Milliseconds = at(0.99)
                    fanout.lastMilliseconds = Double(last) / 1000
                }
                return fanout
            }
        }
    }

    private static func milliseconds(since start: NIODeadline) -> Double {
        Double((NIODeadline.now() - start).nanoseconds) / 1_000_000
    }
}
