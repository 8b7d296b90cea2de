import PushModel
import Synchronization

/// What each device fetched from the content server and when (the last `capacity` requests).
public final class FetchLog: Sendable {
    public struct Entry: Sendable, Equatable, Codable {
        public var at: Int64
        /// From the request's `x-device-id` header; "" when it had none.
        public var device: String
        public var path: String
        public var status: Int
        /// Body bytes sent.
        public var bytes: Int
    }

    private struct Ring {
        var entries: [Entry] = []
        /// Where the oldest entry is once the ring is full.
        var start = 0
        /// Requests that arrived and are not logged yet (their answer is still going, or was cut short
        /// and the server has not noticed yet).
        var open = 0
    }

    private let capacity: Int
    private let ring = Mutex(Ring())

    public init(capacity: Int = 100_000) { self.capacity = max(1, capacity) }

    /// A request arrived (it is logged when its answer ends, whole or cut short).
    func began() { ring.withLock { $0.open += 1 } }

    /// Requests that arrived whose answer has not ended yet.
    public var inFlight: Int { ring.withLock { $0.open } }

    func record(_ entry: Entry) {
        ring.withLock { ring in
            ring.open = max(0, ring.open - 1)
            if ring.entries.count < capacity {
                ring.entries.append(entry)
            } else {
                ring.entries[ring.start] = entry
                ring.start = (ring.start + 1) % capacity
            }
        }
    }

    /// Oldest first.
    public var all: [Entry] {
        ring.withLock { ring in Array(ring.entries[ring.start...] + ring.entries[..<ring.start]) }
    }
}
