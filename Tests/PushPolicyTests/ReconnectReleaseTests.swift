import PushModel
import Testing

@testable import PushPolicy

/// A reconnect hands over what was kept while the device was away, and nothing held for another reason
/// (issue 50): a push held over budget, at low priority or by a condition keeps its reason across the
/// reconnect, to the same node (the same engine) or to another (an engine that restores what the first
/// one handed over), and goes with the window its reason waits for.
@Suite struct ReconnectReleaseTests {
    /// A held reason, how to bring it about, and the event that ends the wait (with the rule it releases by).
    enum Reason: String, CaseIterable, CustomTestStringConvertible {
        case overBudget, lowPriority, forceQuit, lowPowerMode, backgroundAppRefreshOff, deferredPowerSaving

        var testDescription: String { rawValue }

        var rule: Rule {
            switch self {
            case .overBudget: return .overBudget
            case .lowPriority: return .lowPriority
            case .forceQuit: return .forceQuit
            case .lowPowerMode: return .lowPowerMode
            case .backgroundAppRefreshOff: return .backgroundAppRefreshOff
            case .deferredPowerSaving: return .deferredPowerSaving
            }
        }

        /// What releases it once the device is back: a keep-alive for the budget and the priority, the
        /// condition's end for a condition.
        var released: Rule {
            switch self {
            case .overBudget, .lowPriority: return .piggybackKeepAlive
            case .forceQuit: return .appOpened
            case .lowPowerMode, .backgroundAppRefreshOff, .deferredPowerSaving: return .conditionEnded
            }
        }

        /// Holds a push for this reason on `engine`'s connected device; returns it.
        func hold(on engine: inout ThrottleEngine, _ pushes: inout Pushes, device: DeviceSlot) -> PushNotification {
            switch self {
            case .overBudget:
                for _ in 0..<3 { _ = engine.received(pushes.make(.silent), device: device, now: t0) }
            case .forceQuit:
                _ = engine.appStateChanged(device: device, bundleID: "com.example.app", to: .forceQuit, now: t0)
            case .lowPowerMode, .deferredPowerSaving:
                _ = engine.conditionsChanged(
                    device: device, lowPowerMode: true, backgroundAppRefreshOff: false, now: t0)
            case .backgroundAppRefreshOff:
                _ = engine.conditionsChanged(
                    device: device, lowPowerMode: false, backgroundAppRefreshOff: true, now: t0)
            case .lowPriority: break
            }
            let push: PushNotification
            switch self {
            case .lowPriority: push = pushes.make(.silent, priority: .low)
            case .deferredPowerSaving: push = pushes.make(.alerting, priority: .conservePower)
            default: push = pushes.make(.silent)
            }
            #expect(engine.received(push, device: device, now: t0).rules == [rule])
            return push
        }

        /// The event that ends the wait, after the reconnect.
        func end(on engine: inout ThrottleEngine, device: DeviceSlot, at now: UnixTime) -> [PolicyAction] {
            switch self {
            case .overBudget, .lowPriority: return engine.keepAlive(device: device, now: now)
            case .forceQuit:
                return engine.appStateChanged(device: device, bundleID: "com.example.app", to: .foreground, now: now)
            case .lowPowerMode, .deferredPowerSaving, .backgroundAppRefreshOff:
                return engine.conditionsChanged(
                    device: device, lowPowerMode: false, backgroundAppRefreshOff: false, now: now)
            }
        }

        /// The event that ends the wait releases `held`, by the rule this reason waits for.
        func expectReleased(_ held: PushNotification, on engine: inout ThrottleEngine, device: DeviceSlot) {
            let ended = end(on: &engine, device: device, at: t0.plus(minutes: 3))
            #expect(ended.delivered.map(\.0) == [held.id])
            #expect(ended.delivered.map(\.1) == [released])
        }
    }

    @Test(arguments: Reason.allCases)
    func aReconnectToTheSameNodeKeepsThePushWaitingForItsWindow(reason: Reason) {
        var pushes = Pushes()
        var engine = ThrottleEngine()
        let held = reason.hold(on: &engine, &pushes, device: 4)
        engine.disconnected(device: 4, now: t0.plus(minutes: 1))
        #expect(engine.connected(device: 4, now: t0.plus(minutes: 2)).isEmpty, "a reconnect is no delivery window")
        #expect(
            engine.snapshot(device: 4, bundleID: "com.example.app", now: t0.plus(minutes: 2))?.held.map(\.rule) == [
                reason.rule
            ])
        reason.expectReleased(held, on: &engine, device: 4)
        #expect(engine.counters.releasedOnReconnect == 0)
    }

    @Test(arguments: Reason.allCases)
    func aReconnectToAnotherNodeKeepsThePushWaitingForItsWindow(reason: Reason) {
        var pushes = Pushes()
        var first = ThrottleEngine()
        let held = reason.hold(on: &first, &pushes, device: 4)
        // The device leaves; another node takes it over with its budgets and its held pushes.
        first.disconnected(device: 4, now: t0.plus(minutes: 1))
        let budgets = first.budgets(of: 4)
        let handed = first.release(device: 4)
        #expect(handed.map(\.rule) == [reason.rule])
        var second = ThrottleEngine()
        let budget = budgets.first { $0.bundleID == "com.example.app" }?.budget ?? .untouched
        #expect(second.restore(device: 9, bundleID: "com.example.app", budget: budget, held: handed).isEmpty)
        #expect(second.connected(device: 9, now: t0.plus(minutes: 2)).isEmpty, "a reconnect is no delivery window")
        reason.expectReleased(held, on: &second, device: 9)
    }

    /// What came while the device was away goes with the reconnect, beside a push held over budget that
    /// keeps waiting; on another node alike.
    @Test func whatWasKeptWhileAwayGoesWithTheReconnect() {
        var pushes = Pushes()
        var settings = PolicySettings()
        settings.heldStorage = .upTo(5)
        var engine = ThrottleEngine(settings: settings)
        let overBudget = Reason.overBudget.hold(on: &engine, &pushes, device: 2)
        engine.disconnected(device: 2, now: t0.plus(minutes: 1))
        let away = pushes.make(.alerting, at: t0.plus(minutes: 1))
        #expect(engine.received(away, device: 2, now: t0.plus(minutes: 1)).rules == [.offline])

        // The same node (the engine as it is), and another that takes the device over.
        let same = engine
        var other = ThrottleEngine(settings: settings)
        let budget = engine.budgets(of: 2)[0].budget
        _ = other.restore(device: 2, bundleID: "com.example.app", budget: budget, held: engine.release(device: 2))
        for var node in [same, other] {
            let back = node.connected(device: 2, now: t0.plus(minutes: 2))
            #expect(back.delivered.map(\.0) == [away.id])
            #expect(back.delivered.map(\.1) == [.reconnect])
            #expect(node.keepAlive(device: 2, now: t0.plus(minutes: 3)).deliveredIDs == [overBudget.id])
        }
    }
}
