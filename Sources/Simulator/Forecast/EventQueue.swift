/// A forecast's agenda: events ordered by (time, sequence), so that events due at the same millisecond
/// run in the order they were scheduled, on any machine. Two binary heaps: the devices' standing
/// deadlines, one entry per device moved in place when its deadline moves (`setDeadline`: no stale
/// entry is ever popped — a day of 2,000 iPhones filed 566,000 entries that had moved by the time they
/// came up, 23 % of everything popped), and everything else, 24-byte entries; `pop` takes the earlier
/// of the two tops. A keep-alive or transfer entry that no longer stands is skipped by its owner when it
/// comes up.
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
        /// A device connects for the first time (its runtime starts).
        case connect
        /// A publication's pushes for one device reach the gateway (a fan-out spread over time).
        case announce
    }

    private var others = EntryHeap(tracked: false)
    private var deadlines = EntryHeap(tracked: true)
    private var sequence: UInt64 = 0

    var count: Int { others.count + deadlines.count }
    var isEmpty: Bool { count == 0 }

    /// Device `device`'s deadline is now `time` (nil: it has none): its one entry moves there, ordered
    /// after everything scheduled before this call at the same millisecond.
    mutating func setDeadline(_ device: UInt32, at time: Int64?) {
        guard let time else { return deadlines.remove(device) }
        sequence += 1
        deadlines.set(Entry(time: time, sequence: sequence, target: device, kind: .deadline, argument: 0))
    }

    mutating func schedule(at time: Int64, _ kind: Kind, target: UInt32, argument: Int32 = 0) {
        sequence += 1
        others.push(Entry(time: time, sequence: sequence, target: target, kind: kind, argument: argument))
    }

    mutating func pop() -> Entry? {
        if let deadline = deadlines.top, others.top.map({ Self.before(deadline, $0) }) ?? true {
            deadlines.remove(deadline.target)
            return deadline
        }
        return others.popTop()
    }

    @inline(__always)
    fileprivate static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.time < b.time || (a.time == b.time && a.sequence < b.sequence)
    }
}

/// A binary heap of entries in (time, sequence) order. `tracked`: at most one entry per target, whose
/// index is kept so that it can be moved (`set`) or taken out (`remove`) where it is.
private struct EntryHeap {
    private var heap: [EventQueue.Entry] = []
    /// With `tracked`, each target's index in `heap` (-1: none).
    private var position: [Int32] = []
    let tracked: Bool

    init(tracked: Bool) { self.tracked = tracked }

    var count: Int { heap.count }
    var top: EventQueue.Entry? { heap.first }

    mutating func push(_ entry: EventQueue.Entry) {
        heap.append(entry)
        siftUp(heap.count - 1)
    }

    mutating func popTop() -> EventQueue.Entry? {
        guard let top = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            place(last, at: 0)
            siftDown(0)
        }
        return top
    }

    /// Tracked: `entry` replaces its target's entry, or is added.
    mutating func set(_ entry: EventQueue.Entry) {
        let slot = Int(entry.target)
        if slot >= position.count { position += Array(repeating: -1, count: slot + 1 - position.count) }
        let at = Int(position[slot])
        guard at >= 0 else { return push(entry) }
        let earlier = EventQueue.before(entry, heap[at])
        place(entry, at: at)
        if earlier { siftUp(at) } else { siftDown(at) }
    }

    /// Tracked: takes out `target`'s entry, if it has one.
    mutating func remove(_ target: UInt32) {
        let slot = Int(target)
        guard slot < position.count, position[slot] >= 0 else { return }
        let at = Int(position[slot])
        position[slot] = -1
        let last = heap.removeLast()
        guard at < heap.count else { return }
        let earlier = EventQueue.before(last, heap[at])
        place(last, at: at)
        if earlier { siftUp(at) } else { siftDown(at) }
    }

    @inline(__always)
    private mutating func place(_ entry: EventQueue.Entry, at index: Int) {
        heap[index] = entry
        if tracked { position[Int(entry.target)] = Int32(index) }
    }

    // The sifts work on the buffer (no bounds or uniqueness check per step: a forecast's profile had
    // them at 9 % of its time).
    private mutating func siftUp(_ index: Int) {
        let tracked = self.tracked
        position.withUnsafeMutableBufferPointer { position in
            heap.withUnsafeMutableBufferPointer { heap in
                var child = index
                let entry = heap[child]
                while child > 0 {
                    let parent = (child - 1) / 2
                    guard EventQueue.before(entry, heap[parent]) else { break }
                    heap[child] = heap[parent]
                    if tracked { position[Int(heap[child].target)] = Int32(child) }
                    child = parent
                }
                heap[child] = entry
                if tracked { position[Int(entry.target)] = Int32(child) }
            }
        }
    }

    private mutating func siftDown(_ index: Int) {
        let tracked = self.tracked
        position.withUnsafeMutableBufferPointer { position in
            heap.withUnsafeMutableBufferPointer { heap in
                var parent = index
                let entry = heap[parent]
                let count = heap.count
                while true {
                    let left = 2 * parent + 1
                    guard left < count else { break }
                    let right = left + 1
                    let child = right < count && EventQueue.before(heap[right], heap[left]) ? right : left
                    guard EventQueue.before(heap[child], entry) else { break }
                    heap[parent] = heap[child]
                    if tracked { position[Int(heap[parent].target)] = Int32(parent) }
                    parent = child
                }
                heap[parent] = entry
                if tracked { position[Int(entry.target)] = Int32(parent) }
            }
        }
    }
}
