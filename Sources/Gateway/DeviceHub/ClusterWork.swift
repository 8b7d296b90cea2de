import PushModel
import PushPolicy
import PushStore
import Synchronization

/// What a node of several keeps about the work between them, under one lock (`DeviceHub.clusterWork`).
struct ClusterWork: Sendable {
    /// Devices this node is taking over, with the work that waits until their state is loaded (called
    /// with whether the claim succeeded).
    var claims = ClaimTable<@Sendable (Bool) -> Void>()
    /// Notifications this node's policy took from the store (routed or loaded with a claimed device),
    /// so that one arriving both ways runs once.
    var adopted = RecentSet<APNsID>(capacity: 65_536)
    /// Routed notices waiting to be loaded, in the order they came, and whether a task is loading them.
    var routes: (keys: [NotificationKey], draining: Bool) = ([], false)
    /// Devices whose claim waits for the store, in the order they came, and whether a task is claiming
    /// them (those that arrive meanwhile go in its next transaction).
    var claimQueue: (devices: [DeviceSlot], draining: Bool) = ([], false)
}

extension DeviceHub {
    func withClaims<Result>(_ body: (inout ClaimTable<@Sendable (Bool) -> Void>) -> Result) -> Result {
        clusterWork.withLock { body(&$0.claims) }
    }

    func withAdopted<Result>(_ body: (inout RecentSet<APNsID>) -> Result) -> Result {
        clusterWork.withLock { body(&$0.adopted) }
    }

    func withRoutes<Result>(_ body: (inout (keys: [NotificationKey], draining: Bool)) -> Result) -> Result {
        clusterWork.withLock { body(&$0.routes) }
    }

    func withClaimQueue<Result>(_ body: (inout (devices: [DeviceSlot], draining: Bool)) -> Result) -> Result {
        clusterWork.withLock { body(&$0.claimQueue) }
    }
}
