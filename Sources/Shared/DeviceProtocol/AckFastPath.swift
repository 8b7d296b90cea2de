/// The device protocol's most frequent message, read and written without JSON's coders: every delivery
/// is acknowledged, and a profile of a broadcast to 10,000 devices put `JSONDecoder` at 12 % of the
/// gateway's CPU, nearly all of it for acks, and the ack's encoding at about 10 % of a simulator's
/// (Benchmarks/README.md, "Broadcast fan-out"). Only the exact bytes the encoder writes
/// (`{"apns_id":"…","type":"ack"}`, sorted keys, no white space) with an id of letters, digits and
/// hyphens take this path; anything else (another client's spacing or key order, escapes) goes through
/// the coders as before, to the same result.
enum AckFastPath {
    private static let prefix = Array(#"{"apns_id":""#.utf8)
    private static let suffix = Array(#"","type":"ack"}"#.utf8)

    /// The ack's bytes, as the encoder writes them; nil for an id that is not letters, digits and hyphens.
    static func encode(_ id: String) -> [UInt8]? {
        guard id.utf8.count <= 64, id.utf8.allSatisfy(isIDByte) else { return nil }
        return prefix + Array(id.utf8) + suffix
    }

    private static func isIDByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"):
            return true
        default: return false
        }
    }

    static func apnsID(_ bytes: some Collection<UInt8>) -> String? {
        let count = bytes.count
        guard count > prefix.count + suffix.count, count <= prefix.count + suffix.count + 64 else { return nil }
        return bytes.withContiguousStorageIfAvailable { buffer -> String? in
            guard buffer.starts(with: prefix), buffer.suffix(suffix.count).elementsEqual(suffix) else { return nil }
            let id = buffer[prefix.count..<(count - suffix.count)]
            guard id.allSatisfy(isIDByte) else { return nil }
            return String(decoding: id, as: UTF8.self)
        } ?? nil
    }
}
