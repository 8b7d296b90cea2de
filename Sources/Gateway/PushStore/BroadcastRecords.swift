import PushModel
import PushPolicy

/// A device's subscription to a broadcast channel (an activity started on it), with its cursor: the
/// highest broadcast sequence the device acknowledged on it.
public struct StoredSubscription: Sendable, Equatable {
    public var deviceID: String
    public var channelID: String
    public var bundleID: String
    public var acknowledged: Int64

    public init(deviceID: String, channelID: String, bundleID: String, acknowledged: Int64) {
        self.deviceID = deviceID
        self.channelID = channelID
        self.bundleID = bundleID
        self.acknowledged = acknowledged
    }

    public var key: SubscriptionKey { SubscriptionKey(deviceID: deviceID, channelID: channelID) }
}

public struct SubscriptionKey: Hashable, Sendable, Comparable {
    public var deviceID: String
    public var channelID: String

    public init(deviceID: String, channelID: String) {
        self.deviceID = deviceID
        self.channelID = channelID
    }

    public static func < (lhs: SubscriptionKey, rhs: SubscriptionKey) -> Bool {
        (lhs.deviceID, lhs.channelID) < (rhs.deviceID, rhs.channelID)
    }
}

/// One broadcast as stored: one row whatever the number of subscribers (their cursors say who has it).
public struct StoredBroadcast: Sendable, Equatable {
    public var channelID: String
    public var sequence: Int64
    public var apnsID: String
    public var teamID: String
    public var bundleID: String
    public var priority: Int
    /// `apns-expiration` as stored (`Expiration.storedSeconds`).
    public var expiration: Int64?
    public var payload: [UInt8]
    public var acceptedAt: UnixTime
    public var deliverableUntil: UnixTime

    public init(
        channelID: String, sequence: Int64, apnsID: String, teamID: String, bundleID: String, priority: Int,
        expiration: Int64?, payload: [UInt8], acceptedAt: UnixTime, deliverableUntil: UnixTime
    ) {
        self.channelID = channelID
        self.sequence = sequence
        self.apnsID = apnsID
        self.teamID = teamID
        self.bundleID = bundleID
        self.priority = priority
        self.expiration = expiration
        self.payload = payload
        self.acceptedAt = acceptedAt
        self.deliverableUntil = deliverableUntil
    }

    public init(_ message: BroadcastMessage) {
        let push = message.push
        self.init(
            channelID: message.channel.value, sequence: message.sequence, apnsID: push.id.value,
            teamID: push.teamID ?? "", bundleID: push.bundleID, priority: push.priority.rawValue,
            expiration: push.expiration.storedSeconds, payload: push.payload,
            acceptedAt: push.receivedAt, deliverableUntil: message.deliverableUntil)
    }

    /// The message again (nil for a row this version cannot read).
    public var message: BroadcastMessage? {
        guard let channel = ChannelID(channelID), let id = APNsID(header: apnsID),
            let priority = Priority(rawValue: priority),
            let topic = Topic(bundleID + (PushType.liveactivity.topicSuffix ?? ""))
        else { return nil }
        let push = PushNotification(
            id: id, deviceToken: BroadcastMessage.noDevice, topic: topic, bundleID: bundleID, pushType: .liveactivity,
            priority: priority, expiration: Expiration(storedSeconds: expiration), collapseID: nil,
            notificationClass: .other, payload: payload, teamID: teamID.isEmpty ? nil : teamID,
            receivedAt: acceptedAt, broadcast: BroadcastStamp(channel: channel, sequence: sequence))
        return BroadcastMessage(push: push, deliverableUntil: deliverableUntil)
    }
}
