import PushModel

/// An app's transfers in id order. Ids only grow, so a new one is appended; an app has a handful at
/// most, so they are scanned: a dictionary hashed the id on every lookup, and every "which are in the
/// foreground" made a new dictionary and sorted its keys (a forecast asks on every suspension).
struct TransferList: Sendable {
    private(set) var items: [AppRuntime.Transfer] = []

    var isEmpty: Bool { items.isEmpty }

    /// The ids, in order.
    var ids: LazyMapSequence<[AppRuntime.Transfer], Int> { items.lazy.map(\.request.id) }

    private func index(of id: Int) -> Int? {
        for index in items.indices where items[index].request.id == id { return index }
        return nil
    }

    func contains(_ id: Int) -> Bool { index(of: id) != nil }

    /// The transfer `id`, or nil; setting nil removes it, setting a new one files it in id order.
    subscript(id: Int) -> AppRuntime.Transfer? {
        get { index(of: id).map { items[$0] } }
        set {
            if let at = index(of: id) {
                if let newValue { items[at] = newValue } else { items.remove(at: at) }
            } else if let newValue {
                let at = items.firstIndex { $0.request.id > id } ?? items.endIndex
                items.insert(newValue, at: at)
            }
        }
    }

    @discardableResult
    mutating func removeValue(forKey id: Int) -> AppRuntime.Transfer? {
        guard let at = index(of: id) else { return nil }
        return items.remove(at: at)
    }

    /// Takes out the transfers `predicate` picks, in id order, handing each id to `removed`.
    mutating func remove(where predicate: (AppRuntime.Transfer) -> Bool, _ removed: (Int) -> Void) {
        var index = 0
        while index < items.count {
            if predicate(items[index]) {
                removed(items.remove(at: index).request.id)
            } else {
                index += 1
            }
        }
    }

    /// The first transfer in id order due to start by `now` (a discretionary one), marked started.
    mutating func takeDue(by now: UnixTime) -> TransferRequest? {
        for index in items.indices {
            guard let at = items[index].startsAt, at <= now else { continue }
            items[index].startsAt = nil
            return items[index].request
        }
        return nil
    }
}
