import PushModel
import PushPolicy

/// A registered device as the store keeps it (its slot is its place in registration order).
public struct StoredDevice: Sendable, Equatable {
    public var id: String
    public var secretHash: [UInt8]
    public var createdAt: UnixTime
    /// The node that runs the policy for it (several nodes on one PostgreSQL database): the one it
    /// registered on or last connected to. Nil on a single node.
    public var owner: String?
    /// When it last connected (said hello); nil: not since it registered.
    public var lastSeenAt: UnixTime?
    /// When it was removed (`pushgate devices remove`, or pruned): it cannot connect again, and its
    /// tokens answer 410 Unregistered from then on.
    public var removedAt: UnixTime?

    public init(
        id: String, secretHash: [UInt8], createdAt: UnixTime, owner: String? = nil, lastSeenAt: UnixTime? = nil,
        removedAt: UnixTime? = nil
    ) {
        self.id = id
        self.secretHash = secretHash
        self.createdAt = createdAt
        self.owner = owner
        self.lastSeenAt = lastSeenAt
        self.removedAt = removedAt
    }
}

/// A token issued to an app on a device; `unregisteredAt` is set once the app is uninstalled.
/// `activity`: nil for the app's own token; for a Live Activity's token, which one
/// (`ActivityTokenPurpose.key`: a push-to-start token per attributes type, an update token per activity).
public struct StoredToken: Sendable, Equatable {
    public var token: String
    public var deviceID: String
    public var bundleID: String
    public var unregisteredAt: UnixTime?
    public var activity: String?

    public init(token: String, deviceID: String, bundleID: String, unregisteredAt: UnixTime?, activity: String? = nil) {
        self.token = token
        self.deviceID = deviceID
        self.bundleID = bundleID
        self.unregisteredAt = unregisteredAt
        self.activity = activity
    }
}

/// Where an accepted notification stands. Only `pending` ones are brought back after a restart.
public enum NotificationState: Int, Sendable, Codable {
    /// Held, or delivered and not yet acknowledged by the device.
    case pending = 0
    /// Acknowledged by the device.
    case delivered = 1
    /// Coalesced, expired, overflowed or not stored, by design (the rule says which).
    case discarded = 2
    /// For a scripted token (`pushgate tokens`) with no device to deliver to.
    case noDevice = 3
}

/// An accepted notification and where it stands.
public struct StoredNotification: Sendable, Equatable {
    public var notification: PushNotification
    /// When the policy stops keeping it (nil: never stored, `apns-expiration: 0`).
    public var expiresAt: UnixTime?
    public var deviceID: String?
    public var state: NotificationState
    /// The policy's last decision about it.
    public var rule: Rule?

    public init(
        notification: PushNotification, expiresAt: UnixTime?, deviceID: String?, state: NotificationState, rule: Rule?
    ) {
        self.notification = notification
        self.expiresAt = expiresAt
        self.deviceID = deviceID
        self.state = state
        self.rule = rule
    }
}

/// A later change to a stored notification, found by its apns-id.
public struct NotificationOutcome: Sendable, Equatable {
    public var apnsID: APNsID
    public var state: NotificationState
    public var rule: Rule?
    public var at: UnixTime

    public init(apnsID: APNsID, state: NotificationState, rule: Rule?, at: UnixTime) {
        self.apnsID = apnsID
        self.state = state
        self.rule = rule
        self.at = at
    }
}

/// A device's per-app throttle budgets; they replace whatever was stored for the device.
public struct DeviceBudgets: Sendable, Equatable {
    public var deviceID: String
    public var apps: [AppBudget]

    public init(deviceID: String, apps: [AppBudget]) {
        self.deviceID = deviceID
        self.apps = apps
    }
}

public struct AppBudget: Sendable, Equatable {
    public var bundleID: String
    public var budget: ThrottleBudget

    public init(bundleID: String, budget: ThrottleBudget) {
        self.bundleID = bundleID
        self.budget = budget
    }
}

/// A broadcast channel as stored (docs/live-activities.md): created, and later marked deleted (its id
/// is never issued again).
public struct StoredChannel: Sendable, Equatable {
    public var id: String
    public var bundleID: String
    /// `MessageStoragePolicy`'s raw value.
    public var storagePolicy: Int
    public var createdAt: UnixTime
    public var deletedAt: UnixTime?

    public init(id: String, bundleID: String, storagePolicy: Int, createdAt: UnixTime, deletedAt: UnixTime? = nil) {
        self.id = id
        self.bundleID = bundleID
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
        self.deletedAt = deletedAt
    }
}

/// One transaction's worth of changes, applied in this order: devices, tokens, notifications (a
/// notification whose (team, apns-id) is already stored is not stored again), outcomes, budgets.
public struct StoreBatch: Sendable {
    public var devices: [StoredDevice] = []
    /// By device id: when each last connected, and when each was removed.
    public var seen: [String: UnixTime] = [:]
    public var removed: [String: UnixTime] = [:]
    public var tokens: [StoredToken] = []
    /// Broadcast channels created or deleted (the latest change for a channel wins).
    public var channels: [StoredChannel] = []
    public var notifications: [StoredNotification] = []
    public var outcomes: [NotificationOutcome] = []
    /// Broadcasts accepted (one row each), subscriptions made (with their cursor) or ended, and cursors
    /// moved by acknowledgements (a cursor only grows: the highest wins).
    public var broadcasts: [StoredBroadcast] = []
    public var subscriptions: [StoredSubscription] = []
    public var unsubscribed: [SubscriptionKey] = []
    public var cursors: [SubscriptionKey: Int64] = [:]
    /// By device id: the latest change for a device replaces an earlier one in the same batch. A node
    /// sharing the database writes only the budgets of devices it owns.
    public var budgets: [String: [AppBudget]] = [:]
    /// Those of `budgets`' devices that lost an app's budget since the store last had it (the app's state
    /// became idle and was dropped): only their rows of apps no longer listed need deleting. A backend
    /// that replaces a device's rows whole may ignore it.
    public var budgetsPruned: Set<String> = []
    /// Told to the other nodes sharing the database when, and only if, the batch commits (ignored by
    /// the single-node backends).
    public var notices: [ClusterNotice] = []

    public init() {}

    public var isEmpty: Bool {
        devices.isEmpty && seen.isEmpty && removed.isEmpty && tokens.isEmpty && channels.isEmpty
            && notifications.isEmpty && outcomes.isEmpty && budgets.isEmpty && notices.isEmpty && broadcasts.isEmpty
            && subscriptions.isEmpty && unsubscribed.isEmpty && cursors.isEmpty
    }

    public var count: Int {
        devices.count + seen.count + removed.count + tokens.count + channels.count + notifications.count
            + outcomes.count + budgets.count + notices.count + broadcasts.count + subscriptions.count
            + unsubscribed.count + cursors.count
    }

    /// A subscription made (replacing one of the same device and channel, or an unsubscription earlier
    /// in this batch).
    public mutating func subscribe(_ subscription: StoredSubscription) {
        unsubscribed.removeAll { $0 == subscription.key }
        subscriptions.removeAll { $0.key == subscription.key }
        subscriptions.append(subscription)
    }

    /// A subscription ended (as does a subscription or a cursor earlier in this batch).
    public mutating func unsubscribe(_ key: SubscriptionKey) {
        subscriptions.removeAll { $0.key == key }
        cursors.removeValue(forKey: key)
        unsubscribed.append(key)
    }

    /// A cursor moved to `sequence` (kept if higher than one already in the batch).
    public mutating func advance(_ key: SubscriptionKey, to sequence: Int64) {
        cursors[key] = max(cursors[key] ?? .min, sequence)
    }
}

/// What a gateway needs from the store when it starts: devices in registration order, their tokens,
/// their budgets, and the notifications still pending (oldest first; ones that expired meanwhile are
/// marked expired by the store and left out).
public struct StoreSnapshot: Sendable {
    public var devices: [StoredDevice] = []
    public var tokens: [StoredToken] = []
    /// Every broadcast channel ever created, deleted ones too, in creation order.
    public var channels: [StoredChannel] = []
    public var budgets: [DeviceBudgets] = []
    public var pending: [StoredNotification] = []
    /// The subscriptions of the devices this node runs, and each channel's newest broadcast still
    /// deliverable.
    public var subscriptions: [StoredSubscription] = []
    public var broadcasts: [StoredBroadcast] = []

    public init() {}
}

/// What a pruning pass removed.
public struct PruneResult: Sendable, Equatable {
    /// Finished notifications (delivered, discarded, no device) older than the retention.
    public var removed: Int
    /// Pending notifications past their expiry, marked expired.
    public var expired: Int

    public init(removed: Int, expired: Int) {
        self.removed = removed
        self.expired = expired
    }
}
