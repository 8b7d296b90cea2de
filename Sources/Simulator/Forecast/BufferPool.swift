/// Arrays lent empty and taken back with their capacity, so that a forecast makes no array per event.
/// Calls nest (a delivery's actions lead to more decisions, and those to more deliveries), so a pool of
/// them rather than one buffer.
struct BufferPool<Element> {
    private var spare: [[Element]] = []

    mutating func take() -> [Element] { spare.popLast() ?? [] }

    /// Takes `buffer` back, emptied in place (it is the caller's only reference, so its storage is
    /// kept, not copied), and leaves the caller an empty array.
    mutating func give(_ buffer: inout [Element]) {
        buffer.removeAll(keepingCapacity: true)
        spare.append(buffer)
        buffer = []
    }
}
