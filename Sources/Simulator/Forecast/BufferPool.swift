/// Arrays lent empty and taken back with their capacity, so that a forecast makes no array per event.
/// Calls nest (a delivery's actions lead to more decisions, and those to more deliveries), so a pool of
/// them rather than one buffer.
struct BufferPool<Element> {
    private var spare: [[Element]] = []

    mutating func take() -> [Element] { spare.popLast() ?? [] }

    mutating func give(_ buffer: consuming [Element]) {
        var buffer = buffer
        buffer.removeAll(keepingCapacity: true)
        spare.append(buffer)
    }
}
