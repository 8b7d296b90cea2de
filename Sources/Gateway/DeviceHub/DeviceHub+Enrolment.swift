import DeviceProtocol
import Crypto
import Foundation
import Logging
import PushModel
import PushPolicy
import Synchronization

/// Who may become a device, and how devices stop being ones: the fleet's enrolment secret and a rate
/// per source address on `register`; removal by the operator (`pushgate devices remove`) and pruning of
/// devices not seen for `devices.prune_after_days`.
extension DeviceHub {
    enum EnrolmentVerdict: Equatable {
        case allowed
        case wrongSecret
        case limited
    }

    /// Whether a `register` from `address` presenting `secret` may enrol a new device (counted if so).
    func enrolment(presented secret: String?, from address: String) -> EnrolmentVerdict {
        if let expected = settings.enrolmentSecret {
            // Hashes, so that the comparison takes the same time whatever the lengths.
            let presented = DeviceRegistry.hash(secret ?? "")
            guard ConstantTime.equal(presented, DeviceRegistry.hash(expected)) else { return .wrongSecret }
        }
        if settings.enrolmentLimitSparesLoopback, Self.isLoopback(address) { return .allowed }
        return enrolmentLimiter.allowsRequest(for: address, now: clock()) ? .allowed : .limited
    }

    static func isLoopback(_ address: String) -> Bool {
        address.hasPrefix("127.") || address == "::1" || address.hasPrefix("::ffff:127.")
    }

    /// Removes a device: each of its apps is uninstalled (held pushes discarded, tokens answer 410
    /// Unregistered), it cannot connect again, and a connected session is closed. False when no such
    /// device is known here (or it was removed already).
    @discardableResult
    public func remove(deviceID: String, pruned: Bool = false) -> Bool {
        let now = clock()
        guard let (slot, bundleIDs) = registry.remove(deviceID, at: now) else { return false }
        forget(slot, bundleIDs: bundleIDs)
        count {
            if pruned { $0.devicesPruned += 1 } else { $0.devicesRemoved += 1 }
        }
        logger.notice(
            pruned ? "device pruned" : "device removed",
            metadata: ["device": "\(deviceID)", "apps": "\(bundleIDs.count)"])
        return true
    }

    /// A removed device's apps are uninstalled in the policy and its session, if any, closed.
    func forget(_ slot: DeviceSlot, bundleIDs: [String]) {
        for bundleID in bundleIDs { uninstalled(slot, bundleID: bundleID) }
        let session = core.withLock { $0.session(of: slot) }
        session?.close(.removed, reconnectAfterMilliseconds: nil)
    }

    /// Removes the devices that have not said hello for `settings.pruneAfterSeconds` (none when 0).
    /// Run from the hub's timer; returns how many went.
    @discardableResult
    public func pruneStaleDevices() -> Int {
        guard settings.pruneAfterSeconds > 0 else { return 0 }
        let cutoff = UnixTime(milliseconds: clock().milliseconds - settings.pruneAfterSeconds * 1000)
        var pruned = 0
        for id in registry.notSeen(since: cutoff)
        where core.withLock({ $0.session(of: registry.slot(ofDevice: id)!) == nil }) {
            if remove(deviceID: id, pruned: true) { pruned += 1 }
        }
        return pruned
    }
}
