/// Timers for a fleet: keys filed by the second their deadline falls in, and a small heap of the
/// seconds that have any. Filing a timer is O(1) whatever the fleet's size (a heap of every timer cost
/// a cache miss per level with millions of them); the exact time is checked by the caller, which files
/// the key again if it is not due yet.
struct TimerWheel<Key: Hashable & Sendable>: Sendable {
    private var buckets: [Int64: [Key]] = [:]
    private var seconds = MinHeap()
    static var bucketMilliseconds: Int64 { 1000 }

    /// The start of the earliest second that has a timer (the caller checks exact deadlines).
    var earliest: Int64? { seconds.minimum.map { $0 * Self.bucketMilliseconds } }

    mutating func schedule(_ at: Int64, _ key: Key) {
        let second = Self.bucket(at)
        if buckets[second]?.append(key) == nil {
            buckets[second] = [key]
            seconds.push(second)
        }
    }

    /// Moves the keys filed in seconds up to and including the one `now` falls in to `due`.
    mutating func takeDue(_ now: Int64, into due: inout [Key]) {
        let limit = Self.bucket(now)
        while let second = seconds.minimum, second <= limit {
            seconds.popMinimum()
            if let keys = buckets.removeValue(forKey: second) { due.append(contentsOf: keys) }
        }
    }

    private static func bucket(_ at: Int64) -> Int64 {
        at >= 0 ? at / bucketMilliseconds : (at - bucketMilliseconds + 1) / bucketMilliseconds
    }
}

/// A binary min-heap of Int64.
struct MinHeap: Sendable {
    private var items: [Int64] = []

    var minimum: Int64? { items.first }

    mutating func push(_ value: Int64) {
        items.append(value)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    mutating func popMinimum() {
        guard !items.isEmpty else { return }
        let last = items.removeLast()
        guard !items.isEmpty else { return }
        items[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left] < items[smallest] { smallest = left }
            if right < items.count, items[right] < items[smallest] { smallest = right }
            guard smallest != parent else { break }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
