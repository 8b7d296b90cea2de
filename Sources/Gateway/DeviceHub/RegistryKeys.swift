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
