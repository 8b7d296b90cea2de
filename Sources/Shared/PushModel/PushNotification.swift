/// Which APNs environment a gateway, key or certificate serves.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable {
    case development
    case production
}

/// An accepted notification in typed values, as it travels from the provider API to the rest of the system.
///
/// Immutable, and a class: it is handed from the provider API to the policy, held, released and
/// delivered, and each of those copies is then one reference instead of a dozen fields.
public final class PushNotification: Sendable, Equatable, CustomStringConvertible {
    public let id: APNsID
    public let deviceToken: DeviceToken
    public let topic: Topic
    public let bundleID: String
    public let pushType: PushType
    public let priority: Priority
    public let expiration: Expiration
    public let collapseID: CollapseID?
    public let notificationClass: NotificationClass
    /// Its push type does not match its payload (accepted all the same, as APNs does).
    public let mismatch: PushTypeMismatch?
    public let payload: [UInt8]
    /// The team whose key signed the request (token auth), or the certificate's team, when known.
    public let teamID: String?
    public let receivedAt: UnixTime
    /// A broadcast's message (`POST /4/broadcasts/apps/<bundle>`): its channel and sequence. Its
    /// `deviceToken` is then no device's (every subscriber's queue holds this one instance).
    public let broadcast: BroadcastStamp?

    public static func == (lhs: PushNotification, rhs: PushNotification) -> Bool {
        lhs === rhs
            || (lhs.id == rhs.id && lhs.deviceToken == rhs.deviceToken && lhs.topic == rhs.topic
                && lhs.bundleID == rhs.bundleID && lhs.pushType == rhs.pushType && lhs.priority == rhs.priority
                && lhs.expiration == rhs.expiration && lhs.collapseID == rhs.collapseID
                && lhs.notificationClass == rhs.notificationClass && lhs.mismatch == rhs.mismatch
                && lhs.payload == rhs.payload
                && lhs.teamID == rhs.teamID && lhs.receivedAt == rhs.receivedAt && lhs.broadcast == rhs.broadcast)
    }

    public var description: String { "\(pushType.rawValue) \(id) to \(deviceToken)" }

    public init(
        id: APNsID, deviceToken: DeviceToken, topic: Topic, bundleID: String, pushType: PushType, priority: Priority,
        expiration: Expiration, collapseID: CollapseID?, notificationClass: NotificationClass,
        mismatch: PushTypeMismatch? = nil, payload: [UInt8], teamID: String?, receivedAt: UnixTime,
        broadcast: BroadcastStamp? = nil
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
        self.mismatch = mismatch
        self.payload = payload
        self.teamID = teamID
        self.receivedAt = receivedAt
        self.broadcast = broadcast
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
        // No `aps` (or one that is no object) is not refused: Apple's PayloadEmpty is for an empty body.
        let type = pushType ?? PushType.infer(topic: topic, payload: summary)
        guard body.count <= type.maximumPayloadSize else { return .failure(Rejection(.payloadTooLarge)) }
        // Absent priority is 10, except for background pushes, which APNs always treats as 5.
        let effectivePriority = priority ?? (type == .background ? .conservePower : .immediate)
        guard type.allows(effectivePriority) else { return .failure(Rejection(.badPriority)) }
        return .success(
            PushNotification(
                id: id, deviceToken: deviceToken, topic: topic, bundleID: bundleID, pushType: type,
                priority: effectivePriority, expiration: expiration, collapseID: collapseID,
                notificationClass: NotificationClass.classify(pushType: type, payload: summary),
                mismatch: PushTypeMismatch.of(type, summary), payload: body, teamID: teamID, receivedAt: now))
    }
}
