import GatewayCore
import PushModel
import PushPolicy
import Testing

/// The gateway's pure core with plain instants: a device's session that acknowledges at once
/// (`routeInstant`, the forecast's) delivers exactly what the queue does for a session that acknowledges
/// every write (`route`, then `acknowledged`: the hub's with a prompt device).
@Suite struct HubCoreTests {
    static let t0 = UnixTime(seconds: 1_800_000_000)
    static let token = DeviceToken(String(repeating: "ab", count: 32))!
    static let apps = ["com.example.news", "com.example.chat"]

    static func push(_ number: Int, silent: Bool, app: Int, at now: UnixTime) -> PushNotification {
        PushNotification(
            id: APNsID(high: 1, low: UInt64(number)), deviceToken: token, topic: Topic(apps[app])!,
            bundleID: apps[app], pushType: silent ? .background : .alert,
            priority: silent ? .conservePower : .immediate, expiration: .storeByDefault,
            collapseID: silent ? CollapseID(header: "content") : nil, notificationClass: silent ? .silent : .alerting,
            payload: [], teamID: nil, receivedAt: now)
    }

    /// What a device was given: each push with its rule and whether it wakes the app.
    struct Given: Equatable {
        var id: APNsID
        var rule: Rule
        var wake: Bool
    }

    /// Drives one core through a seeded script of pushes, keep-alives, app states, completions and time,
    /// each delivery acknowledged at once, the one way or the other.
    static func run(seed: UInt64, instant: Bool) -> (given: [Given], counters: PolicyCounters) {
        var settings = PolicySettings()
        settings.budgetCapacity = 3
        var core = HubCore(
            policy: ThrottleEngine(settings: settings), deliveries: DeliveryQueues(window: 2, limit: 100))
        var random = seed
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        var now = t0
        var given: [Given] = []
        var writes: [CoreWrite] = []
        func deliver(_ actions: [PolicyAction]) {
            for action in actions {
                guard case .deliver(let push, let rule, let wake) = action else { continue }
                if instant {
                    core.routeInstant(push, rule: rule, wake: wake, to: 1, app: nil, now: now, writes: &writes)
                } else {
                    core.route(push, rule: rule, wake: wake, to: 1, now: now, writes: &writes)
                }
                var index = 0
                while index < writes.count {
                    let write = writes[index]
                    index += 1
                    given.append(Given(id: write.item.id, rule: write.item.rule, wake: write.item.wake))
                    if !write.acknowledged {
                        _ = core.acknowledged(write.item.id, by: 1, now: now, writes: &writes)
                    }
                }
                writes.removeAll()
            }
        }
        deliver(core.connected(1, now: now, writes: &writes))
        for number in 1...400 {
            now = now.adding(seconds: Int64(next(900)))
            let app = next(2)
            switch next(10) {
            case 0..<5: deliver(core.received(push(number, silent: true, app: app, at: now), device: 1, now: now))
            case 5, 6: deliver(core.received(push(number, silent: false, app: app, at: now), device: 1, now: now))
            case 7: deliver(core.policy.keepAlive(device: 1, now: now))
            case 8:
                let states: [AppState] = [.foreground, .background, .suspended]
                deliver(
                    core.policy.appStateChanged(
                        device: 1, bundleID: apps[app], to: states[next(3)], now: now))
            default: deliver(core.policy.advance(to: now))
            }
        }
        return (given, core.policy.counters)
    }

    @Test(arguments: [1, 2, 3, 42] as [UInt64]) func anInstantSessionIsGivenWhatAQueueGivesAPromptOne(seed: UInt64) {
        let queued = Self.run(seed: seed, instant: false)
        let instant = Self.run(seed: seed, instant: true)
        #expect(queued.given.count > 100)
        #expect(instant.given == queued.given)
        #expect(instant.counters == queued.counters)
    }

    /// With something outstanding for the device (its queue not empty), an instant delivery waits its turn.
    @Test func anInstantDeliveryQueuesBehindWhatIsOutstanding() {
        var core = HubCore(policy: ThrottleEngine(), deliveries: DeliveryQueues(window: 1, limit: 100))
        var writes: [CoreWrite] = []
        _ = core.connected(1, now: Self.t0, writes: &writes)
        let first = Self.push(1, silent: false, app: 0, at: Self.t0)
        let second = Self.push(2, silent: false, app: 0, at: Self.t0)
        core.route(first, rule: .alerting, wake: false, to: 1, now: Self.t0, writes: &writes)
        #expect(writes.map(\.item.id) == [first.id])
        core.routeInstant(second, rule: .alerting, wake: false, to: 1, app: nil, now: Self.t0, writes: &writes)
        #expect(writes.map(\.item.id) == [first.id], "the window of one is taken: it waits in the queue")
        writes.removeAll()
        _ = core.acknowledged(first.id, by: 1, now: Self.t0, writes: &writes)
        #expect(writes.map(\.item.id) == [second.id])
        #expect(writes.allSatisfy { !$0.acknowledged })
    }
}
