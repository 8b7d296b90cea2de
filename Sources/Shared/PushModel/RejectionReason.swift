/// Every reason APNs can answer with, each once, with its HTTP status.
///
/// The wire string is the case name (Apple's spelling); the status comes from Apple's table in
/// "Handling notification responses from APNs". This is the only place either is written down.
public enum RejectionReason: String, CaseIterable, Sendable {
    // 400
    case badCollapseId = "BadCollapseId"
    case badDeviceToken = "BadDeviceToken"
    case badExpirationDate = "BadExpirationDate"
    case badMessageId = "BadMessageId"
    case badPriority = "BadPriority"
    case badTopic = "BadTopic"
    case deviceTokenNotForTopic = "DeviceTokenNotForTopic"
    case duplicateHeaders = "DuplicateHeaders"
    case idleTimeout = "IdleTimeout"
    case invalidPushType = "InvalidPushType"
    case missingDeviceToken = "MissingDeviceToken"
    case missingTopic = "MissingTopic"
    case payloadEmpty = "PayloadEmpty"
    case topicDisallowed = "TopicDisallowed"
    // 403
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case expiredProviderToken = "ExpiredProviderToken"
    case forbidden = "Forbidden"
    case invalidProviderToken = "InvalidProviderToken"
    case missingProviderToken = "MissingProviderToken"
    case unrelatedKeyIdInToken = "UnrelatedKeyIdInToken"
    case badEnvironmentKeyIdInToken = "BadEnvironmentKeyIdInToken"
    // 404
    case badPath = "BadPath"
    // 405
    case methodNotAllowed = "MethodNotAllowed"
    // 410
    case unregistered = "Unregistered"
    case expiredToken = "ExpiredToken"
    // 413
    case payloadTooLarge = "PayloadTooLarge"
    // 429
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case tooManyRequests = "TooManyRequests"
    // 500
    case internalServerError = "InternalServerError"
    // 503
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"

    public var status: Int {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed:
            return 400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden, .invalidProviderToken,
            .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            return 403
        case .badPath: return 404
        case .methodNotAllowed: return 405
        case .unregistered, .expiredToken: return 410
        case .payloadTooLarge: return 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: return 429
        case .internalServerError: return 500
        case .serviceUnavailable, .shutdown: return 503
        }
    }

    /// A 410 carries the time the token stopped being valid for the topic.
    public var carriesTimestamp: Bool { status == 410 }
}

/// A rejection as it goes on the wire: the reason and, for 410, the time in milliseconds since the epoch.
public struct Rejection: Error, Equatable, Sendable {
    public var reason: RejectionReason
    public var timestampMilliseconds: Int64?

    public init(_ reason: RejectionReason, timestampMilliseconds: Int64? = nil) {
        self.reason = reason
        self.timestampMilliseconds = timestampMilliseconds
    }

    /// The JSON body: `{"reason":"…"}`, plus `"timestamp"` on 410.
    public var body: String {
        if let timestampMilliseconds, reason.carriesTimestamp {
            return #"{"reason":"\#(reason.rawValue)","timestamp":\#(timestampMilliseconds)}"#
        }
        return #"{"reason":"\#(reason.rawValue)"}"#
    }
}
