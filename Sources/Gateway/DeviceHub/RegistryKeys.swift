import PushModel

/// A device token as the registry keeps it, for each device of the fleet on every node: an APNs token
/// (32 bytes, 64 hex digits) as four words inline — its hex string would be a 112-byte allocation a
/// token — and a token of any other length as its text.
enum TokenKey: Hashable {
    case bytes32(UInt64, UInt64, UInt64, UInt64)
    case text(String)

    init(_ token: DeviceToken) {
        var hex = token.hex
        let words = hex.withUTF8 { bytes -> (UInt64, UInt64, UInt64, UInt64)? in
            guard bytes.count == 64 else { return nil }
            func word(_ at: Int) -> UInt64 {
                var word: UInt64 = 0
                for byte in bytes[at..<at + 16] {
                    word = word << 4 | UInt64(byte <= UInt8(ascii: "9") ? byte &- UInt8(ascii: "0") : byte &- 87)
                }
                return word
            }
            return (word(0), word(16), word(32), word(48))
        }
        // `DeviceToken` holds lower-case hex digits only, so the words give back the same text.
        if let words { self = .bytes32(words.0, words.1, words.2, words.3) } else { self = .text(token.hex) }
    }

    var token: DeviceToken {
        switch self {
        case .text(let hex): return DeviceToken(hex, lengths: 2...4096)!
        case .bytes32(let a, let b, let c, let d):
            let hex = String(unsafeUninitializedCapacity: 64) { out in
                let digits: StaticString = "0123456789abcdef"
                for (index, word) in [a, b, c, d].enumerated() {
                    for nibble in 0..<16 {
                        out[index * 16 + nibble] = digits.utf8Start[Int((word >> UInt64(60 - nibble * 4)) & 0xF)]
                    }
                }
                return 64
            }
            return DeviceToken(hex)!
        }
    }
}

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
