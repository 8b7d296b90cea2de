import PushModel

/// RFC 9113's rules for a request's header block (§8.1.1, §8.2, §8.3), checked in the handler's one pass
/// over the block it already walks: a request that breaks one is malformed, and the stream (only that
/// stream) is reset with PROTOCOL_ERROR before any APNs rule sees it. libnghttp2's copy of these rules is
/// off (docs/provider-api.md, "The codec"); this adds a byte scan of each name and a few comparisons.
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

    /// One field, over the bytes as received (no string made unless the request is malformed).
    public mutating func read(name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard malformed == nil else { return }
        guard let first = name.first else { return fail("an empty header name") }
        func text(_ bytes: UnsafeBufferPointer<UInt8>) -> String { String(decoding: bytes, as: UTF8.self) }
        // §8.2.1: no 0x00–0x20, upper case or 0x7f–0xff in a name; the value has no NUL, CR or LF, and no
        // white space at either end.
        if let byte = Self.firstNotAllowedInName(name, skipping: first == UInt8(ascii: ":") ? 1 : 0) {
            return fail(
                byte &- UInt8(ascii: "A") < 26
                    ? "an upper-case header name (\(text(name)))" : "a header name with a character names may not have")
        }
        if let problem = Self.valueProblem(value) { return fail("\(problem) in the value of \(text(name))") }
        if first == UInt8(ascii: ":") {
            if regularSeen { return fail("a pseudo-header after a regular header (\(text(name)))") }
            if name.equals(":method") {
                method = pseudo(method, name, value)
            } else if name.equals(":scheme") {
                scheme = pseudo(scheme, name, value)
            } else if name.equals(":path") {
                path = pseudo(path, name, value)
            } else if name.equals(":authority") {
                if authority { return fail("a repeated :authority") }
                authority = true
            } else {
                fail("a pseudo-header requests do not have (\(text(name)))")
            }
            return
        }
        regularSeen = true
        switch name.count {
        case 2 where name.equals("te"):
            if !value.equals("trailers") { fail("te other than trailers") }
        case 7 where name.equals("upgrade"), 10 where name.equals("connection") || name.equals("keep-alive"),
            16 where name.equals("proxy-connection"), 17 where name.equals("transfer-encoding"):
            fail("a connection-specific header (\(text(name)))")
        case 14 where name.equals("content-length"):
            guard let length = Self.decimal(value) else { return fail("a content-length that is not a number") }
            if let contentLength, contentLength != length { return fail("two different content-lengths") }
            contentLength = length
        default:
            break
        }
    }

    /// Digits only (no sign, no space) of a value that fits an Int, or nil: what `Int(text)` reads of them.
    static func decimal(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(Int(digit))
            guard !overflow, !carry else { return nil }
            value = sum
        }
        return value
    }

    @inline(__always)
    static func allowedInName(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7f && byte &- UInt8(ascii: "A") >= 26
    }

    static func firstNotAllowedInName(_ name: UnsafeBufferPointer<UInt8>, skipping: Int) -> UInt8? {
        for byte in name.dropFirst(skipping) where !allowedInName(byte) { return byte }
        return nil
    }

    static func valueProblem(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        guard let first = bytes.first, let last = bytes.last else { return nil }
        if first == 0x20 || first == 0x09 || last == 0x20 || last == 0x09 { return "white space at an end" }
        // NUL, LF and CR are all below 0x0e: eight bytes none of which is below it are passed at once (a
        // provider token is ~250 bytes); from the first word that has one, byte by byte.
        let raw = UnsafeRawPointer(bytes.baseAddress!)
        var start = 0
        while start &+ 8 <= bytes.count {
            let word = raw.loadUnaligned(fromByteOffset: start, as: UInt64.self)
            if (word &- 0x0e0e_0e0e_0e0e_0e0e) & ~word & 0x8080_8080_8080_8080 != 0 { break }
            start &+= 8
        }
        for byte in bytes[start...] where byte < 0x0e && (byte == 0 || byte == 0x0a || byte == 0x0d) {
            return "NUL, CR or LF"
        }
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
    private mutating func pseudo(_ seen: Bool, _ name: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>)
        -> Bool
    {
        if seen {
            fail("a repeated \(String(decoding: name, as: UTF8.self))")
        } else if value.isEmpty {
            fail("an empty \(String(decoding: name, as: UTF8.self))")
        }
        return true
    }

    private mutating func fail(_ reason: String) { malformed = reason }
}
