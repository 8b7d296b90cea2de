import Foundation
import PushModel

@testable import PushPolicy

let t0 = UnixTime(seconds: 1_800_000_000)

extension UnixTime {
    func plus(minutes: Int64) -> UnixTime { adding(seconds: minutes * 60) }
}

/// Builds notifications the way the provider API would hand them over.
struct Pushes {
    private var counter = 0
    var token = DeviceToken(String(repeating: "ab", count: 32))!

    mutating func make(
        _ kind: NotificationClass, bundle: String = "com.example.app", priority: Priority? = nil,
        expiration: Expiration = .storeByDefault, collapseID: String? = nil, mismatch: PushTypeMismatch? = nil,
        at now: UnixTime = t0
    ) -> PushNotification {
        counter += 1
        let id = APNsID(header: String(format: "00000000-0000-4000-8000-%012d", counter))!
        let type: PushType = kind == .silent ? .background : kind == .alerting ? .alert : .voip
        return PushNotification(
            id: id, deviceToken: token, topic: Topic(bundle)!, bundleID: bundle, pushType: type,
            priority: priority ?? (kind == .silent ? .conservePower : .immediate), expiration: expiration,
            collapseID: collapseID.flatMap { CollapseID(header: $0) }, notificationClass: kind, mismatch: mismatch,
            payload: [],
            teamID: nil, receivedAt: now)
    }
}

extension Pushes {
    /// A Live Activity update to the activity named by `activity` (its update token).
    mutating func liveActivity(
        activity: DeviceToken, priority: Priority = .immediate, bundle: String = "com.example.app",
        expiration: Expiration = .storeByDefault, at now: UnixTime = t0
    ) -> PushNotification {
        let base = make(.other, bundle: bundle, priority: priority, expiration: expiration, at: now)
        return PushNotification(
            id: base.id, deviceToken: activity, topic: Topic(bundle + ".push-type.liveactivity")!, bundleID: bundle,
            pushType: .liveactivity, priority: priority, expiration: expiration, collapseID: nil,
            notificationClass: .other, payload: [], teamID: nil, receivedAt: now)
    }
}

extension Array where Element == PolicyAction {
    var delivered: [(APNsID, Rule, Bool)] {
        compactMap {
            if case .deliver(let push, let rule, let wake) = $0 { return (push.id, rule, wake) }
            return nil
        }
    }
    var deliveredIDs: [APNsID] { delivered.map(\.0) }
    var rules: [Rule] {
        compactMap {
            switch $0 {
            case .deliver(_, let rule, _), .hold(_, let rule), .discard(_, let rule): return rule
            default: return nil
            }
        }
    }
}
