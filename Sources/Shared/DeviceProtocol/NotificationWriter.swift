/// The `notification` message, the one the gateway writes for every push to every device, written
/// without `JSONEncoder`: in a profile of an alert to 15,000 devices on one node (`Benchmarks/fleet.sh
/// 15000 1 5`, `FLEET_PERF`), the encoder was about 15 % of the node's CPU (Benchmarks/HISTORY.md).
/// The bytes are the encoder's, in its form: sorted keys, no white space, absent optionals left out,
/// strings escaped as JSON asks (`"`, `\` and control characters; a slash as is, as
/// `.withoutEscapingSlashes` writes it). So a reader sees no difference, the devices' fast path
/// (`NotificationEnvelope`) included.
enum NotificationWriter {
    static func encode(_ delivery: Delivery) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(224 + delivery.payload.utf8.count)
        out.append(contentsOf: #"{"notification":{"#.utf8)
        field(#""apns_id":"#, delivery.apnsID, into: &out)
        field(#","bundle_id":"#, delivery.bundleID, into: &out)
        field(#","channel":"#, delivery.channel, into: &out)
        field(#","collapse_id":"#, delivery.collapseID, into: &out)
        field(#","deadline_seconds":"#, delivery.deadlineSeconds, into: &out)
        field(#","kind":"#, delivery.kind, into: &out)
        field(#","payload":"#, delivery.payload, into: &out)
        field(#","priority":"#, delivery.priority, into: &out)
        field(#","push_type":"#, delivery.pushType, into: &out)
        field(#","rule":"#, delivery.rule, into: &out)
        field(#","token":"#, delivery.token, into: &out)
        field(#","topic":"#, delivery.topic, into: &out)
        out.append(contentsOf: #"},"type":"notification"}"#.utf8)
        return out
    }

    /// A string field (its key with the comma before it and the colon after), left out when absent.
    private static func field(_ key: StaticString, _ value: String?, into out: inout [UInt8]) {
        guard let value else { return }
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        string(value, into: &out)
    }

    /// A number field, left out when absent.
    private static func field(_ key: StaticString, _ value: Int?, into out: inout [UInt8]) {
        guard let value else { return }
        key.withUTF8Buffer { out.append(contentsOf: $0) }
        out.append(contentsOf: String(value).utf8)
    }

    /// A JSON string: quoted, with `"`, `\` and the control characters escaped (the short forms where
    /// JSON has them, else `\u00XX`); every other byte of the UTF-8 as it is.
    static func string(_ value: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { bytes in
            var start = 0
            for (index, byte) in bytes.enumerated() where byte < 0x20 || byte == quote || byte == backslash {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
                start = index + 1
                out.append(backslash)
                switch byte {
                case quote, backslash: out.append(byte)
                case 0x08: out.append(UInt8(ascii: "b"))
                case 0x0C: out.append(UInt8(ascii: "f"))
                case 0x0A: out.append(UInt8(ascii: "n"))
                case 0x0D: out.append(UInt8(ascii: "r"))
                case 0x09: out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    out.append(hex[Int(byte >> 4)])
                    out.append(hex[Int(byte & 0x0F)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let quote = UInt8(ascii: "\"")
    private static let backslash = UInt8(ascii: "\\")
    private static let hex = Array("0123456789abcdef".utf8)
}
