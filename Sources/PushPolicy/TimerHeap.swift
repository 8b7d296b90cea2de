/// A binary min-heap of (time, key) with lazy deletion: an entry whose key no longer has that deadline
/// is skipped when it comes up, so rescheduling is a push, never a search.
struct TimerHeap<Key: Hashable & Sendable>: Sendable {
    private var entries: [(at: Int64, key: Key)] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var earliest: Int64? { entries.first?.at }

    mutating func push(_ at: Int64, _ key: Key) {
        entries.append((at, key))
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].at < entries[parent].at else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the earliest entry if it is due at `now`.
    mutating func popDue(_ now: Int64) -> (at: Int64, key: Key)? {
        guard let first = entries.first, first.at <= now else { return nil }
        let last = entries.removeLast()
        if !entries.isEmpty {
            entries[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < entries.count, entries[left].at < entries[smallest].at { smallest = left }
                if right < entries.count, entries[right].at < entries[smallest].at { smallest = right }
                guard smallest != parent else { break }
                entries.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
