/// What the gateway needs to know about a payload, read in one pass by `PayloadScanner`.
public struct PayloadSummary: Equatable, Sendable {
    /// The payload has an `aps` object.
    public var hasAPS = false
    public var hasAlert = false
    public var hasSound = false
    public var hasBadge = false
    /// `aps.content-available` is the number 1.
    public var contentAvailable = false
    /// `aps.content-changed` is true (widgets).
    public var contentChanged = false
    /// `aps.mutable-content` is the number 1.
    public var mutableContent = false
    /// `aps.event` (live activities).
    public var event: String?

    public init() {}

    /// A user-visible notification: it has an alert, a sound or a badge.
    public var isAlerting: Bool { hasAlert || hasSound || hasBadge }

    /// A background (silent) push: `content-available: 1` and none of alert, sound, badge.
    public var isSilent: Bool { contentAvailable && !isAlerting }
}

/// How an accepted notification is treated by the rest of the system.
public enum NotificationClass: String, Sendable, Codable, CaseIterable {
    /// User-visible (alert, sound or badge): delivered at once, never throttled.
    case alerting
    /// Background wake (`content-available: 1` alone): throttled per device and app.
    case silent
    /// Another push type (voip, widgets, live activity, …), delivered as its own kind; or an alert-typed
    /// push that carries neither visible content nor `content-available`.
    case other

    public static func classify(pushType: PushType, payload: PayloadSummary) -> NotificationClass {
        switch pushType {
        case .background: return .silent
        case .alert:
            if payload.isAlerting { return .alerting }
            return payload.isSilent ? .silent : .other
        default: return .other
        }
    }
}
