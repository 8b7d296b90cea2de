import Foundation

/// The device protocol: JSON text frames over WebSocket, one message per frame, each with a `type`.
/// docs/device-protocol.md describes every message with examples.

/// What a device sends.
public enum DeviceMessage: Equatable, Sendable {
    /// A new device asks for an identity, with the fleet's enrolment secret (`devices.enrolment_secret`).
    case register(enrolment: String?)
    /// A known device proves who it is.
    case hello(deviceID: String, secret: String)
    /// Installs an app: the answer carries its device token (as `registerForRemoteNotifications` does).
    case install(bundleID: String)
    /// Uninstalls an app: pushes to its token answer 410 Unregistered from now on.
    case uninstall(bundleID: String)
    /// A notification arrived.
    case ack(apnsID: String)
    /// The app finished the work of a background wake: `newData`, `noData` or `failed`.
    case complete(apnsID: String, bundleID: String, result: String)
    /// The device did not wake the app for a silent push it received (`reason`: a `WakeRefusal`), so
    /// there is no completion to wait for.
    case notWoken(apnsID: String, bundleID: String, reason: String)
    /// The device's keep-alive; the answer carries any held pushes released to it.
    case keepAlive(sequence: Int)
    /// An app's state changed: foreground, background, suspended, not_running, force_quit.
    case appState(bundleID: String, state: String)
    /// Device conditions changed (each message carries them all): Low Power Mode, Background App Refresh,
    /// a debugger attached (the throttle is off), and how many background wakes a day the device's other
    /// apps draw from its daily budget.
    case conditions(
        lowPowerMode: Bool, backgroundAppRefreshOff: Bool, debuggerAttached: Bool = false,
        otherAppsWakesPerDay: Double = 0)
    /// The device restarted: its silent wakes wait out the herd window.
    case rebooted
    /// Asks for a Live Activity token of an installed app: the answer (`activityToken`) carries it;
    /// asking again for the same one gives the same token.
    case activityToken(bundleID: String, purpose: ActivityTokenPurpose)
    /// An activity of an installed app subscribes to one of the app's broadcast channels (started with
    /// `pushType: .channel(id)`, or by a push-to-start with `input-push-channel`): answered with
    /// `channelSubscribed` once stored; the channel's stored message follows if it has one.
    case subscribeChannel(bundleID: String, channelID: String)
    /// The activity on the channel ended: no more of its broadcasts.
    case unsubscribeChannel(channelID: String)
    /// Whether an installed app may update its Live Activities frequently (`frequentPushesEnabled`: it has
    /// `NSSupportsLiveActivitiesFrequentUpdates` and its person has not turned it off in Settings); sent
    /// on every connection (the gateway does not store it) and whenever it changes.
    case frequentPushes(bundleID: String, enabled: Bool)
}

/// What the gateway sends.
public enum GatewayMessage: Equatable, Sendable {
    case registered(deviceID: String, secret: String)
    case welcome(deviceID: String, apps: [InstalledApp], keepAliveSeconds: Int)
    case installed(InstalledApp)
    case uninstalled(bundleID: String)
    case notification(Delivery)
    case keepAliveAck(sequence: Int, notifications: [Delivery])
    /// The gateway is about to close the connection, and why (a `ClosingReason`'s raw value; a reason
    /// this side does not know is kept as it came).
    case closing(reason: String, reconnectAfterMilliseconds: Int?)
    case error(message: String)
    /// A Live Activity token the device asked for, once stored.
    case activityToken(bundleID: String, purpose: ActivityTokenPurpose, token: String)
    /// A subscription the device asked for, once stored.
    case channelSubscribed(bundleID: String, channelID: String)
}

public struct InstalledApp: Codable, Equatable, Sendable {
    public var bundleID: String
    public var token: String

    public init(bundleID: String, token: String) {
        self.bundleID = bundleID
        self.token = token
    }

    enum CodingKeys: String, CodingKey {
        case bundleID = "bundle_id"
        case token
    }
}

/// A notification as a device receives it.
public struct Delivery: Codable, Equatable, Sendable {
    public var apnsID: String
    public var topic: String
    public var bundleID: String
    public var pushType: String
    public var priority: Int
    public var collapseID: String?
    /// `alert` (user visible), `background` (a background wake: complete within `deadlineSeconds`) or `other`.
    public var kind: String
    public var deadlineSeconds: Int?
    /// Why it was delivered now (the policy's rule: on_budget, released_piggyback_keep_alive, …).
    public var rule: String
    /// The JSON payload as the provider sent it.
    public var payload: String
    /// The device token it was sent to: the app's, or one of its Live Activity tokens (which activity).
    public var token: String?
    /// A broadcast's channel (`apns-channel-id`): which activities it updates.
    public var channel: String?

    public init(
        apnsID: String, topic: String, bundleID: String, pushType: String, priority: Int, collapseID: String?,
        kind: String, deadlineSeconds: Int?, rule: String, payload: String, token: String? = nil,
        channel: String? = nil
    ) {
        self.token = token
        self.channel = channel
        self.apnsID = apnsID
        self.topic = topic
        self.bundleID = bundleID
        self.pushType = pushType
        self.priority = priority
        self.collapseID = collapseID
        self.kind = kind
        self.deadlineSeconds = deadlineSeconds
        self.rule = rule
        self.payload = payload
    }

    enum CodingKeys: String, CodingKey {
        case apnsID = "apns_id"
        case topic
        case bundleID = "bundle_id"
        case pushType = "push_type"
        case priority
        case collapseID = "collapse_id"
        case kind
        case deadlineSeconds = "deadline_seconds"
        case rule
        case payload
        case token
        case channel
    }
}
