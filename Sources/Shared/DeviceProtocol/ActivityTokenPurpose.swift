/// Which Live Activity token a device asks for (`activity_token`). iOS hands an app a push-to-start token
/// per activity attributes type (`Activity.pushToStartTokenUpdates`, iOS 17.2+) and each started activity
/// its own update token (`Activity.pushTokenUpdates`); here the gateway plays APNs and issues both.
public enum ActivityTokenPurpose: Hashable, Sendable {
    /// The push-to-start token of an attributes type (`aps.attributes-type` of a `start`).
    case pushToStart(attributesType: String)
    /// The update token of one activity, named by the device.
    case update(activityID: String)

    /// How the store and the other nodes name it: `start:<type>` or `update:<activity id>`.
    public var key: String {
        switch self {
        case .pushToStart(let type): "start:" + type
        case .update(let id): "update:" + id
        }
    }

    public init?(key: String) {
        if key.hasPrefix("start:"), key.count > 6 {
            self = .pushToStart(attributesType: String(key.dropFirst(6)))
        } else if key.hasPrefix("update:"), key.count > 7 {
            self = .update(activityID: String(key.dropFirst(7)))
        } else {
            return nil
        }
    }
}
