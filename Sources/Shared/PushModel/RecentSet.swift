/// The elements inserted most recently, to recognise one seen again (bounded: the oldest are forgotten
/// first). The device agent uses it for apns-ids delivered twice; a gateway node for notifications it
/// has already run through its policy.
public struct RecentSet<Element: Hashable & Sendable>: Sendable {
    public let capacity: Int
    private var set: Set<Element> = []
    private var order: [Element] = []
    private var next = 0

    public init(capacity: Int) { self.capacity = max(1, capacity) }

    /// False when the element was seen recently.
    public mutating func insert(_ element: Element) -> Bool {
        guard set.insert(element).inserted else { return false }
        if order.count < capacity {
            order.append(element)
        } else {
            set.remove(order[next])
            order[next] = element
            next = (next + 1) % capacity
        }
        return true
    }

    /// Forgets `element` (to be taken as new when it comes again). Its place in the order stays until it is
    /// reused, so an element removed and inserted again may be forgotten sooner than the capacity says.
    public mutating func remove(_ element: Element) {
        set.remove(element)
    }
}
