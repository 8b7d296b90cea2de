/// The request headers APNs defines, each name once. HTTP/2 header names are lower case on the wire.
public enum HeaderName: CaseIterable, Sendable {
    case authorization
    case apnsID
    case apnsPushType
    case apnsExpiration
    case apnsPriority
    case apnsTopic
    case apnsCollapseID
    /// A broadcast's (`POST /4/broadcasts/apps/<bundle id>`): its request id, echoed as `apns-request-id`.
    case apnsRequestID
    /// A broadcast's channel (base64).
    case apnsChannelID

    /// The name as text.
    public var rawValue: String { wireName.description }

    /// Looks up a received header name; `nil` for headers APNs does not define (they are ignored).
    public init?(wireName: String) {
        var name = wireName
        guard let known = name.withUTF8({ HeaderName(wireBytes: $0) }) else { return nil }
        self = known
    }

    /// The same, from the bytes as received (libnghttp2 hands names over as bytes).
    @inlinable
    public init?(wireBytes bytes: UnsafeBufferPointer<UInt8>) {
        // Dispatch on length first: this runs for every header of every request.
        let candidate: HeaderName
        switch bytes.count {
        case 7: candidate = .apnsID
        case 10: candidate = .apnsTopic
        case 13: candidate = bytes[1] == UInt8(ascii: "u") ? .authorization : .apnsPriority
        case 14: candidate = .apnsPushType
        case 15:
            switch bytes[5] {
            case UInt8(ascii: "r"): candidate = .apnsRequestID
            case UInt8(ascii: "c"): candidate = .apnsChannelID
            default: candidate = .apnsExpiration
            }
        case 16: candidate = .apnsCollapseID
        default: return nil
        }
        guard bytes.equals(candidate.wireName) else { return nil }
        self = candidate
    }

    /// The name on the wire (each name's one spelling).
    @inlinable
    public var wireName: StaticString {
        switch self {
        case .authorization: "authorization"
        case .apnsID: "apns-id"
        case .apnsPushType: "apns-push-type"
        case .apnsExpiration: "apns-expiration"
        case .apnsPriority: "apns-priority"
        case .apnsTopic: "apns-topic"
        case .apnsCollapseID: "apns-collapse-id"
        case .apnsRequestID: "apns-request-id"
        case .apnsChannelID: "apns-channel-id"
        }
    }
}

/// The response header that carries the notification's id.
public let responseAPNsIDHeader = HeaderName.apnsID.rawValue

/// The response header that carries, in the development environment, the id of the notification in the
/// delivery log (`APNsID.uniqueID`): its name on the wire, and as text.
public let responseUniqueIDWireName: StaticString = "apns-unique-id"
public let responseUniqueIDHeader = responseUniqueIDWireName.description
