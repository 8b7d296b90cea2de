import NIOHPACK
import PushModel

/// One request's header block, read in the single pass the handler makes over it: RFC 9113's rules
/// (`RequestHeaderRules`), the APNs headers it knows (`RequestHead`), the `apns-id` as sent, and the
/// header list's size as SETTINGS_MAX_HEADER_LIST_SIZE counts it. No I/O; the fuzz target reads blocks
/// through it as the handler does.
public struct RequestHeaderBlock {
    public var head = RequestHead()
    /// `apns-id` exactly as sent (echoed on every answer).
    public var sentID: String?
    public var rules = RequestHeaderRules()
    /// RFC 9113 §6.5.2: names, values and 32 octets per field.
    public var listSize = 0

    public init(_ headers: HPACKHeaders) {
        for (name, value, _) in headers {
            listSize &+= name.utf8.count &+ value.utf8.count &+ 32
            rules.read(name, value)
            if name.utf8.first == UInt8(ascii: ":") {
                if name == ":method" { head.method = value } else if name == ":path" { head.path = value }
            } else if let known = HeaderName(wireName: name) {
                head.set(known, value)
                if known == .apnsID { sentID = value }
            }
        }
        rules.finish()
    }
}
