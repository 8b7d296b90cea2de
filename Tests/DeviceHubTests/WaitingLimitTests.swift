import DeviceProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import PushIntake
import PushModel
import PushPolicy
import Synchronization
import Testing

@testable import DeviceHub

/// `devices.max_waiting` under concurrent POSTs: the check of a device's queue and the decision that
/// fills it happen under one lock, so pushes arriving together never take a device past its limit.
@Suite struct WaitingLimitTests {
    /// A connected device that reads and acknowledges nothing.
    final class SilentSession: DeviceSession {
        func write(_ item: Outgoing, shared: inout SharedEncodings) {}
        func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?) {}
        var hasEnded: Bool { false }
    }

    @Test func pushesArrivingTogetherNeverTakeADevicePastItsLimit() async throws {
        var settings = HubSettings()
        settings.deliveryWindow = 2
        settings.maximumWaiting = 4
        let hub = DeviceHub(
            registry: DeviceRegistry(), policy: PolicySettings(), settings: settings, logger: Logger(label: "test"),
            clock: { NumberedAlerts.t0 })
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 4)
        var number = 0
        var overLimit: [Int] = []
        for round in 0..<200 {
            // A connected device that acknowledges nothing: what it is sent waits in its queue.
            let slot = hub.registry.register().slot
            let token = try #require(hub.registry.install("com.example.app", on: slot))
            hub.connected(slot, session: SilentSession())
            let pushes = (0..<16).map { index in NumberedAlerts.alert(token, number + index) }
            number += 16
            // Sixteen at once, from four event loops.
            let futures = pushes.enumerated().map { index, push in
                let loop = group.any()
                return loop.submit { hub.submit(push, on: loop) }
            }
            var accepted = 0
            for future in futures {
                if case .now(.accepted) = try await future.get() { accepted += 1 }
            }
            if accepted != settings.maximumWaiting { overLimit.append(accepted) }
            _ = round
        }
        #expect(overLimit.isEmpty, "rounds that accepted other than 4 of 16: \(overLimit)")
        try await group.shutdownGracefully()
    }
}
