/// A forecast's agenda: events ordered by (time, sequence), so that events due at the same millisecond
/// run in the order they were scheduled, on any machine. A binary heap of 24-byte entries; an entry
/// that no longer stands (a deadline moved) is skipped by its owner when it comes up, not searched for.
struct EventQueue {
    struct Entry {
        var time: Int64
        var sequence: UInt64
        /// The device (shard-local), or a shard-wide event's argument.
        var target: UInt32
        var kind: Kind
        /// A transfer's id, or a version's index.
        var argument: Int32
    }

    enum Kind: UInt8 {
        /// The iPhone's joint deadline (runtime and users).
        case deadline
        case keepAlive
        case transferEnd
        case publish
        /// The policy engine's timers (deadline misses, expiries).
        case policyTimer
    }

    private var heap: [Entry] = []
    private var sequence: UInt64 = 0

    var count: Int { heap.count }
    var isEmpty: Bool { heap.isEmpty }
    var peekTime: Int64? { heap.first?.time }

    mutating func schedule(at time: Int64, _ kind: Kind, target: UInt32, argument: Int32 = 0) {
        sequence += 1
        heap.append(Entry(time: time, sequence: sequence, target: target, kind: kind, argument: argument))
        siftUp(heap.count - 1)
    }

    mutating func pop() -> Entry? {
        guard !heap.isEmpty else { return nil }
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            siftDown(0)
        }
        return top
    }

    @inline(__always)
    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.time < b.time || (a.time == b.time && a.sequence < b.sequence)
    }

    private mutating func siftUp(_ index: Int) {
        var child = index
        let entry = heap[child]
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(entry, heap[parent]) else { break }
            heap[child] = heap[parent]
            child = parent
        }
        heap[child] = entry
    }

    private mutating func siftDown(_ index: Int) {
        var parent = index
        let entry = heap[parent]
        let count = heap.count
        while true {
            let left = 2 * parent + 1
            guard left < count else { break }
            let right = left + 1
            let child = right < count && Self.before(heap[right], heap[left]) ? right : left
            guard Self.before(heap[child], entry) else { break }
            heap[parent] = heap[child]
            parent = child
        }
        heap[parent] = entry
    }
}
