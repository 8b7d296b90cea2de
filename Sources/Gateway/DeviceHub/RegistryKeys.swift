import PushModel

/// A device id as the registry keeps it: the ids this gateway makes are lower-case UUIDs, kept as their
/// 128 bits — the text would be an 80-byte allocation a device; any other id as its text.
enum DeviceKey: Hashable {
    case uuid(UInt64, UInt64)
    case text(String)

    init(_ id: String) {
        // Lower case only, so that the bits give back the same text (ids are compared as text).
        if let uuid = APNsID(header: id), Self.uuid(uuid.high, uuid.low).id == id {
            self = .uuid(uuid.high, uuid.low)
        } else {
            self = .text(id)
        }
    }

    var id: String {
        switch self {
        case .uuid(let high, let low): return APNsID(high: high, low: low).value
        case .text(let id): return id
        }
    }
}

/// A key with a common form that is plain bits, which `CompactMap` keys that form by.
protocol CompactKey: Hashable {
    associatedtype Bits: Hashable
    /// The key's bits when it has the common form; nil otherwise.
    var bits: Bits? { get }
}

extension DeviceKey: CompactKey {
    struct UUIDBits: Hashable {
        var high, low: UInt64
    }

    var bits: UUIDBits? {
        guard case .uuid(let high, let low) = self else { return nil }
        return UUIDBits(high: high, low: low)
    }
}

extension DeviceToken: CompactKey {
    var bits: Words? { words }
}

/// A dictionary that keeps keys of the common form (a UUID device id, a 32-byte token) by their bits
/// alone, and the others by themselves beside them. Every node keeps an entry for every device of the
/// fleet in two of these (docs/store.md, "Memory"), and a dictionary's buckets hold a key each whether
/// used or not (up to 2.7 a key, its capacity a power of two kept under three quarters full): 16 and 32
/// bytes a key instead of the 24 and 40 of an enum of both forms (its tag, and the padding after it).
struct CompactMap<Key: CompactKey, Value> {
    private var common: [Key.Bits: Value] = [:]
    private var other: [Key: Value] = [:]

    subscript(key: Key) -> Value? {
        get {
            guard let bits = key.bits else { return other[key] }
            return common[bits]
        }
        set {
            if let bits = key.bits { common[bits] = newValue } else { other[key] = newValue }
        }
    }

    var count: Int { common.count + other.count }

    /// Room for that many keys of the common form.
    mutating func reserveCapacity(_ count: Int) { common.reserveCapacity(count) }
}
