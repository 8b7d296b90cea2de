/// The reasons the channel-management API and broadcasts answer with, each with its status, as Apple's
/// "Handling error responses from Apple Push Notification service" lists them (docs/live-activities.md).
public enum BroadcastReason: String, Sendable, CaseIterable, Error {
    case featureNotEnabled = "FeatureNotEnabled"
    case missingChannelId = "MissingChannelId"
    case badChannelId = "BadChannelId"
    case channelNotRegistered = "ChannelNotRegistered"
    case badRequestParams = "BadRequestParams"
    case badRequestPayload = "BadRequestPayload"
    case payloadEmpty = "PayloadEmpty"
    case badMessageId = "BadMessageId"
    case missingPushType = "MissingPushType"
    case invalidPushType = "InvalidPushType"
    case cannotCreateChannelConfig = "CannotCreateChannelConfig"
    case badExpirationDate = "BadExpirationDate"
    case topicDisallowed = "TopicDisallowed"
    case badPriority = "BadPriority"
    case badCertificate = "BadCertificate"
    case badCertificateEnvironment = "BadCertificateEnvironment"
    case topicMismatch = "TopicMismatch"
    case missingProviderToken = "MissingProviderToken"
    case expiredProviderToken = "ExpiredProviderToken"
    case invalidProviderToken = "InvalidProviderToken"
    case badPath = "BadPath"
    case methodNotAllowed = "MethodNotAllowed"
    case payloadTooLarge = "PayloadTooLarge"
    case tooManyRequests = "TooManyRequests"
    case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"
    case internalServerError = "InternalServerError"
    case serviceUnavailable = "ServiceUnavailable"
    case shutdown = "Shutdown"

    /// The HTTP status Apple answers it with.
    public var status: Int {
        switch self {
        case .badCertificate, .badCertificateEnvironment, .topicMismatch, .missingProviderToken,
            .expiredProviderToken, .invalidProviderToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .payloadTooLarge: 413
        case .tooManyRequests, .tooManyProviderTokenUpdates: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        default: 400
        }
    }

    /// The provider API's authentication reasons, as this API names them (the same names; Apple lists
    /// no `UnrelatedKeyIdInToken` or `BadEnvironmentKeyIdInToken` here: they answer as an invalid token).
    public init(authentication reason: RejectionReason) {
        self = BroadcastReason(rawValue: reason.rawValue) ?? .invalidProviderToken
    }
}
