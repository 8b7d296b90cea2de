/// A request's head as received: the pseudo-headers and the APNs headers, still text.
/// The edge fills it header by header; `parse` turns it into typed values or Apple's reason.
public struct RequestHead: Sendable, Equatable {
    public var method: String?
    public var path: String?
    public var authorization: String?
    public var apnsID: String?
    public var pushType: String?
    public var expiration: String?
    public var priority: String?
    public var topic: String?
    public var collapseID: String?
    /// A broadcast's request id and channel (a unicast has no use for them).
    public var requestID: String?
    public var channelID: String?
    /// The first APNs header that appeared twice.
    public var duplicated: HeaderName?

    public init() {}

    /// Records a header; a second value for the same APNs header marks the request as DuplicateHeaders.
    public mutating func set(_ name: HeaderName, _ value: String) {
        func store(_ slot: inout String?) {
            if slot != nil, duplicated == nil { duplicated = name }
            slot = value
        }
        switch name {
        case .authorization: store(&authorization)
        case .apnsID: store(&apnsID)
        case .apnsPushType: store(&pushType)
        case .apnsExpiration: store(&expiration)
        case .apnsPriority: store(&priority)
        case .apnsTopic: store(&topic)
        case .apnsCollapseID: store(&collapseID)
        case .apnsRequestID: store(&requestID)
        case .apnsChannelID: store(&channelID)
        }
    }

    public static let devicePathPrefix = "/3/device/"

    /// Validates the head one rule at a time, in the order APNs applies them, and returns typed values.
    /// Authentication, topic permissions and the device directory come after this (they need state).
    public func parse(tokenLengths: ClosedRange<Int> = 64...64) -> Result<ParsedHead, Rejection> {
        guard let path, path.hasPrefix(Self.devicePathPrefix) else { return .failure(Rejection(.badPath)) }
        guard method == "POST" else { return .failure(Rejection(.methodNotAllowed)) }
        let tokenText = path.utf8.dropFirst(Self.devicePathPrefix.utf8.count)
        guard !tokenText.isEmpty else { return .failure(Rejection(.missingDeviceToken)) }
        if duplicated != nil { return .failure(Rejection(.duplicateHeaders)) }

        var head = ParsedHead()
        if let apnsID {
            guard let id = APNsID(header: apnsID) else { return .failure(Rejection(.badMessageId)) }
            head.apnsID = id
        }
        if let pushType {
            guard let type = PushType(rawValue: pushType) else { return .failure(Rejection(.invalidPushType)) }
            head.pushType = type
        }
        if let priority {
            guard let value = Priority(header: priority) else { return .failure(Rejection(.badPriority)) }
            head.priority = value
        }
        if let expiration {
            guard let value = Expiration(header: expiration) else { return .failure(Rejection(.badExpirationDate)) }
            head.expiration = value
        }
        if let collapseID {
            guard let value = CollapseID(header: collapseID) else { return .failure(Rejection(.badCollapseId)) }
            head.collapseID = value
        }
        if let topic {
            guard let value = Topic(topic) else { return .failure(Rejection(.badTopic)) }
            head.topic = value
        }
        guard let token = DeviceToken(Substring(tokenText), lengths: tokenLengths) else {
            return .failure(Rejection(.badDeviceToken))
        }
        head.deviceToken = token
        head.authorization = authorization
        return .success(head)
    }
}

/// The head in typed values. Absent optional headers stay `nil` so later rules can tell "absent" from a default.
public struct ParsedHead: Sendable {
    public var deviceToken = DeviceToken.placeholder
    public var apnsID: APNsID?
    public var pushType: PushType?
    public var priority: Priority?
    public var expiration: Expiration = .storeByDefault
    public var collapseID: CollapseID?
    public var topic: Topic?
    public var authorization: String?

    public init() {}

    /// The push type's bundle id for a topic: from the explicit push type, or (absent) from the topic's
    /// suffix as APNs infers it. `nil` when the topic lacks the suffix the push type requires.
    public func bundleID(topic: Topic) -> String? {
        if let pushType { return topic.bundleID(for: pushType) }
        let inferred = PushType.infer(topic: topic, payload: PayloadSummary())
        return topic.bundleID(for: inferred)
    }
}
