import AsyncHTTPClient
import DeviceProtocol
import DeviceRuntime
import NIOCore
import PushModel
import Synchronization

/// Many simulated devices in one process, as `pushgate simulate` and `pushgate demo` run them. Either
/// plain agents, which answer wakes as an `AgentProfile` says and, over time, force-quit apps and enter
/// Low Power Mode at its rates; or iPhones, each running iOS's background rules (`RuntimeShell`) for a
/// kind of iPhone (`IPhoneProfile`), its users, and real transfers from a content server, whose every
/// action goes to `freshness`.
public final class SimulatedFleet: Sendable {
    public let agents: [DeviceAgent]
    public let counters = SimulationCounters()
    /// iPhones only: what they did, and the freshness report.
    public let freshness: FleetFreshness?
    private let plain: (apps: [String], profile: AgentProfile, seed: UInt64)?
    /// The devices' HTTP clients, one for each 64 (`TransferClients`; none for plain agents whose wakes
    /// do not fetch).
    private let http: [HTTPClient]
    private let lifeEvents = Mutex<[RepeatedTask]>([])

    /// Plain agents on the device port `host:port`.
    public convenience init(
        host: String, port: Int, devices: Int, apps: [String], profile: AgentProfile, enrolment: String? = nil,
        seed: UInt64 = 1, group: any EventLoopGroup
    ) {
        self.init(
            endpoints: [.init(host: host, port: port)], devices: devices, apps: apps, profile: profile,
            enrolment: enrolment, seed: seed, group: group)
    }

    /// Plain agents spread over `endpoints` (a fleet's nodes: device i starts at endpoint i modulo their
    /// count, and moves to the next when its node goes away).
    public init(
        endpoints: [DeviceAgent.Endpoint], devices: Int, apps: [String], profile: AgentProfile,
        enrolment: String? = nil, seed: UInt64 = 1, group: any EventLoopGroup
    ) {
        plain = (apps, profile, seed)
        freshness = nil
        // Only a profile whose wakes fetch needs clients.
        let http = profile.fetch_url.isEmpty ? [] : TransferClients.make(devices: devices, group: group)
        self.http = http
        let counters = self.counters
        // Device i is seeded `seed + i`: its wakes' answers, keep-alives, force-quits and Low Power periods.
        agents = (0..<devices).map { index in
            DeviceAgent(
                endpoints: endpoints, first: index, apps: apps, enrolment: enrolment,
                behaviour: profile.behaviour(seed: seed &+ UInt64(index), apps: apps),
                http: http.isEmpty ? nil : http[TransferClients.clientIndex(of: index)],
                seed: seed &+ UInt64(index),
                loopbackSource: DeviceAgent.loopbackSource(of: seed &+ UInt64(index)), group: group,
                onEvent: { counters.record($0) })
        }
    }

    /// A fleet of iPhones: `mix` says how many devices of each kind; they fetch from `origin`
    /// (`http://host:port`, serving `/manifest` and `/items/<n>`). Device i is seeded `seed + i`. Every
    /// device is made at one instant (`freshness.startedAt`); their users stop at `usersUntil`, if given.
    public convenience init(
        host: String, port: Int, mix: [(name: String, profile: IPhoneProfile, devices: Int)], origin: String,
        enrolment: String? = nil, seed: UInt64 = 1, usersUntil: UnixTime? = nil, group: any EventLoopGroup,
        clock: @escaping @Sendable () -> UnixTime
    ) {
        self.init(
            endpoints: [.init(host: host, port: port)], mix: mix, origin: origin, enrolment: enrolment, seed: seed,
            usersUntil: usersUntil, group: group, clock: clock)
    }

    /// iPhones spread over `endpoints`, as the plain agents are. `channels`: each app's broadcast channels,
    /// one for each of its Live Activities that follows a channel (`AppProfile.channels`), in order.
    public init(
        endpoints: [DeviceAgent.Endpoint], mix: [(name: String, profile: IPhoneProfile, devices: Int)],
        origin: String, enrolment: String? = nil, seed: UInt64 = 1, usersUntil: UnixTime? = nil,
        channels: [String: [String]] = [:], group: any EventLoopGroup, clock: @escaping @Sendable () -> UnixTime
    ) {
        plain = nil
        let http = TransferClients.make(devices: mix.reduce(0) { $0 + $1.devices }, group: group)
        self.http = http
        let createdAt = clock()
        let freshness = FleetFreshness(mix: mix.map { ($0.name, $0.profile, $0.devices) }, startedAt: createdAt)
        self.freshness = freshness
        let counters = self.counters
        var agents: [DeviceAgent] = []
        var index: UInt64 = 0
        for kind in mix {
            let apps = kind.profile.apps.map { (bundleID: $0.bundle_id, behaviour: $0.behaviour) }
            let name = kind.name
            let behaviour = Self.behaviour(of: kind.profile, channels: channels)
            for _ in 0..<kind.devices {
                let shell = RuntimeShell(
                    settings: .init(
                        profile: kind.profile.iosProfile, apps: apps, origin: origin, seed: seed &+ index,
                        users: kind.profile.users, usersUntil: usersUntil),
                    loop: group.next(), http: http[TransferClients.clientIndex(of: Int(index))], clock: clock,
                    createdAt: createdAt,
                    record: { action, at in
                        if case .complete(_, _, let result) = action { counters.recordCompletion(result) }
                        freshness.record(action, at: at, profile: name)
                    },
                    transferred: { freshness.recordTransfer($0, profile: name) })
                agents.append(
                    DeviceAgent(
                        endpoints: endpoints, first: Int(index), apps: apps.map(\.bundleID), enrolment: enrolment,
                        behaviour: behaviour, runtime: shell,
                        seed: seed &+ index, loopbackSource: DeviceAgent.loopbackSource(of: seed &+ index),
                        group: group,
                        onEvent: { counters.record($0) }))
                index += 1
            }
        }
        self.agents = agents
    }

    /// What an iPhone's agent does beside its runtime: say which apps have frequent Live Activity
    /// pushes, and start each app's kept Live Activities — those on channels on `channels`' ids in order
    /// (without one, not started), the others updated by their own tokens. (The runtime answers wakes.)
    static func behaviour(of profile: IPhoneProfile, channels: [String: [String]]) -> AgentBehaviour {
        var kept: [String: [AgentBehaviour.KeptActivity]] = [:]
        for app in profile.apps where app.live_activities > 0 {
            let ids = channels[app.bundle_id] ?? []
            kept[app.bundle_id] = (0..<app.live_activities).map { index in
                guard index < app.channels else { return .token }
                return index < ids.count ? .channel(ids[index]) : .none
            }
        }
        return AgentBehaviour(
            frequentPushes: Set(profile.apps.filter(\.frequent_pushes).map(\.bundle_id)), keptActivities: kept
        ) { _ in .never }
    }

    /// Devices that may be connecting at once while the fleet starts. A storm of 10,000 WebSocket
    /// upgrades at once left the simulator about 2.7 KB per device of freed memory it kept (heaptrack:
    /// peak heap 9.7 KB, live 7 KB per device); a window keeps the storm small and the start as fast.
    static let connectingAtOnce = 200
    private let starting = Mutex<(next: Int, task: RepeatedTask?)>((0, nil))

    public func start() {
        guard let loop = agents.first?.group.next() else { return }
        // Every 5 ms: as many as the window has room for (at least 4, so a fleet whose gateway is down
        // still starts, each agent then retrying on its own).
        let task = loop.scheduleRepeatedTask(initialDelay: .zero, delay: .milliseconds(5)) { [self] task in
            let connected = counters.snapshot.connected
            let range = starting.withLock { state -> Range<Int> in
                let room = max(4, Self.connectingAtOnce - (state.next - connected))
                let end = min(agents.count, state.next + room)
                defer { state.next = end }
                return state.next..<end
            }
            for index in range { agents[index].start() }
            if range.upperBound == agents.count { task.cancel() }
        }
        starting.withLock { $0.task = task }
        guard let plain else { return }
        let tasks = agents.enumerated().map { index, agent in
            LifeEvents.schedule(
                agent, apps: plain.apps, profile: plain.profile, seed: plain.seed &+ UInt64(index),
                on: agent.group.next())
        }
        lifeEvents.withLock { $0 = tasks }
    }

    public func stop() async {
        starting.withLock { $0.task?.cancel() }
        for task in lifeEvents.withLock({ $0 }) { task.cancel() }
        for agent in agents { agent.stop() }
        for client in http { try? await client.shutdown() }
    }

    /// Every device has its apps' tokens, and their push-to-start tokens.
    public var allInstalled: Bool { agents.allSatisfy(Self.installed) }

    /// How many devices have their apps' tokens and their push-to-start tokens.
    public var installedCount: Int { agents.count(where: Self.installed) }

    private static func installed(_ agent: DeviceAgent) -> Bool {
        agent.tokens.count == agent.apps.count && agent.hasPushToStartTokens
    }

    /// Live Activity tokens across the fleet (the tokens file is written again when it grows: activities
    /// started by a push get update tokens).
    public var activityTokenCount: Int {
        agents.reduce(0) { $0 + $1.activityTokens.values.reduce(0) { $0 + $1.count } }
    }

    /// Waits until every device has its tokens (polling every 200 ms, up to `seconds`). Throws at once
    /// when the gateway refuses a device for good (a wrong enrolment secret), and when time runs out.
    public func waitUntilInstalled(within seconds: Int) async throws {
        let start = ContinuousClock.now
        while !allInstalled {
            try checkRefusals()
            guard ContinuousClock.now - start < .seconds(seconds) else {
                throw FleetError.notConnected(
                    connected: counters.snapshot.connected, of: agents.count, seconds: seconds)
            }
            try await Task.sleep(for: .milliseconds(200))  // clock-ok: polling real connections, bounded
        }
    }

    /// Throws if the gateway refused any device for good.
    public func checkRefusals() throws {
        let refused = counters.snapshot.refused
        if let (reason, count) = refused.max(by: { $0.value < $1.value }) {
            throw FleetError.refused(reason: reason, devices: count, of: agents.count)
        }
    }

    /// When each device (fleet order) first connected and its runtime started; nil: not yet.
    public var connectedAt: [UnixTime?] { agents.map { $0.runtime?.connectedAt } }

    /// Whether every device has settled: its users are done and no transfer is running
    /// (`RuntimeShell.settled`).
    public func settled() async throws -> Bool {
        for agent in agents {
            guard let runtime = agent.runtime else { continue }
            guard try await runtime.settled().get() else { return false }
        }
        return true
    }

    /// `token bundle_id` lines, and `token bundle_id activity` for Live Activity tokens (`start:<type>`,
    /// `update:<activity id>`), sorted (the tokens file backends and `pushgate bench` read).
    public var tokenLines: [String] {
        agents.flatMap { agent in
            agent.tokens.map { "\($0.value) \($0.key)" }
                + agent.activityTokens.flatMap { app in app.value.map { "\($0.value) \(app.key) \($0.key)" } }
        }.sorted()
    }
}

/// Counters across every simulated device.
public final class SimulationCounters: Sendable {
    public struct Snapshot {
        public var connected = 0
        public var received = 0
        public var viaKeepAlive = 0
        public var completed: [CompletionResult: Int] = [:]
        public var leftUncompleted = 0
        public var closed = 0
        /// Devices the gateway refused for good, by reason.
        public var refused: [String: Int] = [:]

        public var line: String {
            "connected \(connected)  received \(received) (\(viaKeepAlive) on keep-alive)  completed newData \(completed[.newData, default: 0]) noData \(completed[.noData, default: 0]) failed \(completed[.failed, default: 0])  never completed \(leftUncompleted)  closings \(closed)"
                + refused.sorted { $0.key < $1.key }.map { "  refused \($0.value) (\($0.key))" }.joined()
        }
    }

    private let state = Mutex(Snapshot())

    public func record(_ event: AgentEvent) {
        state.withLock { state in
            switch event {
            case .welcomed: state.connected += 1
            case .disconnected: state.connected -= 1
            case .delivered(_, let viaKeepAlive):
                state.received += 1
                if viaKeepAlive { state.viaKeepAlive += 1 }
            case .completed(_, let result): state.completed[result, default: 0] += 1
            case .leftUncompleted: state.leftUncompleted += 1
            case .closing: state.closed += 1
            case .refused(let reason): state.refused[reason, default: 0] += 1
            default: break
            }
        }
    }

    /// A completion an iPhone's app sent (its runtime answers wakes, not the agent).
    public func recordCompletion(_ result: CompletionResult) {
        state.withLock { $0.completed[result, default: 0] += 1 }
    }

    public var snapshot: Snapshot { state.withLock { $0 } }
}

/// App-state changes and Low Power Mode periods over time, as the profile says: checked once a minute per
/// device, each an independent chance drawn from the device's seed.
enum LifeEvents {
    static func schedule(
        _ agent: DeviceAgent, apps: [String], profile: AgentProfile, seed: UInt64, on loop: any EventLoop
    ) -> RepeatedTask {
        let minute = TimeAmount.seconds(60)
        let random = Mutex(FastRandom(seed: seed ^ 0x11FE_E7E4))
        return loop.scheduleRepeatedTask(initialDelay: minute, delay: minute) { _ in
            let (app, forceQuit, lowPower) = random.withLock { random in
                (
                    apps.randomElement(using: &random), Double.random(in: 0..<1, using: &random),
                    Double.random(in: 0..<1, using: &random)
                )
            }
            if let app, forceQuit < profile.force_quit_per_hour / 60 {
                agent.send(.appState(bundleID: app, state: "force_quit"))
                loop.scheduleTask(in: .seconds(profile.reopen_after_seconds)) {
                    agent.send(.appState(bundleID: app, state: "foreground"))
                }
            }
            if lowPower < profile.low_power_per_hour / 60 {
                agent.send(.conditions(lowPowerMode: true, backgroundAppRefreshOff: false))
                loop.scheduleTask(in: .seconds(profile.low_power_seconds)) {
                    agent.send(.conditions(lowPowerMode: false, backgroundAppRefreshOff: false))
                }
            }
        }
    }
}

/// Why a fleet could not run.
public enum FleetError: Error, Equatable {
    /// The gateway refused devices for good: `auth_failed` (the enrolment secret is wrong) or
    /// `enrolment_limited`.
    case refused(reason: String, devices: Int, of: Int)
    /// Not every device connected and installed its apps in time.
    case notConnected(connected: Int, of: Int, seconds: Int)
}
