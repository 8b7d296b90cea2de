/// The device's most frequent messages, read and written without JSON's coders: `ack` (every delivery)
/// and, for every background wake, `complete` or `not_woken`. A profile of a broadcast to 10,000 devices
/// put `JSONDecoder` at 12 % of the gateway's CPU, nearly all of it for acks, and the ack's encoding at
/// about 10 % of a simulator's (Benchmarks/README.md, "Broadcast fan-out"); a silent push to 15,000
/// devices put the completions' decoding at about 7 % of a node's (Benchmarks/HISTORY.md).
///
/// Only the exact form the encoder writes takes this path: an object of string fields in sorted key
/// order, no white space, each value short and plain (letters, digits, `-`, `.`, `_`: ids, bundle ids,
/// results, reasons). Anything else (another client's spacing or key order, escapes, other types) goes
/// through the coders as before, to the same result or the same error.
enum PlainMessage {
    static let maximumValueBytes = 255

    /// `{"k":"v",…}` for fields in sorted key order, each value plain; nil when one is not.
    static func encode(_ fields: [(key: StaticString, value: String)]) -> [UInt8]? {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(16 + fields.reduce(0) { $0 + $1.key.utf8CodeUnitCount + $1.value.utf8.count + 6 })
        for (index, field) in fields.enumerated() {
            let value = field.value.utf8
            guard value.count <= maximumValueBytes, value.allSatisfy(isPlain) else { return nil }
            if index > 0 { out.append(UInt8(ascii: ",")) }
            out.append(UInt8(ascii: "\""))
            field.key.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":"), UInt8(ascii: "\"")])
            out.append(contentsOf: value)
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The message's fields (key, value) in order, if it is an object of plain string fields as
    /// `encode` writes it; nil otherwise.
    static func fields(_ bytes: some Collection<UInt8>) -> [(key: String, value: String)]? {
        bytes.withContiguousStorageIfAvailable(fields(in:)) ?? nil
    }

    private static func fields(in buffer: UnsafeBufferPointer<UInt8>) -> [(key: String, value: String)]? {
        var fields: [(key: String, value: String)] = []
        var index = 0
        func take(_ byte: UInt8) -> Bool {
            guard index < buffer.count, buffer[index] == byte else { return false }
            index += 1
            return true
        }
        /// A quoted plain string: its bytes, without the quotes.
        func plain() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < buffer.count, isPlain(buffer[index]) { index += 1 }
            guard index - start <= maximumValueBytes, take(UInt8(ascii: "\"")) else { return nil }
            return String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<(index - 1)]), as: UTF8.self)
        }
        guard take(UInt8(ascii: "{")) else { return nil }
        repeat {
            guard fields.count < 8, let key = plain(), take(UInt8(ascii: ":")), let value = plain() else { return nil }
            if let last = fields.last, last.key >= key { return nil }
            fields.append((key, value))
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")), index == buffer.count else { return nil }
        return fields
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
            return true
        default: return false
        }
    }
}
