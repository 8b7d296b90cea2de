import AsyncHTTPClient
import DeviceProtocol
import DeviceRuntime
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import PushModel
import Synchronization

/// How a simulated app answers a background wake.
public enum WakeResponse: Sendable, Equatable {
    /// Call the completion handler with `result` after `milliseconds` of work.
    case complete(result: CompletionResult, afterMilliseconds: Int64)
    /// Never call it (the app will be terminated at the deadline).
    case never
    /// Do real work: an HTTP GET; complete with what its response calls for, after the real elapsed time.
    case fetch(url: String, timeoutMilliseconds: Int64)
}

/// What a simulated device does: answers wakes, and spreads keep-alives with a per-device phase and jitter.
public struct AgentBehaviour: Sendable {
    public var wake: @Sendable (Delivery) -> WakeResponse
    /// Fraction of the keep-alive interval by which each keep-alive is moved at random (0.1: ±10 %).
    public var keepAliveJitter: Double
    /// Live Activity attributes types each app can be started with by a push (bundle id → types): the
    /// device asks for a push-to-start token of each once the app is installed.
    public var liveActivityTypes: [String: [String]]
    /// Apps with `NSSupportsLiveActivitiesFrequentUpdates` (their person has not turned it off): the
    /// device says so on every connection (`frequent_pushes`), and the gateway gives their activities
    /// the larger update budget.
    public var frequentPushes: Set<String>
    /// The Live Activities each app keeps from the start (a kind of iPhone's `live_activities`), by
    /// index: started once the app is installed (`<bundle>/live-<index>`), each updated through its own
    /// token or a broadcast channel; an iPhone's runtime is told of every update to them.
    public var keptActivities: [String: [KeptActivity]]

    public enum KeptActivity: Sendable, Equatable {
        /// Updated through the activity's own token (asked for once started).
        case token
        /// Started on the channel (`pushType: .channel(id)`) and subscribed.
        case channel(String)
        /// Not started (a channel activity without a channel: nothing announces to it).
        case none
    }

    public init(
        keepAliveJitter: Double = 0.1, liveActivityTypes: [String: [String]] = [:], frequentPushes: Set<String> = [],
        keptActivities: [String: [KeptActivity]] = [:], wake: @escaping @Sendable (Delivery) -> WakeResponse
    ) {
        self.wake = wake
        self.keepAliveJitter = keepAliveJitter
        self.liveActivityTypes = liveActivityTypes
        self.frequentPushes = frequentPushes
        self.keptActivities = keptActivities
    }

    public static let prompt = AgentBehaviour { _ in .complete(result: .newData, afterMilliseconds: 10) }
}

/// What an agent saw, for tests and the simulator's counters.
public enum AgentEvent: Sendable, Equatable {
    case registered(deviceID: String)
    case welcomed(apps: [InstalledApp])
    case installed(InstalledApp)
    case uninstalled(bundleID: String)
    case delivered(Delivery, viaKeepAlive: Bool)
    /// A notification delivered again (the gateway delivers at least once, e.g. after a crash): acknowledged, not shown twice.
    case duplicate(apnsID: String)
    case completed(apnsID: String, result: CompletionResult)
    /// The app will not call its completion handler for this wake (it will miss its deadline).
    case leftUncompleted(apnsID: String)
    case closing(reason: String)
    case error(String)
    /// A connection that had been welcomed ended (one per `welcomed`).
    case disconnected
    /// The gateway refused the device for good (`auth_failed` to `register`: a wrong enrolment secret;
    /// `enrolment_limited`): the agent stops and does not retry.
    case refused(reason: String)
    /// The gateway issued a Live Activity token (`activity`: `start:<type>` or `update:<activity id>`).
    case activityToken(bundleID: String, activity: String, token: String)
    /// What an ActivityKit push did to the device's Live Activities.
    case liveActivity(LiveActivityBook.Outcome)
    /// The gateway stored a subscription of an app's activity to a broadcast channel.
    case channelSubscribed(bundleID: String, channelID: String)
}

/// A simulated device: connects to the gateway's device port over WebSocket, registers (or says hello
/// with its identity), installs its apps, acknowledges deliveries, completes background wakes as its
/// behaviour says, sends keep-alives, and reconnects with jittered exponential backoff.
/// The tests, `pushgate simulate` and the load generator use it.
public final class DeviceAgent: Sendable {
    public struct Identity: Sendable, Equatable {
        public var deviceID: String
        public var secret: String

        public init(deviceID: String, secret: String) {
            self.deviceID = deviceID
            self.secret = secret
        }
    }

    /// Where a device port is: one node's. A fleet's nodes are one gateway, so a device may connect to any.
    public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
        public var host: String
        public var port: Int

        public init(host: String, port: Int) {
            self.host = host
            self.port = port
        }

        public var description: String { "\(host):\(port)" }
    }

    /// The nodes' device ports: the agent starts at `first` and, each time it must connect again (its
    /// node refused, dropped or drained it), tries the next, so a device whose node is gone finds a live
    /// one within one round of the list, with the usual backoff and hints between attempts.
    let endpoints: [Endpoint]
    let tls: NIOSSLContext?
    let apps: [String]
    /// The fleet's enrolment secret, sent with `register`.
    let enrolment: String?
    let behaviour: AgentBehaviour
    /// When set, the device plays iOS's background rules (`DeviceRuntime`): deliveries go to it, and it
    /// answers wakes, reports app states and fetches content; `behaviour` then only spaces keep-alives.
    public let runtime: RuntimeShell?
    let group: any EventLoopGroup
    let onEvent: @Sendable (AgentEvent) -> Void
    private let state = Mutex(AgentState())

    struct AgentState {
        var identity: Identity?
        var installed: [String: String] = [:]
        var seen = RecentSet<String>(capacity: 4096)
        var channel: (any Channel)?
        var stopped = false
        var attempts = 0
        var keepAliveSeconds = 60
        var sequence = 0
        /// This connection's keep-alive times (seeded: a forecast of the device asks the same schedule).
        var keepAlives: KeepAliveSchedule?
        var keepAliveSeed: UInt64 = 0
        /// The current connection was welcomed (its end is a `disconnected`).
        var welcomed = false
        /// The current connection sent `register` (so an `auth_failed` answers the enrolment secret).
        var registering = false
        var refusal: String?
        /// The endpoint of the current (or next) connection, an index into `endpoints` (modulo its count).
        var endpoint = 0
        /// Live Activity tokens the gateway issued, by app and `ActivityTokenPurpose.key`.
        var activityTokens: [String: [String: String]] = [:]
        var activities = LiveActivityBook()
        /// Broadcast channels the gateway stored a subscription to, with their apps.
        var subscribedChannels: [String: String] = [:]
    }

    /// What a plain agent's wakes fetch with (`WakeResponse.fetch`), when its profile fetches.
    private let http: HTTPClient?

    public convenience init(
        host: String, port: Int, tls: NIOSSLContext? = nil, apps: [String], identity: Identity? = nil,
        enrolment: String? = nil, behaviour: AgentBehaviour = .prompt, runtime: RuntimeShell? = nil,
        http: HTTPClient? = nil, seed: UInt64? = nil, group: any EventLoopGroup,
        onEvent: @escaping @Sendable (AgentEvent) -> Void = { _ in }
    ) {
        self.init(
            endpoints: [Endpoint(host: host, port: port)], tls: tls, apps: apps, identity: identity,
            enrolment: enrolment, behaviour: behaviour, runtime: runtime, http: http, seed: seed, group: group,
            onEvent: onEvent)
    }

    /// `endpoints`: the device ports of a fleet's nodes (at least one); the agent starts at `first`.
    /// `loopbackSource`: on an endpoint in 127.0.0.0/8, the address it connects from (`loopbackSource(of:)`).
    public init(
        endpoints: [Endpoint], first: Int = 0, tls: NIOSSLContext? = nil, apps: [String], identity: Identity? = nil,
        enrolment: String? = nil, behaviour: AgentBehaviour = .prompt, runtime: RuntimeShell? = nil,
        http: HTTPClient? = nil, seed: UInt64? = nil, loopbackSource: String? = nil, group: any EventLoopGroup,
        onEvent: @escaping @Sendable (AgentEvent) -> Void = { _ in }
    ) {
        precondition(!endpoints.isEmpty, "an agent needs a device port to connect to")
        self.endpoints = endpoints
        self.loopbackSource = loopbackSource.flatMap { try? SocketAddress(ipAddress: $0, port: 0) }
        state.withLock { $0.endpoint = first }
        self.runtime = runtime
        self.http = http
        let keepAliveSeed = seed ?? UInt64.random(in: .min ... .max)
        state.withLock { $0.keepAliveSeed = keepAliveSeed }
        self.tls = tls
        self.apps = apps
        self.enrolment = enrolment
        self.behaviour = behaviour
        self.group = group
        self.onEvent = onEvent
        state.withLock {
            $0.identity = identity
            // A plain agent plays the newest iOS; an iPhone, its profile's.
            $0.activities = LiveActivityBook(iosVersion: runtime?.iosVersion ?? LiveActivityBook.channelsSince)
        }
    }

    public var identity: Identity? { state.withLock { $0.identity } }
    public var tokens: [String: String] { state.withLock { $0.installed } }
    /// Live Activity tokens, by app and `ActivityTokenPurpose.key` (`start:<type>`, `update:<activity id>`).
    public var activityTokens: [String: [String: String]] { state.withLock { $0.activityTokens } }
    /// Whether every installed app has the push-to-start token of each of its Live Activity types, and
    /// each of its kept activities its update token or its channel subscription.
    public var hasPushToStartTokens: Bool {
        state.withLock { state in
            behaviour.liveActivityTypes.allSatisfy { app in
                app.value.allSatisfy { state.activityTokens[app.key]?["start:" + $0] != nil }
            }
                && behaviour.keptActivities.allSatisfy { app in
                    app.value.enumerated().allSatisfy { index, activity in
                        switch activity {
                        case .token:
                            let key = ActivityTokenPurpose.update(
                                activityID: AppProfile.keptActivityID(app.key, index)
                            ).key
                            return state.activityTokens[app.key]?[key] != nil
                        case .channel(let channel): return state.subscribedChannels[channel] != nil
                        case .none: return true
                        }
                    }
                }
        }
    }
    /// Broadcast channels subscribed to (the gateway stored it), with their apps.
    public var subscribedChannels: [String: String] { state.withLock { $0.subscribedChannels } }

    /// Subscribes an app's activity to a broadcast channel (`channelSubscribed` once stored).
    public func subscribe(bundleID: String, channelID: String) {
        send(.subscribeChannel(bundleID: bundleID, channelID: channelID))
    }

    /// The app starts a Live Activity on a broadcast channel (`pushType: .channel(id)`): the activity is
    /// shown at once and subscribed; the channel's broadcasts update it. Returns its id.
    @discardableResult
    public func startLiveActivity(
        bundleID: String, attributesType: String, channelID: String, contentState: String? = nil
    ) -> String {
        let id = UUID().uuidString.lowercased()
        state.withLock {
            $0.activities.startOnChannel(
                id: id, bundleID: bundleID, attributesType: attributesType, channel: channelID,
                contentState: contentState)
        }
        subscribe(bundleID: bundleID, channelID: channelID)
        return id
    }

    /// The device's Live Activities now.
    public var liveActivities: LiveActivityBook { state.withLock { $0.activities } }
    /// Why the gateway refused this device for good, if it did (the agent has stopped).
    public var refusal: String? { state.withLock { $0.refusal } }
    /// The device port it is connected to, or will try next.
    public var endpoint: Endpoint { state.withLock { endpoints[$0.endpoint % endpoints.count] } }

    /// The loopback address this agent connects from when its endpoint is a loopback one.
    let loopbackSource: SocketAddress?

    /// A loopback source address for device `index` of a simulator: 127.1.x.y, one for each 64 devices.
    /// Real devices come from many addresses; thousands of simulated ones connecting from 127.0.0.1 to a
    /// few ports make the kernel search its ephemeral ports for a free pair on every connect, which under
    /// a reconnection storm of 100,000 devices was the simulators' largest cost (`__inet_check_established`).
    public static func loopbackSource(of index: UInt64) -> String {
        let group = index / 64
        return "127.1.\((group / 256) % 256).\(group % 256)"
    }

    /// How long a connection may take to be upgraded (TCP, the WebSocket upgrade) before the agent gives
    /// up on it and tries the next endpoint.
    static let handshakeSeconds: Int64 = 10
    /// How long an upgraded connection may wait for the welcome after hello or register: longer, as the
    /// node is there and working — a device that moved must wait for its claim, and a node's loss sends
    /// thousands of devices to claim at once. Giving up sooner would only start the claim again elsewhere.
    static let welcomeSeconds: Int64 = 60

    /// Answers to `register` that no retry changes: a wrong enrolment secret, too many enrolments.
    static func isFinal(_ reason: String, registering: Bool) -> Bool {
        ClosingReason(rawValue: reason)?.isFinal(registering: registering) ?? false
    }

    /// Connects (and keeps reconnecting until `stop`).
    public func start() {
        connect()
    }

    public func stop() {
        runtime?.stop()
        let channel = state.withLock { state -> (any Channel)? in
            state.stopped = true
            return state.channel
        }
        channel?.close(promise: nil)
    }

    /// Sends a message now (tests use it to drive app states, conditions, uninstalls).
    public func send(_ message: DeviceMessage) {
        guard let channel = state.withLock({ $0.channel }) else { return }
        let frame = WebSocketFrame(
            fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(bytes: message.encoded()))
        channel.writeAndFlush(frame, promise: nil)
    }

    // MARK: Connection

    private func connect() {
        guard let endpoint = state.withLock({ $0.stopped ? nil : endpoints[$0.endpoint % endpoints.count] }) else {
            return
        }
        let agent = self
        // A failed attempt is seen twice (the connect fails, and the upgrade with it): it must schedule
        // one retry, not two (two would each try again, and advance the endpoint twice).
        let retried = Atomic<Bool>(false)
        let retry: @Sendable () -> Void = {
            if !retried.exchange(true, ordering: .relaxed) { agent.scheduleReconnect(hint: nil) }
        }
        var bootstrap = ClientBootstrap(group: group)
        if let loopbackSource, endpoint.host.hasPrefix("127.") { bootstrap = bootstrap.bind(to: loopbackSource) }
        let result =
            bootstrap
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            // Device messages are small: start reads at 512 bytes, not NIO's 2,048 (a fleet of 10,000
            // keeps one read buffer per connection; measured 2 KB of 12 per device). It grows for large reads.
            .channelOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 512, maximum: 65536)
            )
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if let tls = agent.tls {
                        try channel.pipeline.syncOperations.addHandler(
                            NIOSSLClientHandler(
                                context: tls,
                                serverHostname: endpoint.host.first?.isNumber == true ? nil : endpoint.host))
                    }
                    let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(
                        maxFrameSize: 1 << 20,
                        upgradePipelineHandler: { channel, _ in
                            channel.eventLoop.makeCompletedFuture {
                                try channel.pipeline.syncOperations.addHandlers([
                                    NIOWebSocketFrameAggregator(
                                        minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 64,
                                        maxAccumulatedFrameSize: 1 << 20),
                                    AgentHandler(agent: agent),
                                ])
                                return true
                            }
                        })
                    let head = HTTPRequestHead(
                        version: .http1_1, method: .GET, uri: "/device",
                        headers: ["host": "\(endpoint)", "content-length": "0"])
                    let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                        configuration: .init(
                            upgradeConfiguration: NIOTypedHTTPClientUpgradeConfiguration(
                                upgradeRequestHead: head, upgraders: [upgrader],
                                notUpgradingCompletionHandler: { channel in channel.eventLoop.makeSucceededFuture(false)
                                })))
                    negotiated.whenComplete { outcome in
                        // Not upgraded: this is no Pushgate device port (or it refused); try again later.
                        if case .success(true) = outcome { return }
                        channel.close(promise: nil)
                        retry()
                    }
                    // A node that accepts the connection and then says nothing (stopping, stalled) is
                    // left after this long, for the next endpoint: every handshake has a deadline.
                    channel.eventLoop.scheduleTask(in: .seconds(Self.handshakeSeconds)) {
                        let upgraded = agent.state.withLock { $0.channel === channel }
                        if !upgraded { channel.close(promise: nil) }
                    }
                }
            }
            .connect(host: endpoint.host, port: endpoint.port)
        result.whenFailure { _ in retry() }
    }

    fileprivate func attached(_ channel: any Channel) {
        // Attaching runs a turn after the upgrade, on the channel's loop: a connection that ended in
        // between (the gateway's handshake deadline, under a storm of them) was never the current one, so
        // its end scheduled nothing — without this the agent would wait on a dead channel for ever.
        guard channel.isActive else { return scheduleReconnect(hint: nil) }
        let identity = state.withLock { state -> Identity? in
            state.channel = channel
            state.registering = state.identity == nil
            return state.identity
        }
        if let identity {
            send(.hello(deviceID: identity.deviceID, secret: identity.secret))
        } else {
            send(.register(enrolment: enrolment))
        }
        let agent = self
        channel.eventLoop.scheduleTask(in: .seconds(Self.welcomeSeconds)) {
            let welcomed = agent.state.withLock { $0.channel === channel && $0.welcomed }
            if !welcomed { channel.close(promise: nil) }
        }
    }

    fileprivate func detached(_ channel: any Channel, hint: Int?) {
        let (wasCurrent, welcomed) = state.withLock { state -> (Bool, Bool) in
            guard state.channel === channel else { return (false, false) }
            state.channel = nil
            defer { state.welcomed = false }
            return (true, state.welcomed)
        }
        guard wasCurrent else { return }
        if welcomed { onEvent(.disconnected) }
        // A connection that got as far as the welcome ended (the gateway closed it, or the network did):
        // its node is tried again first — a device that stays spares the fleet a claim. One that never
        // got there moves on.
        scheduleReconnect(hint: hint, moveOn: !welcomed)
    }

    /// Full-jitter exponential backoff (0.25 s doubling to 30 s), or the gateway's hint when it gave one;
    /// `moveOn`: the next attempt goes to another endpoint (this one failed or never welcomed it).
    private func scheduleReconnect(hint: Int?, moveOn: Bool = true) {
        let delay = state.withLock { state -> Int64? in
            guard !state.stopped else { return nil }
            state.attempts += 1
            // Another endpoint at random: the devices of a node that is gone spread over the others
            // (all moving to the next one would send that one the whole node's claims at once).
            if moveOn, endpoints.count > 1 {
                state.endpoint = (state.endpoint + Int.random(in: 1..<endpoints.count)) % endpoints.count
            }
            let ceiling = min(30_000, 250 << min(state.attempts, 7))
            return Int64(hint ?? 0) + Int64.random(in: 0...Int64(ceiling))
        }
        guard let delay else { return }
        let agent = self
        group.next().scheduleTask(in: .milliseconds(delay)) { agent.connect() }
    }

    // MARK: Messages

    fileprivate func received(_ message: GatewayMessage, on channel: any Channel) {
        switch message {
        case .registered(let deviceID, let secret):
            state.withLock { $0.identity = Identity(deviceID: deviceID, secret: secret) }
            onEvent(.registered(deviceID: deviceID))
            send(.hello(deviceID: deviceID, secret: secret))
        case .welcome(_, let installed, let keepAliveSeconds):
            let missing = state.withLock { state -> [String] in
                state.attempts = 0
                state.welcomed = true
                state.keepAliveSeconds = keepAliveSeconds
                for app in installed { state.installed[app.bundleID] = app.token }
                return apps.filter { state.installed[$0] == nil }
            }
            onEvent(.welcomed(apps: installed))
            if let runtime, let deviceID = identity?.deviceID {
                let agent = self
                runtime.attach(label: deviceID) { agent.send($0) }
            }
            for bundleID in missing { send(.install(bundleID: bundleID)) }
            for app in installed { askForActivityTokens(of: app.bundleID) }
            scheduleKeepAlive(on: channel, first: true)
        case .installed(let app):
            state.withLock { $0.installed[app.bundleID] = app.token }
            onEvent(.installed(app))
            askForActivityTokens(of: app.bundleID)
        case .activityToken(let bundleID, let purpose, let token):
            state.withLock { state in
                state.activityTokens[bundleID, default: [:]][purpose.key] = token
                switch purpose {
                case .pushToStart(let type):
                    state.activities.pushToStartToken(token, bundleID: bundleID, attributesType: type)
                case .update(let id): state.activities.updateToken(token, activityID: id)
                }
            }
            onEvent(.activityToken(bundleID: bundleID, activity: purpose.key, token: token))
        case .channelSubscribed(let bundleID, let channelID):
            state.withLock { $0.subscribedChannels[channelID] = bundleID }
            onEvent(.channelSubscribed(bundleID: bundleID, channelID: channelID))
        case .uninstalled(let bundleID):
            _ = state.withLock { $0.installed.removeValue(forKey: bundleID) }
            onEvent(.uninstalled(bundleID: bundleID))
        case .notification(let delivery):
            deliver(delivery, viaKeepAlive: false, on: channel)
        case .keepAliveAck(_, let deliveries):
            for delivery in deliveries { deliver(delivery, viaKeepAlive: true, on: channel) }
        case .closing(let reason, let hint):
            onEvent(.closing(reason: reason))
            let final = state.withLock { state -> Bool in
                guard Self.isFinal(reason, registering: state.registering) else {
                    // A hello refused: the gateway forgot the device; it registers again.
                    if reason == ClosingReason.authFailed.rawValue { state.identity = nil }
                    return false
                }
                state.refusal = reason
                state.stopped = true
                return true
            }
            if final { onEvent(.refused(reason: reason)) }
            channel.close(promise: nil)
            detached(channel, hint: hint)
        case .error(let text):
            onEvent(.error(text))
        }
    }

    private func deliver(_ delivery: Delivery, viaKeepAlive: Bool, on channel: any Channel) {
        send(.ack(apnsID: delivery.apnsID))
        guard state.withLock({ $0.seen.insert(delivery.apnsID) }) else {
            return onEvent(.duplicate(apnsID: delivery.apnsID))
        }
        onEvent(.delivered(delivery, viaKeepAlive: viaKeepAlive))
        if delivery.pushType == PushType.liveactivity.rawValue {
            let payload = LiveActivityPayload(delivery.payload)
            let updated: [String]
            if let channel = delivery.channel {
                updated = applyBroadcast(payload.push, channel: channel)
            } else if let token = delivery.token {
                updated = applyLiveActivity(payload.push, token: token)
            } else {
                updated = []
            }
            // An iPhone's kept activities show the version the update carries (no wake); one with an alert
            // lights the device as an alert does ([LA]).
            guard let runtime else { return }
            if let version = payload.version, let timestamp = payload.push?.timestamp {
                for id in updated {
                    guard let index = AppProfile.keptActivityIndex(id, of: delivery.bundleID) else { continue }
                    runtime.liveActivityUpdated(
                        bundleID: delivery.bundleID, activity: index, version: version, timestamp: timestamp)
                }
            }
            if payload.alerts {
                runtime.delivered(bundleID: delivery.bundleID, apnsID: delivery.apnsID, silent: false)
            }
            return
        }
        if let surface = PushType(rawValue: delivery.pushType).flatMap(WidgetKitSurface.init) {
            // WidgetKit's, not the app's: no wake and nothing shown; a widget or a control reloads to the
            // version the backend's push names (`AnnouncementRequest.reload`).
            if let runtime, let version = AnnouncementRequest.version(in: Array(delivery.payload.utf8)) {
                runtime.widgetKitPushed(bundleID: delivery.bundleID, surface: surface, version: version)
            }
            return
        }
        if let runtime {
            return runtime.delivered(
                bundleID: delivery.bundleID, apnsID: delivery.apnsID, silent: delivery.kind == "background")
        }
        guard delivery.kind == "background" else { return }
        switch behaviour.wake(delivery) {
        case .never: onEvent(.leftUncompleted(apnsID: delivery.apnsID))
        case .fetch(let url, let timeout):
            let agent = self
            guard let http else {
                // A fetching profile runs in a fleet that gives its agents a client (`SimulatedFleet`).
                return onEvent(.leftUncompleted(apnsID: delivery.apnsID))
            }
            WakeFetch.result(url, timeoutMilliseconds: timeout, http: http).whenSuccess { result in
                agent.send(.complete(apnsID: delivery.apnsID, bundleID: delivery.bundleID, result: result.rawValue))
                agent.onEvent(.completed(apnsID: delivery.apnsID, result: result))
            }
        case .complete(let result, let milliseconds):
            let agent = self
            let due = NIODeadline.now() + .milliseconds(milliseconds)
            LoopTimers.schedule(on: channel.eventLoop, at: due) {
                agent.send(.complete(apnsID: delivery.apnsID, bundleID: delivery.bundleID, result: result.rawValue))
                agent.onEvent(.completed(apnsID: delivery.apnsID, result: result))
            }
        }
    }

    /// Once the app is installed (and after each welcome): its frequent pushes if it has them, its kept
    /// activities, push-to-start tokens for its Live Activity types, and the update token of any of its
    /// activities still without one (a request lost with a connection): asking again gets the same token.
    private func askForActivityTokens(of bundleID: String) {
        if behaviour.frequentPushes.contains(bundleID) { send(.frequentPushes(bundleID: bundleID, enabled: true)) }
        startKeptActivities(of: bundleID)
        for type in behaviour.liveActivityTypes[bundleID] ?? [] {
            send(.activityToken(bundleID: bundleID, purpose: .pushToStart(attributesType: type)))
        }
        let waiting = state.withLock { state in
            state.activities.activities.values
                .filter { $0.bundleID == bundleID && $0.channel == nil && $0.updateToken == nil && $0.endedAt == nil }
                .map(\.id).sorted()
        }
        for id in waiting { send(.activityToken(bundleID: bundleID, purpose: .update(activityID: id))) }
    }

    /// The app's kept activities not started yet are started (each once), and a channel subscription
    /// not yet confirmed is asked for again (a request lost with a connection).
    private func startKeptActivities(of bundleID: String) {
        let kept = behaviour.keptActivities[bundleID] ?? []
        guard !kept.isEmpty else { return }
        let subscribe = state.withLock { state -> [String] in
            var subscribe: [String] = []
            for (index, activity) in kept.enumerated() {
                let id = AppProfile.keptActivityID(bundleID, index)
                let started = state.activities.activities[id] != nil
                switch activity {
                case .token where !started:
                    state.activities.startLocally(
                        id: id, bundleID: bundleID, attributesType: "KeptAttributes", contentState: nil, now: 0)
                case .channel(let channel):
                    if !started {
                        state.activities.startOnChannel(
                            id: id, bundleID: bundleID, attributesType: "KeptAttributes", channel: channel,
                            contentState: nil)
                    }
                    if state.subscribedChannels[channel] == nil { subscribe.append(channel) }
                case .token, .none: break
                }
            }
            return subscribe
        }
        for channel in Set(subscribe).sorted() { send(.subscribeChannel(bundleID: bundleID, channelID: channel)) }
    }

    /// An ActivityKit push: applied to the device's activities in timestamp order; an activity a push
    /// started gets its update token from the gateway, as iOS hands one to the app. Returns the activity
    /// it updated, if any (the runtime shows the version it carries, in the same timestamp order).
    private func applyLiveActivity(_ push: LiveActivityPush?, token: String) -> [String] {
        let now = Int64(Date().timeIntervalSince1970)
        let outcome = state.withLock {
            $0.activities.received(push, token: token, now: now, newID: { UUID().uuidString.lowercased() })
        }
        onEvent(.liveActivity(outcome))
        switch outcome {
        case .started(let id, let bundleID):
            send(.activityToken(bundleID: bundleID, purpose: .update(activityID: id)))
            return []
        case .startedOnChannel(_, let bundleID, let channel):
            subscribe(bundleID: bundleID, channelID: channel)
            return []
        case .updated(let id): return [id]
        default: return []
        }
    }

    /// A channel's broadcast: applied to the activities started on the channel; the ones it reached.
    private func applyBroadcast(_ push: LiveActivityPush?, channel: String) -> [String] {
        let now = Int64(Date().timeIntervalSince1970)
        let outcomes = state.withLock { $0.activities.receivedBroadcast(push, channel: channel, now: now) }
        for outcome in outcomes { onEvent(.liveActivity(outcome)) }
        return outcomes.compactMap {
            if case .updated(let id) = $0 { return id }
            return nil
        }
    }

    /// Keep-alives at the interval the gateway gave, as `KeepAliveSchedule` says (a random phase, then
    /// jitter each time, seeded by the device).
    private func scheduleKeepAlive(on channel: any Channel, first: Bool) {
        // Only intervals matter here: the monotonic clock, in the schedule's milliseconds.
        let now = UnixTime(milliseconds: Int64(NIODeadline.now().uptimeNanoseconds / 1_000_000))
        let next = state.withLock { state -> UnixTime in
            if first || state.keepAlives == nil {
                state.keepAlives = KeepAliveSchedule(
                    connectedAt: now, intervalSeconds: state.keepAliveSeconds, jitter: behaviour.keepAliveJitter,
                    seed: state.keepAliveSeed)
            } else {
                state.keepAlives!.advance()
            }
            return state.keepAlives!.next
        }
        let delay = max(1, next.milliseconds - now.milliseconds)
        let agent = self
        LoopTimers.schedule(on: channel.eventLoop, at: TimerSlack.deadline(in: .milliseconds(delay))) {
            guard channel.isActive, agent.state.withLock({ $0.channel === channel }) else { return }
            let sequence = agent.state.withLock { state -> Int in
                state.sequence += 1
                return state.sequence
            }
            agent.send(.keepAlive(sequence: sequence))
            agent.scheduleKeepAlive(on: channel, first: false)
        }
    }
}

/// The agent's end of the WebSocket.
private final class AgentHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    let agent: DeviceAgent
    private var closeHint: Int?

    init(agent: DeviceAgent) { self.agent = agent }

    func handlerAdded(context: ChannelHandlerContext) {
        // Added while the upgrade is still rearranging the pipeline: speak once it is done.
        let agent = self.agent
        let channel = context.channel
        context.eventLoop.execute { agent.attached(channel) }
    }

    func channelInactive(context: ChannelHandlerContext) {
        agent.detached(context.channel, hint: closeHint)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            if let message = try? GatewayMessage.decode(frame.unmaskedData.readableBytesView) {
                if case .closing(_, let hint) = message { closeHint = hint }
                agent.received(message, on: context.channel)
            }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, maskKey: .random(), data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .connectionClose:
            context.close(promise: nil)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
