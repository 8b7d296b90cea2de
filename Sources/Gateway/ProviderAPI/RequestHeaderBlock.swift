import NIOHPACK
import PushModel

/// One request's header block, read in the single pass the handler makes over it: RFC 9113's rules
/// (`RequestHeaderRules`), the APNs headers it knows (`RequestHead`), the `apns-id` as sent, and the
/// header list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it. No I/O; the fuzz target reads blocks
/// through it as the handler does.
///
/// Read from NIO's decoded `HPACKHeaders`, or header by header from the bytes libnghttp2 hands over
/// (`read(name:value:)`, then `finish()`): there a string is made only for the values a request's head
/// keeps, never for a name.
public struct RequestHeaderBlock {
    public var head = RequestHead()
    /// `apns-id` exactly as sent (echoed on every answer).
    public var sentID: String?
    public var rules = RequestHeaderRules()
    /// RFC 9113 §6.5.2: names, values and 32 octets per field.
    public var listSize = 0

    public init() {}

    public init(_ headers: HPACKHeaders) {
        for (name, value, _) in headers {
            listSize &+= name.utf8.count &+ value.utf8.count &+ 32
            rules.read(name, value)
            if name.utf8.first == UInt8(ascii: ":") {
                if name == ":method" { head.method = value } else if name == ":path" { head.path = value }
            } else if let known = HeaderName(wireName: name) {
                keep(known, value)
            }
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
