import NIOCore
import Synchronization

/// Many simulated devices in one process, as `pushgate simulate` and `pushgate demo` run them: each
/// installs the apps, answers wakes as the profile says, and over time force-quits apps and enters Low
/// Power Mode as the profile's rates say.
public final class SimulatedFleet: Sendable {
    public let agents: [DeviceAgent]
    public let counters = SimulationCounters()
    private let apps: [String]
    private let profile: AgentProfile
    private let lifeEvents = Mutex<[RepeatedTask]>([])

    public init(
        host: String, port: Int, devices: Int, apps: [String], profile: AgentProfile, enrolment: String? = nil,
        group: any EventLoopGroup
    ) {
        self.apps = apps
        self.profile = profile
        let counters = self.counters
        let behaviour = profile.behaviour
        agents = (0..<devices).map { _ in
            DeviceAgent(
                host: host, port: port, apps: apps, enrolment: enrolment, behaviour: behaviour, group: group,
                onEvent: { counters.record($0) })
        }
    }

    public func start() {
        for agent in agents { agent.start() }
        let tasks = agents.map { agent in
            LifeEvents.schedule(agent, apps: apps, profile: profile, on: agent.group.next())
        }
        lifeEvents.withLock { $0 = tasks }
    }

    public func stop() {
        for task in lifeEvents.withLock({ $0 }) { task.cancel() }
        for agent in agents { agent.stop() }
    }

    /// Whether every device has a token for every app.
    public var allInstalled: Bool { agents.allSatisfy { $0.tokens.count == apps.count } }

    /// `token bundle_id` lines, sorted (the tokens file backends and `pushgate bench` read).
    public var tokenLines: [String] {
        agents.flatMap { agent in agent.tokens.map { "\($0.value) \($0.key)" } }.sorted()
    }
}

/// Counters across every simulated device.
public final class SimulationCounters: Sendable {
    public struct Snapshot {
        public var connected = 0
        public var received = 0
        public var viaKeepAlive = 0
        public var completed: [String: Int] = [:]
        public var leftUncompleted = 0
        public var closed = 0

        public var line: String {
            "connected \(connected)  received \(received) (\(viaKeepAlive) on keep-alive)  completed newData \(completed["newData", default: 0]) noData \(completed["noData", default: 0]) failed \(completed["failed", default: 0])  never completed \(leftUncompleted)  closings \(closed)"
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
            default: break
            }
        }
    }

    public var snapshot: Snapshot { state.withLock { $0 } }
}

/// App-state changes and Low Power Mode periods over time, as the profile says: checked once a minute per
/// device, each an independent chance.
enum LifeEvents {
    static func schedule(_ agent: DeviceAgent, apps: [String], profile: AgentProfile, on loop: any EventLoop)
        -> RepeatedTask
    {
        let minute = TimeAmount.seconds(60)
        return loop.scheduleRepeatedTask(initialDelay: minute, delay: minute) { _ in
            if let app = apps.randomElement(), Double.random(in: 0..<1) < profile.force_quit_per_hour / 60 {
                agent.send(.appState(bundleID: app, state: "force_quit"))
                loop.scheduleTask(in: .seconds(profile.reopen_after_seconds)) {
                    agent.send(.appState(bundleID: app, state: "foreground"))
                }
            }
            if Double.random(in: 0..<1) < profile.low_power_per_hour / 60 {
                agent.send(.conditions(lowPowerMode: true, backgroundAppRefreshOff: false))
                loop.scheduleTask(in: .seconds(profile.low_power_seconds)) {
                    agent.send(.conditions(lowPowerMode: false, backgroundAppRefreshOff: false))
                }
            }
        }
    }
}
