import PushModel

/// A message broadcast on a channel, as a node fans it out: the push (one instance in every
/// subscriber's queue, its `broadcast` stamp set), and until when a device that was not connected when
/// it was broadcast may still be given it.
public struct BroadcastMessage: Sendable, Equatable {
    public var push: PushNotification
    /// Most Recent Message Stored: eight hours, or the `apns-expiration` if sooner. No Message Stored
    /// (and an `apns-expiration` of 0): the reconnect grace only — what a device whose connection or node
    /// was lost mid-fan-out needs.
    public var deliverableUntil: UnixTime

    public init(push: PushNotification, deliverableUntil: UnixTime) {
        precondition(push.broadcast != nil, "a broadcast message's push has its stamp")
        self.push = push
        self.deliverableUntil = deliverableUntil
    }

    public var stamp: BroadcastStamp { push.broadcast! }
    public var channel: ChannelID { stamp.channel }
    public var sequence: Int64 { stamp.sequence }

    /// The `deviceToken` of a broadcast's push: it is no device's.
    public static let noDevice = DeviceToken(String(repeating: "0", count: 64))!

    /// Apple keeps a Most-Recent-Message-Stored channel's message at most eight hours ([CM]).
    public static let storedLifetimeMilliseconds: Int64 = 8 * 3_600_000

    /// When a message accepted at `acceptedAt` stops being given to devices that come back.
    public static func deliverableUntil(
        policy: MessageStoragePolicy, expiration: Expiration, acceptedAt: UnixTime, graceMilliseconds: Int64
    ) -> UnixTime {
        let grace = acceptedAt.milliseconds + graceMilliseconds
        guard policy == .mostRecentMessageStored else { return UnixTime(milliseconds: grace) }
        let stored = acceptedAt.milliseconds + storedLifetimeMilliseconds
        switch expiration {
        case .storeByDefault: return UnixTime(milliseconds: stored)
        case .immediateOnly: return UnixTime(milliseconds: grace)
        case .at(let seconds):
            return UnixTime(milliseconds: max(grace, min(stored, seconds * 1000)))
        }
    }
}

/// The channel subscriptions of the devices this node runs, and each channel's newest message, as a pure
/// state machine under the hub's lock (time passed in, no I/O). A subscription's cursor is the highest
/// sequence its device acknowledged (stored, so a restart or another node knows it — not on every
/// acknowledgement but when the shell takes the moved cursors: `takeCursors`) and the highest written to
/// it (in memory): a connected subscriber is given every broadcast once; one that connects
/// (again, or to a node that took it over) is given its channel's newest message if that is past both
/// and still deliverable — a Live Activity shows the newest state, not the history.
public struct ChannelSubscriptions: Sendable {
    public struct Subscription: Sendable, Equatable {
        public var bundleID: String
        public var acknowledged: Int64
        public var queued: Int64

        public init(bundleID: String, acknowledged: Int64, queued: Int64? = nil) {
            self.bundleID = bundleID
            self.acknowledged = acknowledged
            self.queued = queued ?? acknowledged
        }

        var reached: Int64 { max(acknowledged, queued) }
    }

    private var byDevice: [DeviceSlot: [ChannelID: Subscription]] = [:]
    private var byChannel: [ChannelID: Set<DeviceSlot>] = [:]
    private var latest: [ChannelID: BroadcastMessage] = [:]
    /// Cursors acknowledged past what was last taken to be stored, by device.
    private var unstored: [DeviceSlot: [ChannelID: Int64]] = [:]

    public init() {}

    /// A device's cursor to store.
    public struct Cursor: Sendable, Equatable {
        public var device: DeviceSlot
        public var channel: ChannelID
        public var acknowledged: Int64
    }

    /// Cursors moved since they were last taken (every device's, or one device's — when its session
    /// ends), now counted as stored. Storing them late costs at most a repeat of the newest message to a
    /// device that comes back after a node's death, which its activity ignores (an older or equal
    /// timestamp); stored cursors only move forward, so an old one stored late does no harm.
    public mutating func takeCursors(of device: DeviceSlot? = nil) -> [Cursor] {
        let taken: [DeviceSlot: [ChannelID: Int64]]
        if let device {
            guard let cursors = unstored.removeValue(forKey: device) else { return [] }
            taken = [device: cursors]
        } else {
            taken = unstored
            unstored = [:]
        }
        return taken.flatMap { device, cursors in
            cursors.map { Cursor(device: device, channel: $0.key, acknowledged: $0.value) }
        }
    }

    /// Devices with a cursor not yet taken.
    public var unstoredCount: Int { unstored.count }

    /// The device's subscriptions (tests, the admin API).
    public func subscriptions(of device: DeviceSlot) -> [ChannelID: Subscription] { byDevice[device] ?? [:] }
    /// Subscribers this node runs.
    public func subscriberCount(of channel: ChannelID) -> Int { byChannel[channel]?.count ?? 0 }
    public var subscriptionCount: Int { byDevice.values.reduce(0) { $0 + $1.count } }
    public func newest(on channel: ChannelID) -> BroadcastMessage? { latest[channel] }

    /// The device subscribes (an activity started on the channel): from the channel's newest message on,
    /// which it is given now if the channel still stores it (`storage`: Most Recent Message Stored, within
    /// eight hours and its `apns-expiration`) — the returned one, already counted as written. A No Message
    /// Stored channel's message, or one sent with `apns-expiration: 0` (one attempt), is never given to a
    /// device that subscribes after it was broadcast: the reconnect grace is for subscribers it was
    /// broadcast to (`caughtUp`). Nil also when it was subscribed already.
    public mutating func subscribe(
        _ device: DeviceSlot, to channel: ChannelID, bundleID: String, storage: MessageStoragePolicy, now: UnixTime
    ) -> (subscription: Subscription, deliver: BroadcastMessage?)? {
        guard byDevice[device]?[channel] == nil else { return nil }
        var subscription = Subscription(bundleID: bundleID, acknowledged: 0)
        var deliver: BroadcastMessage?
        if let newest = latest[channel] {
            let storedUntil = BroadcastMessage.deliverableUntil(
                policy: storage, expiration: newest.push.expiration, acceptedAt: newest.push.receivedAt,
                graceMilliseconds: 0)
            if now < storedUntil {
                subscription.queued = newest.sequence
                deliver = newest
            } else {
                subscription.acknowledged = newest.sequence
                subscription.queued = newest.sequence
            }
        }
        byDevice[device, default: [:]][channel] = subscription
        byChannel[channel, default: []].insert(device)
        return (subscription, deliver)
    }

    /// The device unsubscribes (its activity ended); false if it was not subscribed.
    public mutating func unsubscribe(_ device: DeviceSlot, from channel: ChannelID) -> Bool {
        guard byDevice[device]?.removeValue(forKey: channel) != nil else { return false }
        if byDevice[device]?.isEmpty == true { byDevice.removeValue(forKey: device) }
        unstored[device]?.removeValue(forKey: channel)
        if unstored[device]?.isEmpty == true { unstored.removeValue(forKey: device) }
        byChannel[channel]?.remove(device)
        if byChannel[channel]?.isEmpty == true { byChannel.removeValue(forKey: channel) }
        return true
    }

    /// Another node runs the device now, or it was removed: its subscriptions are forgotten here.
    public mutating func forget(_ device: DeviceSlot) {
        guard let channels = byDevice.removeValue(forKey: device) else { return }
        for channel in channels.keys {
            byChannel[channel]?.remove(device)
            if byChannel[channel]?.isEmpty == true { byChannel.removeValue(forKey: channel) }
        }
    }

    /// The device's subscriptions from the store (at start, or when this node claims it), replacing any.
    public mutating func adopt(_ device: DeviceSlot, _ subscriptions: [ChannelID: Subscription]) {
        forget(device)
        guard !subscriptions.isEmpty else { return }
        byDevice[device] = subscriptions
        for channel in subscriptions.keys { byChannel[channel, default: []].insert(device) }
    }

    /// A message broadcast (accepted here or by another node): kept if its channel's newest; the
    /// subscribers this node runs, to fan it out to (`fanOut`, a slice at a time).
    public mutating func published(_ message: BroadcastMessage) -> [DeviceSlot] {
        remember(message)
        return Array(byChannel[message.channel] ?? [])
    }

    /// A channel's newest message read back from the store (at start, or one another node broadcast).
    public mutating func remember(_ message: BroadcastMessage) {
        if message.sequence > latest[message.channel]?.sequence ?? Int64.min { latest[message.channel] = message }
    }

    /// Whether to give `message` to `device` in the fan-out: it is connected and subscribed, and has
    /// not been given it (counted as written from now).
    public mutating func fanOut(_ message: BroadcastMessage, to device: DeviceSlot, connected: Bool) -> Bool {
        guard connected, var subscription = byDevice[device]?[message.channel],
            message.sequence > subscription.acknowledged, message.sequence != subscription.queued
        else { return false }
        subscription.queued = max(subscription.queued, message.sequence)
        byDevice[device]![message.channel] = subscription
        return true
    }

    /// The device connected: for each of its channels, the newest message if past what it was given and
    /// still deliverable (counted as written from now).
    public mutating func caughtUp(_ device: DeviceSlot, now: UnixTime) -> [BroadcastMessage] {
        guard var subscriptions = byDevice[device] else { return [] }
        var messages: [BroadcastMessage] = []
        for (channel, subscription) in subscriptions {
            guard let newest = latest[channel], newest.sequence > subscription.reached, now <= newest.deliverableUntil
            else { continue }
            subscriptions[channel]!.queued = newest.sequence
            messages.append(newest)
        }
        byDevice[device] = subscriptions
        return messages.sorted { $0.sequence < $1.sequence }
    }

    /// The device acknowledged a broadcast: true when its cursor moved (kept to be stored: `takeCursors`).
    public mutating func acknowledged(_ stamp: BroadcastStamp, by device: DeviceSlot) -> Bool {
        guard var subscription = byDevice[device]?[stamp.channel], stamp.sequence > subscription.acknowledged else {
            return false
        }
        subscription.acknowledged = stamp.sequence
        byDevice[device]![stamp.channel] = subscription
        unstored[device, default: [:]][stamp.channel] = stamp.sequence
        return true
    }
}
