import DeviceProtocol
import GatewayCore
import Logging
import NIOPosix
import PushModel
import PushPolicy
import Synchronization
import TestSupport
import Testing

@testable import DeviceHub

/// The real hub and the forecast's driver give a device the same pushes (issue 48, item 1): one seeded
/// script of pushes, keep-alives, app states and time, driven through `DeviceHub` — its intake, its
/// locks, its write path — with an embedded session that records what is written to it and acknowledges
/// it, and through `HubCore.routeInstant`, the way the forecast's shard drives the same core with a
/// device that acknowledges at once. Each push given, in order, with its rule and whether it wakes the
/// app, must be the same.
@Suite struct ForecastDriverAgreementTests {
    static let apps = ["com.example.news", "com.example.chat"]
    static let t0 = UnixTime(seconds: 1_800_000_000)

    struct Given: Equatable, CustomStringConvertible {
        var id: String
        var rule: String
        var wake: Bool
        var description: String { "\(id.suffix(4)) \(rule)\(wake ? " wake" : "")" }
    }

    /// A session that names no socket: what the hub writes is kept, to be acknowledged by the driver.
    final class EmbeddedSession: DeviceSession {
        let written = Mutex<[Delivery]>([])
        func send(_ message: GatewayMessage) {
            if case .notification(let delivery) = message { written.withLock { $0.append(delivery) } }
        }
        func close(reason: String, reconnectAfterMilliseconds: Int?) {}
        var hasEnded: Bool { false }
        func take() -> [Delivery] {
            written.withLock { taken in
                defer { taken = [] }
                return taken
            }
        }
    }

    /// One step of the script.
    enum Step {
        case push(number: Int, silent: Bool, app: Int)
        case keepAlive
        case appState(app: Int, AppState)
        case advance
    }

    static func script(seed: UInt64) -> [(seconds: Int64, step: Step)] {
        var random = seed
        func next(_ bound: Int) -> Int {
            random = random &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((random >> 33) % UInt64(bound))
        }
        return (1...300).map { number in
            let seconds = Int64(next(900))
            let app = next(2)
            let step: Step
            switch next(10) {
            case 0..<5: step = .push(number: number, silent: true, app: app)
            case 5, 6: step = .push(number: number, silent: false, app: app)
            case 7: step = .keepAlive
            case 8: step = .appState(app: app, [.foreground, .background, .suspended][next(3)])
            default: step = .advance
            }
            return (seconds, step)
        }
    }

    static var policy: PolicySettings {
        var settings = PolicySettings()
        settings.budgetCapacity = 3
        return settings
    }

    static func push(_ number: Int, silent: Bool, app: Int, token: DeviceToken, at now: UnixTime) -> PushNotification {
        PushNotification(
            id: APNsID(high: 1, low: UInt64(number)), deviceToken: token, topic: Topic(apps[app])!,
            bundleID: apps[app], pushType: silent ? .background : .alert,
            priority: silent ? .conservePower : .immediate, expiration: .storeByDefault,
            collapseID: silent ? CollapseID(header: "content") : nil, notificationClass: silent ? .silent : .alerting,
            payload: Array((silent ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"hi"}}"#).utf8),
            teamID: nil, receivedAt: now)
    }

    /// Through the real hub: its intake, its device entry points and its tick, on a clock the test moves.
    static func throughTheHub(_ script: [(seconds: Int64, step: Step)]) -> [Given] {
        let clock = ManualClock(t0)
        var settings = HubSettings()
        settings.tickMilliseconds = 3_600_000
        let hub = DeviceHub(
            registry: DeviceRegistry(), policy: policy, settings: settings, logger: Logger(label: "test"),
            clock: { clock.now })
        let (_, _, slot) = hub.registry.register()
        let tokens = apps.map { hub.registry.install($0, on: slot)! }
        let session = EmbeddedSession()
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        var given: [Given] = []
        func record(_ deliveries: [Delivery]) {
            var pending = deliveries
            while !pending.isEmpty {
                for delivery in pending {
                    given.append(Given(id: delivery.apnsID, rule: delivery.rule, wake: delivery.kind == "background"))
                    hub.acknowledged(slot, apnsID: delivery.apnsID)
                }
                pending = session.take()
            }
        }
        hub.connected(slot, session: session)
        record(session.take())
        for (sequence, (seconds, step)) in script.enumerated() {
            clock.advance(seconds: seconds)
            switch step {
            case .push(let number, let silent, let app):
                _ = hub.submit(push(number, silent: silent, app: app, token: tokens[app], at: clock.now), on: loop)
                record(session.take())
            case .keepAlive:
                guard case .keepAliveAck(_, let inAnswer) = hub.keepAlive(slot, sequence: sequence) else {
                    Issue.record("a keep-alive answered with something else")
                    continue
                }
                record(inAnswer + session.take())
            case .appState(let app, let state):
                hub.appStateChanged(slot, bundleID: apps[app], state: state)
                record(session.take())
            case .advance:
                hub.tick()
                record(session.take())
            }
        }
        return given
    }

    /// Through the forecast's way: the same core, each delivery written to a session that acknowledges at
    /// once (`routeInstant`).
    static func throughTheForecastDriver(_ script: [(seconds: Int64, step: Step)]) -> [Given] {
        var core = HubCore(policy: ThrottleEngine(settings: policy), deliveries: DeliveryQueues(window: 1, limit: .max))
        let device: DeviceSlot = 0
        var now = t0
        var given: [Given] = []
        var writes: [CoreWrite] = []
        let token = DeviceToken(String(repeating: "ab", count: 32))!
        func deliver(_ actions: [PolicyAction]) {
            for action in actions {
                guard case .deliver(let push, let rule, let wake) = action else { continue }
                core.routeInstant(push, rule: rule, wake: wake, to: device, app: nil, now: now, writes: &writes)
                for write in writes {
                    given.append(Given(id: write.item.id.value, rule: write.item.rule.rawValue, wake: write.item.wake))
                }
                writes.removeAll()
            }
        }
        deliver(core.connected(device, now: now, writes: &writes))
        for (seconds, step) in script {
            now = now.adding(seconds: seconds)
            switch step {
            case .push(let number, let silent, let app):
                deliver(
                    core.received(
                        push(number, silent: silent, app: app, token: token, at: now), device: device, now: now))
            case .keepAlive: deliver(core.policy.keepAlive(device: device, now: now))
            case .appState(let app, let state):
                deliver(core.policy.appStateChanged(device: device, bundleID: apps[app], to: state, now: now))
            case .advance: deliver(core.policy.advance(to: now))
            }
        }
        return given
    }

    @Test(arguments: [1, 2, 3, 42] as [UInt64])
    func theHubAndTheForecastsDriverGiveTheSamePushes(seed: UInt64) {
        let script = Self.script(seed: seed)
        let hub = Self.throughTheHub(script)
        let forecast = Self.throughTheForecastDriver(script)
        #expect(!hub.isEmpty)
        #expect(Set(hub.map(\.rule)).count > 2, "the script reaches several rules: \(Set(hub.map(\.rule)))")
        let first = zip(hub, forecast).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(
            hub == forecast,
            "first difference at \(first ?? min(hub.count, forecast.count)) of \(hub.count) (hub) and \(forecast.count) (forecast): \(first.map { "\(hub[$0]) against \(forecast[$0])" } ?? "one is longer")"
        )
    }
}
