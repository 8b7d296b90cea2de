import NIOHPACK
import PushModel

/// One request's header block, read in the single pass the handler makes over it: RFC 9113's rules
/// (`RequestHeaderRules`), the APNs headers it knows (`RequestHead`), the `apns-id` as sent, and the
/// header list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it. No I/O; the fuzz target reads blocks
/// through it as the handler does.
///
/// Read header by header from the bytes libnghttp2 hands over (`read(name:value:)`, then `finish()`): a
/// string is made only for the values a request's head keeps, never for a name.
public struct RequestHeaderBlock {
    public var head = RequestHead()
    /// `apns-id` exactly as sent (echoed on every answer).
    public var sentID: String?
    public var rules = RequestHeaderRules()
    /// RFC 9113 §6.5.2: names, values and 32 octets per field.
    public var listSize = 0

    public init() {}

    /// A whole block at once, read as the codec reads it field by field (the tests' and fuzz targets' way in).
    public init(_ headers: HPACKHeaders) {
        var repeated = RepeatedValues()
        for (name, value, _) in headers {
            var name = name
            var value = value
            name.withUTF8 { name in value.withUTF8 { read(name: name, value: $0, repeated: &repeated) } }
        }
        finish()
    }

    /// Values a connection sends again and again: the last of each, so that the same bytes make no new
    /// string (a provider token is ~250 bytes on every request).
    public struct RepeatedValues {
        var authorization: String?
        public init() {}
    }

    /// One header as received.
    public mutating func read(
        name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>, repeated: inout RepeatedValues
    ) {
        listSize &+= name.count &+ value.count &+ 32
        rules.read(name: name, value: value)
        if name.first == UInt8(ascii: ":") {
            if name.equals(":method") {
                head.method = String(decoding: value, as: UTF8.self)
            } else if name.equals(":path") {
                head.path = String(decoding: value, as: UTF8.self)
            }
        } else if let known = HeaderName(wireBytes: name) {
            guard known == .authorization else { return keep(known, String(decoding: value, as: UTF8.self)) }
            if var last = repeated.authorization, last.withUTF8({ $0.equals(value) }) {
                keep(known, last)
            } else {
                let text = String(decoding: value, as: UTF8.self)
                repeated.authorization = text
                keep(known, text)
            }
        }
    }

    /// After the block's last header.
    public mutating func finish() {
        rules.finish()
    }

    private mutating func keep(_ known: HeaderName, _ value: String) {
        head.set(known, value)
        if known == .apnsID { sentID = value }
    }
}
