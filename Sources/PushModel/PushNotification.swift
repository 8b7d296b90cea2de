/// Which APNs environment a gateway, key or certificate serves.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable {
    case development
    case production
}

/// An accepted notification in typed values, as it travels from the provider API to the rest of the system.
public struct PushNotification: Sendable, Equatable {
    public var id: APNsID
    public var deviceToken: DeviceToken
    public var topic: Topic
    public var bundleID: String
    public var pushType: PushType
    public var priority: Priority
    public var expiration: Expiration
    public var collapseID: CollapseID?
    public var notificationClass: NotificationClass
    public var payload: [UInt8]
    /// The team whose key signed the request (token auth), or the certificate's team, when known.
    public var teamID: String?
    public var receivedAt: UnixTime

    public init(
        id: APNsID, deviceToken: DeviceToken, topic: Topic, bundleID: String, pushType: PushType, priority: Priority,
        expiration: Expiration, collapseID: CollapseID?, notificationClass: NotificationClass, payload: [UInt8],
        teamID: String?, receivedAt: UnixTime
    ) {
        self.id = id
        self.deviceToken = deviceToken
        self.topic = topic
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.notificationClass = notificationClass
        self.payload = payload
        self.teamID = teamID
        self.receivedAt = receivedAt
    }
}

extension ParsedHead {
    /// The body rules, after the head was accepted: size, JSON, push type inference, the push type's
    /// priority rule, and classification.
    public func notification(
        topic: Topic, bundleID: String, body: [UInt8], teamID: String?, now: UnixTime, id: APNsID
    ) -> Result<PushNotification, Rejection> {
        guard !body.isEmpty else { return .failure(Rejection(.payloadEmpty)) }
        let summary: PayloadSummary
        switch PayloadScanner.scan(body) {
        case .success(let value): summary = value
        // Apple's table has no reason for unreadable JSON; APNs answers PayloadEmpty: no content it can read.
        case .failure: return .failure(Rejection(.payloadEmpty))
        }
        let type = pushType ?? PushType.infer(topic: topic, payload: summary)
        guard body.count <= type.maximumPayloadSize else { return .failure(Rejection(.payloadTooLarge)) }
        // A background push carries only content-available: visible content under that type is a mismatch.
        if type == .background, summary.isAlerting { return .failure(Rejection(.invalidPushType)) }
        // Absent priority is 10, except for background pushes, which APNs always treats as 5.
        let effectivePriority = priority ?? (type == .background ? .conservePower : .immediate)
        guard type.allows(effectivePriority) else { return .failure(Rejection(.badPriority)) }
        return .success(
            PushNotification(
                id: id, deviceToken: deviceToken, topic: topic, bundleID: bundleID, pushType: type,
                priority: effectivePriority, expiration: expiration, collapseID: collapseID,
                notificationClass: NotificationClass.classify(pushType: type, payload: summary),
                payload: body, teamID: teamID, receivedAt: now))
    }
}
