import NIOHTTP2

/// A connection's open request streams by id, for `ProviderConnectionHandler`: an open-addressing table
/// (linear probing, deletion by backward shift) instead of a `Dictionary`, whose SipHash of the id — a
/// stream is looked up four times a request: its start, its DATA, its end, its answer — cost ~1.5 % of the
/// front door's samples.
///
/// The slot is multiply-shift hashing of the id with a random odd multiplier of the table's own (a
/// universal family: two ids share a slot with probability at most 2 / capacity, whatever ids the client
/// chose), so a client cannot pick stream ids that pile up in one run of slots. Stream 0 is never a
/// request's, and marks an empty slot.
struct StreamTable<State: AnyObject> {
    private var ids: [Int32]
    private var states: [State?]
    private var multiplier: UInt64
    /// 64 − log2(capacity): the multiplied id's top bits are its slot.
    private var shift: UInt64
    private(set) var count = 0

    init() {
        let capacity = 16
        ids = Array(repeating: 0, count: capacity)
        states = Array(repeating: nil, count: capacity)
        multiplier = UInt64.random(in: 1...UInt64.max) | 1
        shift = UInt64(64 - capacity.trailingZeroBitCount)
    }

    var isEmpty: Bool { count == 0 }

    private var mask: Int { ids.count - 1 }

    private func home(_ id: Int32) -> Int {
        Int(truncatingIfNeeded: (UInt64(UInt32(bitPattern: id)) &* multiplier) >> shift)
    }

    /// The slot holding `id`, or nil.
    private func index(of id: Int32) -> Int? {
        var slot = home(id)
        while true {
            let held = ids[slot]
            if held == id { return slot }
            if held == 0 { return nil }
            slot = (slot &+ 1) & mask
        }
    }

    /// The stream's state (a class: change it in place).
    subscript(id: HTTP2StreamID) -> State? {
        let key = Int32(Int(id))
        guard count > 0, key != 0, let slot = index(of: key) else { return nil }
        return states[slot]
    }

    /// A stream that starts (or its state replaced).
    mutating func insert(_ state: State, for id: HTTP2StreamID) {
        let key = Int32(Int(id))
        precondition(key != 0, "stream 0 is the connection's")
        if (count + 1) * 4 > ids.count * 3 { grow() }
        var slot = home(key)
        while ids[slot] != 0 && ids[slot] != key { slot = (slot &+ 1) & mask }
        if ids[slot] == 0 { count += 1 }
        ids[slot] = key
        states[slot] = state
    }

    @discardableResult
    mutating func removeValue(forKey id: HTTP2StreamID) -> State? {
        let key = Int32(Int(id))
        guard count > 0, key != 0, var hole = index(of: key) else { return nil }
        let removed = states[hole]
        // Backward shift: each entry after the hole, up to the next empty slot, moves into it unless its home
        // lies (cyclically) after the hole and at or before the entry — then a lookup still finds it in place.
        var next = (hole &+ 1) & mask
        while ids[next] != 0 {
            let homeSlot = home(ids[next])
            let staysPut = hole <= next ? (hole < homeSlot && homeSlot <= next) : (hole < homeSlot || homeSlot <= next)
            if !staysPut {
                ids[hole] = ids[next]
                states[hole] = states[next]
                hole = next
            }
            next = (next &+ 1) & mask
        }
        ids[hole] = 0
        states[hole] = nil
        count -= 1
        return removed
    }

    mutating func removeAll() {
        self = StreamTable()
    }

    private mutating func grow() {
        let oldIDs = ids
        let oldStates = states
        ids = Array(repeating: 0, count: oldIDs.count * 2)
        states = Array(repeating: nil, count: oldIDs.count * 2)
        shift -= 1
        count = 0
        for (slot, id) in oldIDs.enumerated() where id != 0 {
            insert(oldStates[slot]!, for: HTTP2StreamID(Int(id)))
        }
    }
}
