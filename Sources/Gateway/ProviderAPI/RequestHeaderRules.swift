/// RFC 9113's rules for a request's header block (§8.1.1, §8.2, §8.3), checked in the handler's one pass
/// over the block it already walks: a request that breaks one is malformed, and the stream (only that
/// stream) is reset with PROTOCOL_ERROR before any APNs rule sees it. NIO's own validation does the same
/// but cost ~15 % of the request path; this adds a byte scan of each name and a few comparisons.
public struct RequestHeaderRules {
    /// Why the request is malformed (nil: it is not, so far).
    public private(set) var malformed: String?
    /// The declared `content-length`, to compare with the DATA received.
    public private(set) var contentLength: Int?
    private var regularSeen = false
    private var method = false
    private var scheme = false
    private var path = false
    private var authority = false

    public init() {}

    public mutating func read(_ name: String, _ value: String) {
        guard malformed == nil else { return }
        let bytes = name.utf8
        guard let first = bytes.first else { return fail("an empty header name") }
        // §8.2.1: no 0x00–0x20, upper case or 0x7f–0xff in a name (the decoder turns bytes that are no
        // UTF-8 into U+FFFD, which is 0xef… here); the value has no NUL, CR or LF, and no white space at
        // either end.
        if let byte = Self.firstNotAllowedInName(bytes, skipping: first == UInt8(ascii: ":") ? 1 : 0) {
            return fail(
                byte &- UInt8(ascii: "A") < 26
                    ? "an upper-case header name (\(name))" : "a header name with a character names may not have")
        }
        if let problem = Self.valueProblem(value) { return fail("\(problem) in the value of \(name)") }
        if first == UInt8(ascii: ":") {
            if regularSeen { return fail("a pseudo-header after a regular header (\(name))") }
            switch name {
            case ":method": method = pseudo(method, name, value)
            case ":scheme": scheme = pseudo(scheme, name, value)
            case ":path": path = pseudo(path, name, value)
            case ":authority":
                if authority { return fail("a repeated :authority") }
                authority = true
            default: fail("a pseudo-header requests do not have (\(name))")
            }
            return
        }
        regularSeen = true
        switch bytes.count {
        case 2 where name == "te":
            if value != "trailers" { fail("te other than trailers") }
        case 7 where name == "upgrade", 10 where name == "connection" || name == "keep-alive",
            16 where name == "proxy-connection", 17 where name == "transfer-encoding":
            fail("a connection-specific header (\(name))")
        case 14 where name == "content-length":
            guard let length = Int(value), length >= 0, value.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else {
                return fail("a content-length that is not a number")
            }
            if let contentLength, contentLength != length { return fail("two different content-lengths") }
            contentLength = length
        default:
            break
        }
    }

    @inline(__always)
    static func allowedInName(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7f && byte &- UInt8(ascii: "A") >= 26
    }

    static func firstNotAllowedInName(_ name: String.UTF8View, skipping: Int) -> UInt8? {
        func scan(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt8? {
            for byte in bytes.dropFirst(skipping) where !allowedInName(byte) { return byte }
            return nil
        }
        if let found = name.withContiguousStorageIfAvailable(scan) { return found }
        return Array(name).withUnsafeBufferPointer(scan)
    }

    static func valueProblem(_ value: String) -> String? {
        // Values from NIO's decoder are native strings: one pass over their contiguous bytes (a profile
        // put the generic UTF8View loop at ~4 % of the request path, for the JWT's ~250 bytes).
        if let problem = value.utf8.withContiguousStorageIfAvailable(valueProblem) { return problem }
        return Array(value.utf8).withUnsafeBufferPointer(valueProblem)
    }

    private static func valueProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let first = bytes.first, let last = bytes.last else { return nil }
        if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 { return "white space at an end" }
        // NUL, LF and CR are all below 0x0e: one comparison rules out almost every byte.
        for byte in bytes where byte < 0x0e && (byte == 0 || byte == 0x0a || byte == 0x0d) { return "NUL, CR or LF" }
        return nil
    }

    /// After the last header: the pseudo-headers every request has.
    public mutating func finish() {
        guard malformed == nil else { return }
        if !method { return fail("no :method") }
        if !scheme { return fail("no :scheme") }
        if !path { return fail("no :path") }
    }

    /// A pseudo-header that must appear once with a value: whether it has been seen now.
    private mutating func pseudo(_ seen: Bool, _ name: String, _ value: String) -> Bool {
        if seen {
            fail("a repeated \(name)")
        } else if value.isEmpty {
            fail("an empty \(name)")
        }
        return true
    }

    private mutating func fail(_ reason: String) { malformed = reason }
}
