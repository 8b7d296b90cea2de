import DeviceProtocol
import GatewayCore
import Logging
import NIOPosix
import PushIntake
import PushModel
import PushPolicy
import Synchronization
import TestSupport
import Testing

@testable import DeviceHub

/// The real hub and the forecast's driver give a device the same pushes (issue 48, item 1): one seeded
/// script of pushes, Live Activity updates, broadcasts on a channel the device subscribes to part way
/// (its newest message caught up then), keep-alives, app states, frequent-update changes and time,
/// driven through `DeviceHub` — its intake, its broadcast intake, its locks, its write path — with an
/// embedded session that records what is written to it and acknowledges it, and through `HubCore` the
/// way the forecast's shard drives it: deliveries by `routeInstant`, broadcasts by `published` and
/// `fanOut`, the subscription by `subscribe`, and every write not acknowledged yet acknowledged at once.
/// Each push given, in order, with its rule and whether it wakes the app, must be the same.
///
/// Not in the script, because a forecast's devices never do it: a connection that ends with writes not
/// acknowledged (the hub's resends; `HubStateTests` and `AcknowledgedDeliveryTests` cover them).
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
        let written = Mutex<[Outgoing]>([])
        func write(_ item: Outgoing, shared: inout SharedEncodings) { written.withLock { $0.append(item) } }
        func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?) {}
        var hasEnded: Bool { false }
        func take() -> [Outgoing] {
            written.withLock { taken in
                defer { taken = [] }
                return taken
            }
        }
    }

    /// One step of the script.
    enum Step {
        case push(number: Int, silent: Bool, app: Int)
        /// An update to the Live Activity of app 0, at priority 10 or 5.
        case liveActivity(number: Int, immediate: Bool)
        /// A broadcast on app 0's channel.
        case broadcast(number: Int)
        /// The activity subscribes to app 0's channel (once; later ones change nothing).
        case subscribe
        case frequentUpdates(Bool)
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
        return (1...400).map { number in
            let seconds = Int64(next(600))
            let app = next(2)
            let step: Step
            switch next(16) {
            case 0..<5: step = .push(number: number, silent: true, app: app)
            case 5, 6: step = .push(number: number, silent: false, app: app)
            case 7, 8: step = .liveActivity(number: number, immediate: next(4) != 0)
            case 9, 10: step = .broadcast(number: number)
            case 11: step = next(3) == 0 ? .subscribe : .frequentUpdates(next(2) == 0)
            case 12: step = .keepAlive
            case 13: step = .appState(app: app, [.foreground, .background, .suspended][next(3)])
            default: step = .advance
            }
            return (seconds, step)
        }
    }

    static var policy: PolicySettings {
        var settings = PolicySettings()
        settings.budgetCapacity = 3
        settings.liveActivityCapacity = 3
        settings.liveActivityFrequentCapacity = 5
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

    static let livePayload = Array(
        #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"version":1}}}"#.utf8)

    static func liveActivity(_ number: Int, immediate: Bool, token: DeviceToken, at now: UnixTime) -> PushNotification {
        PushNotification(
            id: APNsID(high: 1, low: UInt64(number)), deviceToken: token,
            topic: Topic(apps[0] + (PushType.liveactivity.topicSuffix ?? ""))!, bundleID: apps[0],
            pushType: .liveactivity, priority: immediate ? .immediate : .conservePower, expiration: .storeByDefault,
            collapseID: nil, notificationClass: .other, payload: livePayload, teamID: nil, receivedAt: now)
    }

    static func broadcastID(_ number: Int) -> APNsID { APNsID(high: 2, low: UInt64(number)) }

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
        let activity = hub.registry.activityToken(apps[0], activity: "score", on: slot)!
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        guard
            case .success(let (channel, _)) = hub.channels.create(
                bundleID: apps[0], policy: .mostRecentMessageStored, now: clock.now, answeringOn: loop)
        else {
            Issue.record("no channel")
            return []
        }
        let session = EmbeddedSession()
        var given: [Given] = []
        func record(_ written: [Outgoing]) {
            var pending = written
            while !pending.isEmpty {
                for item in pending {
                    given.append(Given(id: item.id.value, rule: item.rule.rawValue, wake: item.wake))
                    hub.acknowledged(slot, apnsID: item.id.value)
                }
                pending = session.take()
            }
        }
        hub.connected(slot, session: session)
        record(session.take())
        for (seconds, step) in script {
            clock.advance(seconds: seconds)
            switch step {
            case .push(let number, let silent, let app):
                _ = hub.submit(push(number, silent: silent, app: app, token: tokens[app], at: clock.now), on: loop)
            case .liveActivity(let number, let immediate):
                _ = hub.submit(liveActivity(number, immediate: immediate, token: activity, at: clock.now), on: loop)
            case .broadcast(let number):
                _ = hub.broadcast(
                    BroadcastSubmission(
                        id: broadcastID(number), channel: channel, priority: .immediate,
                        expiration: .storeByDefault, payload: livePayload, teamID: nil),
                    on: loop)
            case .subscribe:
                _ = hub.subscribe(slot, bundleID: apps[0], channel: channel.id, answeringOn: loop)
            case .frequentUpdates(let enabled):
                hub.frequentPushesChanged(slot, bundleID: apps[0], enabled: enabled)
            case .keepAlive:
                record(hub.keepAlive(slot))
            case .appState(let app, let state):
                hub.appStateChanged(slot, bundleID: apps[app], state: state)
            case .advance:
                hub.tick()
            }
            record(session.take())
        }
        return given
    }

    /// Through the forecast's way: the same core, each delivery written to a session that acknowledges at
    /// once (`routeInstant`), each other write acknowledged as the shard's `deliver` does.
    static func throughTheForecastDriver(_ script: [(seconds: Int64, step: Step)]) -> [Given] {
        var core = HubCore(policy: ThrottleEngine(settings: policy), deliveries: DeliveryQueues(window: 1, limit: .max))
        let device: DeviceSlot = 0
        var now = t0
        var given: [Given] = []
        let tokens = apps.map { _ in DeviceToken(String(repeating: "ab", count: 32))! }
        let activity = DeviceToken(String(repeating: "cd", count: 32))!
        let channel = ChannelID("AAAAAAAAAAAAAAAAAAAAAA==")!
        var subscribers: [DeviceSlot] = []
        func drain(_ written: [CoreWrite]) {
            var writes = written
            var index = 0
            while index < writes.count {
                let write = writes[index]
                index += 1
                given.append(Given(id: write.item.id.value, rule: write.item.rule.rawValue, wake: write.item.wake))
                if !write.acknowledged { _ = core.acknowledged(write.item.id, by: device, now: now, writes: &writes) }
            }
        }
        func deliver(_ actions: [PolicyAction]) {
            var writes: [CoreWrite] = []
            for action in actions {
                guard case .deliver(let push, let rule, let wake) = action else { continue }
                core.routeInstant(push, rule: rule, wake: wake, to: device, app: nil, now: now, writes: &writes)
                drain(writes)
                writes.removeAll()
            }
        }
        var writes: [CoreWrite] = []
        let actions = core.connected(device, now: now, writes: &writes)
        drain(writes)
        deliver(actions)
        for (seconds, step) in script {
            now = now.adding(seconds: seconds)
            writes.removeAll()
            switch step {
            case .push(let number, let silent, let app):
                deliver(
                    core.received(
                        push(number, silent: silent, app: app, token: tokens[app], at: now), device: device, now: now))
            case .liveActivity(let number, let immediate):
                deliver(
                    core.received(
                        liveActivity(number, immediate: immediate, token: activity, at: now), device: device, now: now))
            case .broadcast(let number):
                let push = PushNotification(
                    id: broadcastID(number), deviceToken: BroadcastMessage.noDevice,
                    topic: Topic(apps[0] + (PushType.liveactivity.topicSuffix ?? ""))!, bundleID: apps[0],
                    pushType: .liveactivity, priority: .immediate, expiration: .storeByDefault, collapseID: nil,
                    notificationClass: .other, payload: livePayload, teamID: nil, receivedAt: now,
                    broadcast: BroadcastStamp(channel: channel, sequence: Int64(number)))
                let message = BroadcastMessage(
                    push: push,
                    deliverableUntil: BroadcastMessage.deliverableUntil(
                        policy: .mostRecentMessageStored, expiration: .storeByDefault, acceptedAt: now,
                        graceMilliseconds: 0))
                _ = core.broadcasts.published(message)
                core.fanOut(message, to: subscribers[...], now: now, writes: &writes)
                drain(writes)
            case .subscribe:
                if core.subscribe(
                    device, to: channel, bundleID: apps[0], storage: .mostRecentMessageStored, now: now,
                    writes: &writes) != nil
                {
                    subscribers.append(device)
                }
                drain(writes)
            case .frequentUpdates(let enabled):
                core.policy.frequentPushesChanged(device: device, bundleID: apps[0], enabled: enabled, now: now)
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
        let rules = Set(hub.map(\.rule))
        for rule in [Rule.broadcast, .broadcastCaughtUp, .liveActivityOnBudget, .alerting, .onBudget] {
            #expect(rules.contains(rule.rawValue), "the script reaches \(rule): \(rules)")
        }
        let first = zip(hub, forecast).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        #expect(
            hub == forecast,
            "first difference at \(first ?? min(hub.count, forecast.count)) of \(hub.count) (hub) and \(forecast.count) (forecast): \(first.map { "\(hub[$0]) against \(forecast[$0])" } ?? "one is longer")"
        )
    }
}
