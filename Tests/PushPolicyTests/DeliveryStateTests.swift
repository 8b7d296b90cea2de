import PushModel
import Testing

@testable import PushPolicy

/// Apple's delivery-state names from the policy's rule: every rule lands in exactly one state.
@Suite struct DeliveryStateTests {
    @Test func eachRuleNamesItsState() {
        #expect(DeliveryState(rule: nil, acknowledged: false, discarded: false) == .received)
        #expect(DeliveryState(rule: .alerting, acknowledged: false, discarded: false) == .received)
        #expect(DeliveryState(rule: .alerting, acknowledged: true, discarded: false) == .deliveredToDevice)
        #expect(DeliveryState(rule: .onBudget, acknowledged: true, discarded: false) == .deliveredToDevice)
        #expect(DeliveryState(rule: .reconnect, acknowledged: true, discarded: false) == .deliveredFromStorage)
        #expect(DeliveryState(rule: .piggybackAlert, acknowledged: true, discarded: false) == .deliveredFromStorage)
        #expect(DeliveryState(rule: .offline, acknowledged: false, discarded: false) == .storedDeviceOffline)
        for rule in [
            Rule.overBudget, .forceQuit, .lowPowerMode, .backgroundAppRefreshOff, .lowPriority, .deferredPowerSaving,
        ] {
            #expect(DeliveryState(rule: rule, acknowledged: false, discarded: false) == .storedPowerConsiderations)
        }
        for rule in [Rule.coalescedNewest, .coalescedCollapseID, .overflow] {
            #expect(DeliveryState(rule: rule, acknowledged: false, discarded: true) == .discardedCoalesced)
        }
        for rule in [Rule.expired, .expiredOnArrival, .notStoredExpirationZero] {
            #expect(DeliveryState(rule: rule, acknowledged: false, discarded: true) == .discardedExpired)
        }
        #expect(
            DeliveryState(rule: .tokenUnregistered, acknowledged: false, discarded: true) == .discardedTokenUnregistered
        )
    }

    @Test func everyRuleIsOneKindOfDecision() {
        for rule in Rule.allCases {
            let kinds = [rule.isDelivery, rule.isHeld, rule.isDiscard].filter { $0 }.count
            #expect(kinds == 1, "\(rule) is \(kinds) kinds of decision")
        }
    }

    @Test func uninstallingDiscardsWhatTheAppHeld() {
        var pushes = Pushes()
        var engine = ThrottleEngine()
        engine.disconnected(device: 4, now: t0)
        let held = pushes.make(.alerting)
        #expect(engine.received(held, device: 4, now: t0).rules == [.offline])
        let actions = engine.uninstalled(device: 4, bundleID: "com.example.app", now: t0.adding(seconds: 1))
        #expect(actions == [.discard(held.id, rule: .tokenUnregistered)])
        #expect(engine.counters.unregistered == 1)
        #expect(engine.counters.heldNow == 0)
        #expect(engine.connected(device: 4, now: t0.adding(seconds: 2)).isEmpty, "nothing left to release")
    }
}
