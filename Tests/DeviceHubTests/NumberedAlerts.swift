import Foundation
import PushModel

/// Alerts to the hub's devices named by number (apns-id `…-<number>`), at one instant, for tests that
/// drive a `DeviceHub` directly.
enum NumberedAlerts {
    static let t0 = UnixTime(seconds: 1_800_000_000)

    static func alert(_ token: DeviceToken, _ number: Int) -> PushNotification {
        PushNotification(
            id: APNsID(header: String(format: "00000000-0000-4000-8000-%012d", number))!, deviceToken: token,
            topic: Topic("com.example.app")!, bundleID: "com.example.app", pushType: .alert, priority: .immediate,
            expiration: .storeByDefault, collapseID: nil, notificationClass: .alerting, payload: [], teamID: nil,
            receivedAt: t0)
    }
}
