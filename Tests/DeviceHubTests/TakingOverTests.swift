import DeviceProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import PushIntake
import PushModel
import PushPolicy
import PushStore
import Synchronization
import Testing

@testable import DeviceHub

/// A device's state as a claim or a takeover gives it, applied to a device connected to this hub: a
/// claim and a takeover of one device race (the takeover locks the row first, this node's claim second,
/// and the takeover's answer, applied device by device, may come second), and a node may take over a
/// device it ran without having heard another node's claim of it. Found in `Benchmarks/fleet.sh 100000 7`
/// with 1,000 streams a node: alerts held `held_offline` for devices connected to their owner.
@Suite struct TakingOverTests {
    /// A connected device's session that records what is written to it.
    final class RecordingSession: DeviceSession {
        let written = Mutex<[APNsID]>([])
        func write(_ item: Outgoing, shared: inout SharedEncodings) { written.withLock { $0.append(item.id) } }
        func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?) {}
        var hasEnded: Bool { false }
    }

    static func state(claim: Int64, holding push: PushNotification) -> ClaimedDevice {
        ClaimedDevice(
            previousOwner: "node-b", claim: claim, budgets: [],
            pending: [
                StoredNotification(notification: push, expiresAt: nil, deviceID: nil, state: .pending, rule: .offline)
            ],
            subscriptions: [])
    }

    @Test func aConnectedDeviceStaysConnectedToItsNewStateAndAnOlderStateIsNotApplied() async throws {
        let hub = DeviceHub(
            registry: DeviceRegistry(), policy: PolicySettings(), settings: HubSettings(),
            logger: Logger(label: "test"), clock: { NumberedAlerts.t0 })
        let (deviceID, _, slot) = hub.registry.register()
        let token = try #require(hub.registry.install("com.example.app", on: slot))
        let session = RecordingSession()
        hub.connected(slot, session: session)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = group.next()

        // The state of claim 2, for the device connected here: what it held while away is released to it
        // at once, and the next alert goes straight out (before, both were held as for an offline device).
        let away = NumberedAlerts.alert(token, 1)
        #expect(hub.take(slot, deviceID: deviceID, Self.state(claim: 2, holding: away), owner: "node-a"))
        #expect(session.written.withLock { $0 } == [away.id])
        let first = NumberedAlerts.alert(token, 2)
        guard case .now(.accepted) = hub.submit(first, on: loop) else {
            Issue.record("the alert was not accepted")
            try await group.shutdownGracefully()
            return
        }
        #expect(session.written.withLock { $0 } == [away.id, first.id])
        #expect(hub.registry.owner(of: slot) == "node-a")

        // The state of an earlier claim (a takeover whose answer came second) is not applied: nothing it
        // holds is adopted, and the device keeps its state.
        let stale = NumberedAlerts.alert(token, 3)
        #expect(!hub.take(slot, deviceID: deviceID, Self.state(claim: 1, holding: stale), owner: "node-c"))
        let second = NumberedAlerts.alert(token, 4)
        guard case .now(.accepted) = hub.submit(second, on: loop) else {
            Issue.record("the alert was not accepted")
            try await group.shutdownGracefully()
            return
        }
        #expect(session.written.withLock { $0 } == [away.id, first.id, second.id])
        #expect(hub.registry.owner(of: slot) == "node-a")
        try await group.shutdownGracefully()
    }
}
