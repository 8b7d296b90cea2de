/// The device protocol's most frequent message, read without the JSON decoder: every delivery is
/// acknowledged, and a profile of a broadcast to 10,000 devices put `JSONDecoder` at 12 % of the
/// gateway's CPU, nearly all of it for acks (Benchmarks/README.md, "Broadcast fan-out"). Only the exact
/// bytes this package's encoder writes (`{"apns_id":"…","type":"ack"}`, sorted keys, no white space) with
/// an id of letters, digits and hyphens take this path; anything else (another client's spacing or key
/// order, escapes) goes through the decoder as before, to the same result.
enum AckFastPath {
    private static let prefix = Array(#"{"apns_id":""#.utf8)
    private static let suffix = Array(#"","type":"ack"}"#.utf8)

    static func apnsID(_ bytes: some Collection<UInt8>) -> String? {
        let count = bytes.count
        guard count > prefix.count + suffix.count, count <= prefix.count + suffix.count + 64 else { return nil }
        return bytes.withContiguousStorageIfAvailable { buffer -> String? in
            guard buffer.starts(with: prefix), buffer.suffix(suffix.count).elementsEqual(suffix) else { return nil }
            let id = buffer[prefix.count..<(count - suffix.count)]
            for byte in id {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"):
                    continue
                default: return nil
                }
            }
            return String(decoding: id, as: UTF8.self)
        } ?? nil
    }
}
