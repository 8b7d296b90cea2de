/// Where a push stands, named as Apple's Push Notifications Console names it in its delivery log. The
/// policy's rule is the detail under each state (`held_over_budget`, `coalesced_newer_push`, …).
public enum DeliveryState: String, Sendable, CaseIterable, Codable {
    /// Accepted; not yet decided, or decided for delivery and not yet acknowledged by the device.
    case received = "Received"
    /// Acknowledged by the device, delivered when it was accepted.
    case deliveredToDevice = "Delivered to Device"
    /// Acknowledged by the device after it was stored (released by a delivery window or a reconnect).
    case deliveredFromStorage = "Delivered (From Storage)"
    /// Stored while the device was unreachable.
    case storedDeviceOffline = "Stored – Device Offline"
    /// Held by the silent budget, Low Power Mode, Background App Refresh off, a force-quit app, or a
    /// low priority.
    case storedPowerConsiderations = "Stored – Power Considerations"
    /// The app was uninstalled while the push was stored.
    case discardedTokenUnregistered = "Discarded – Token Unregistered"
    /// Past its apns-expiration (or `apns-expiration: 0` with the device unreachable).
    case discardedExpired = "Discarded – Expired"
    /// Replaced by a newer push (same collapse id, newest only, or beyond the storage limit).
    case discardedCoalesced = "Discarded – Coalesced"

    /// The label value in metrics (`pushgate_delivery_states_total{state=…}`).
    public var label: String {
        switch self {
        case .received: "received"
        case .deliveredToDevice: "delivered_to_device"
        case .deliveredFromStorage: "delivered_from_storage"
        case .storedDeviceOffline: "stored_device_offline"
        case .storedPowerConsiderations: "stored_power_considerations"
        case .discardedTokenUnregistered: "discarded_token_unregistered"
        case .discardedExpired: "discarded_expired"
        case .discardedCoalesced: "discarded_coalesced"
        }
    }

    /// The state of a push whose last decision was `rule`, acknowledged by its device or not, discarded or not.
    public init(rule: Rule?, acknowledged: Bool, discarded: Bool) {
        if acknowledged {
            self = rule?.isRelease == true ? .deliveredFromStorage : .deliveredToDevice
        } else if discarded || rule?.isDiscard == true {
            switch rule {
            case .tokenUnregistered: self = .discardedTokenUnregistered
            case .coalescedCollapseID, .coalescedNewest, .overflow: self = .discardedCoalesced
            default: self = .discardedExpired
            }
        } else {
            switch rule {
            case .offline: self = .storedDeviceOffline
            case .some(let rule) where rule.isHeld: self = .storedPowerConsiderations
            default: self = .received
            }
        }
    }
}
