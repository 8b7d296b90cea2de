/// The request headers APNs defines, each name once. HTTP/2 header names are lower case on the wire.
public enum HeaderName: String, CaseIterable, Sendable {
    case authorization = "authorization"
    case apnsID = "apns-id"
    case apnsPushType = "apns-push-type"
    case apnsExpiration = "apns-expiration"
    case apnsPriority = "apns-priority"
    case apnsTopic = "apns-topic"
    case apnsCollapseID = "apns-collapse-id"

    /// Looks up a received header name; `nil` for headers APNs does not define (they are ignored).
    @inlinable
    public init?(wireName: String) {
        // Dispatch on length first: this runs for every header of every request.
        switch wireName.utf8.count {
        case 7:
            if wireName == "apns-id" {
                self = .apnsID
                return
            }
        case 10:
            if wireName == "apns-topic" {
                self = .apnsTopic
                return
            }
        case 13:
            if wireName == "authorization" {
                self = .authorization
                return
            }
            if wireName == "apns-priority" {
                self = .apnsPriority
                return
            }
        case 14:
            if wireName == "apns-push-type" {
                self = .apnsPushType
                return
            }
        case 15:
            if wireName == "apns-expiration" {
                self = .apnsExpiration
                return
            }
        case 16:
            if wireName == "apns-collapse-id" {
                self = .apnsCollapseID
                return
            }
        default: break
        }
        return nil
    }
}

/// The response header that carries the notification's id.
public let responseAPNsIDHeader = HeaderName.apnsID.rawValue

/// The response header that carries, in the development environment, the id of the notification in the
/// delivery log (`APNsID.uniqueID`).
public let responseUniqueIDHeader = "apns-unique-id"
