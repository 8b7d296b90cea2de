import ConnectionLimits
import CoreMetrics
import DeviceHub
import Prometheus
import PushMetrics
import PushPolicy
import PushStore
import Synchronization

/// The gateway's Prometheus metrics (`/metrics` on the admin port; names in `MetricName`). Each gateway
/// has its own registry. The provider API and the store's writer record as they go; the policy's and
/// the hub's counters, which they keep anyway, are read when `/metrics` is scraped and added to the
/// Prometheus counters by difference, so the policy's hot path pays nothing for being measured.
public final class GatewayMetrics: Sendable {
    let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    public let provider: ProviderMetrics
    private let commitDuration: CoreMetrics.Timer
    private let commitBatch: CoreMetrics.Recorder
    private let commitCounters: [(CoreMetrics.Counter, any KeyPath<CommitFigures, Int> & Sendable)]
    private let policyCounters: [(CoreMetrics.Counter, any KeyPath<PolicyCounters, Int> & Sendable)]
    private let hubCounters: [(CoreMetrics.Counter, any KeyPath<HubCounters, Int> & Sendable)]
    private let stateCounters: [(CoreMetrics.Counter, any KeyPath<DeliveryStateCounts, Int> & Sendable)]
    private let held: CoreMetrics.Meter
    private let connected: CoreMetrics.Meter
    private let waiting: CoreMetrics.Meter
    private let registered: CoreMetrics.Meter
    private let liveSkipped: CoreMetrics.Counter
    private let liveClosed: CoreMetrics.Counter

    private struct Seen {
        var policy = PolicyCounters()
        var hub = HubCounters()
        var store = CommitFigures()
        var states = DeliveryStateCounts()
        var gates: [String: ConnectionGate.Figures] = [:]
    }

    private let seen = Mutex(Seen())

    public init(node: String?) {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            MetricName.providerRequestDuration.rawValue: ProviderMetrics.durationBuckets,
            MetricName.storeCommitDuration.rawValue: [
                .microseconds(250), .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5),
                .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
                .seconds(1),
            ],
        ]
        factory.valueHistogramBuckets = [
            MetricName.storeCommitBatch.rawValue: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]
        ]
        self.factory = factory
        provider = ProviderMetrics(factory: factory)
        commitDuration = CoreMetrics.Timer(
            label: MetricName.storeCommitDuration.rawValue, dimensions: [], factory: factory)
        commitBatch = CoreMetrics.Recorder(
            label: MetricName.storeCommitBatch.rawValue, dimensions: [], factory: factory)
        func counter(_ name: MetricName, _ dimensions: [(String, String)] = []) -> CoreMetrics.Counter {
            CoreMetrics.Counter(label: name.rawValue, dimensions: dimensions, factory: factory)
        }
        func outcome(_ value: String) -> CoreMetrics.Counter { counter(.silentOutcomes, [("outcome", value)]) }
        func completion(_ value: String) -> CoreMetrics.Counter { counter(.completions, [("result", value)]) }
        func liveActivity(_ value: String) -> CoreMetrics.Counter {
            counter(.liveActivityUpdates, [("outcome", value)])
        }
        // One row per counter the policy keeps: the metric it feeds, and where to read it.
        policyCounters =
            [
                (outcome("woken_on_budget"), \.wokenOnBudget),
                (outcome("held"), \.held),
                (outcome("released_on_alert"), \.releasedOnAlert),
                (outcome("released_on_keep_alive"), \.releasedOnKeepAlive),
                (outcome("released_on_reconnect"), \.releasedOnReconnect),
                (outcome("released_on_app_opened"), \.releasedOnAppOpened),
                (outcome("released_on_condition_ended"), \.releasedOnConditionEnded),
                (outcome("coalesced"), \.coalesced),
                (outcome("expired"), \.expired),
                (outcome("overflowed"), \.overflowed),
                (outcome("not_stored"), \.notStored),
                (completion("new_data"), \.completedNewData),
                (completion("no_data"), \.completedNoData),
                (completion("failed"), \.completedFailed),
                (completion("late"), \.completedLate),
                (completion("not_woken"), \.notWoken),
                (counter(.deadlineMisses), \.deadlinePenalties),
                (liveActivity("on_budget"), \.liveActivityOnBudget),
                (liveActivity("over_budget"), \.liveActivityOverBudget),
                (liveActivity("opportunistic"), \.liveActivityOpportunistic),
                (outcome("woken_debugger_attached"), \.wokenDebuggerAttached),
            ]
            + Rule.heldReasons.map { rule in
                (counter(.heldReasons, [("reason", rule.rawValue)]), \PolicyCounters.heldBy[rule])
            }
        hubCounters = [
            (counter(.keepAlives), \.keepAlives),
            (counter(.sent), \.sent),
            (counter(.resent), \.resent),
            (counter(.delivered), \.delivered),
            (counter(.disconnections), \.disconnections),
            (counter(.acknowledged), \.acknowledged),
            (counter(.devicesClosed), \.closedForMisbehaviour),
            (counter(.enrolmentsRefused), \.enrolmentsRefused),
            (counter(.devicesRemoved, [("how", "removed")]), \.devicesRemoved),
            (counter(.devicesRemoved, [("how", "pruned")]), \.devicesPruned),
            (counter(.routed, [("direction", "out")]), \.routedOut),
            (counter(.routed, [("direction", "in")]), \.routedIn),
            (counter(.routedThroughStore), \.routedThroughStore),
            (counter(.deviceHandovers, [("change", "claimed")]), \.claimed),
            (counter(.deviceHandovers, [("change", "released")]), \.released),
        ]
        stateCounters = DeliveryState.allCases.map {
            (counter(.deliveryStates, [("state", $0.label)]), DeliveryStateCounts.field($0))
        }
        commitCounters = [
            (counter(.storeCommits), \.commits),
            (counter(.storeCommitFailures), \.failures),
        ]
        held = CoreMetrics.Meter(label: MetricName.held.rawValue, dimensions: [], factory: factory)
        connected = CoreMetrics.Meter(label: MetricName.connectedDevices.rawValue, dimensions: [], factory: factory)
        waiting = CoreMetrics.Meter(label: MetricName.waiting.rawValue, dimensions: [], factory: factory)
        registered = CoreMetrics.Meter(label: MetricName.registeredDevices.rawValue, dimensions: [], factory: factory)
        liveSkipped = counter(.liveStalled, [("outcome", "skipped")])
        liveClosed = counter(.liveStalled, [("outcome", "closed")])
        if let node {
            CoreMetrics.Meter(label: MetricName.node.rawValue, dimensions: [("node", node)], factory: factory).set(1)
        }
    }

    /// For the live feed: an event skipped (its client had not taken the last), or a feed closed.
    func liveStalled(closed: Bool) { (closed ? liveClosed : liveSkipped).increment() }

    /// For the store's writer: one commit of `changes` changes took `elapsed`.
    public func committed(changes: Int, elapsed: Duration) {
        commitBatch.record(changes)
        commitDuration.recordNanoseconds(
            elapsed.components.seconds * 1_000_000_000 + elapsed.components.attoseconds / 1_000_000_000)
    }

    /// The exposition text (Prometheus 0.0.4), after reading the hub's, the policy's and the store's
    /// counters.
    public func scrape(hub: DeviceHub, store: CommitFigures, gates: [ConnectionGate] = []) -> String {
        let policy = hub.policyCounters
        let hubNow = hub.counters
        seen.withLock { seen in
            Self.add(policyCounters, now: policy, before: seen.policy)
            Self.add(hubCounters, now: hubNow, before: seen.hub)
            Self.add(commitCounters, now: store, before: seen.store)
            let states = DeliveryStateCounts(policy: policy, hub: hubNow)
            Self.add(stateCounters, now: states, before: seen.states)
            var gateFigures: [String: ConnectionGate.Figures] = [:]
            for gate in gates {
                let now = gate.figures
                let before = seen.gates[gate.name] ?? ConnectionGate.Figures(open: 0)
                addGate(gate.name, now: now, before: before)
                gateFigures[gate.name] = now
            }
            seen = Seen(policy: policy, hub: hubNow, store: store, states: states, gates: gateFigures)
        }
        held.set(policy.heldNow)
        connected.set(hub.connectedCount)
        waiting.set(hub.outstandingCount)
        registered.set(hub.registry.deviceCount)
        return Self.withHelp(registry.emitToString())
    }

    /// A listener kind's door: open connections now, refusals by cap and handshake timeouts since the
    /// last scrape.
    private func addGate(_ name: String, now: ConnectionGate.Figures, before: ConnectionGate.Figures) {
        CoreMetrics.Meter(
            label: MetricName.connectionsOpen.rawValue, dimensions: [("listener", name)], factory: factory
        )
        .set(now.open)
        let rows: [(MetricName, [(String, String)], Int)] = [
            (
                .connectionsRefused, [("listener", name), ("reason", ConnectionGate.Refusal.listenerCap.rawValue)],
                now.refusedListenerCap - before.refusedListenerCap
            ),
            (
                .connectionsRefused, [("listener", name), ("reason", ConnectionGate.Refusal.addressCap.rawValue)],
                now.refusedAddressCap - before.refusedAddressCap
            ),
            (.handshakeTimeouts, [("listener", name)], now.handshakeTimeouts - before.handshakeTimeouts),
        ]
        for (metric, dimensions, difference) in rows {
            let counter = CoreMetrics.Counter(label: metric.rawValue, dimensions: dimensions, factory: factory)
            if difference > 0 { counter.increment(by: difference) }
        }
    }

    /// Adds each metric's HELP line (`MetricName.help`) before its TYPE line: swift-metrics has no help
    /// text to pass on.
    static func withHelp(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count + 4096)
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE "), let name = line.dropFirst(7).split(separator: " ").first,
                let metric = MetricName(rawValue: String(name))
            {
                out += "# HELP \(name) \(metric.help)\n"
            }
            out += line
            out += "\n"
        }
        return String(out.dropLast())
    }

    private static func add<Figures>(
        _ rows: [(CoreMetrics.Counter, any KeyPath<Figures, Int> & Sendable)], now: Figures, before: Figures
    ) {
        for (counter, field) in rows {
            let difference = now[keyPath: field] - before[keyPath: field]
            if difference > 0 { counter.increment(by: difference) }
        }
    }
}

/// How many pushes entered each of Apple's delivery states, from the policy's and the hub's counters
/// (on the node that runs each device's policy).
struct DeliveryStateCounts: Sendable {
    var received = 0
    var deliveredToDevice = 0
    var deliveredFromStorage = 0
    var storedDeviceOffline = 0
    var storedPowerConsiderations = 0
    var discardedTokenUnregistered = 0
    var discardedExpired = 0
    var discardedCoalesced = 0

    init() {}

    init(policy: PolicyCounters, hub: HubCounters) {
        received = policy.silentAccepted + policy.alertingAccepted + policy.otherAccepted + hub.acceptedWithoutDevice
        deliveredToDevice = hub.delivered - hub.deliveredFromStorage
        deliveredFromStorage = hub.deliveredFromStorage
        storedDeviceOffline = policy.heldOffline
        storedPowerConsiderations = policy.held - policy.heldOffline
        discardedTokenUnregistered = policy.unregistered
        discardedExpired = policy.expired + policy.notStored
        discardedCoalesced = policy.coalesced + policy.overflowed
    }

    static func field(_ state: DeliveryState) -> any KeyPath<DeliveryStateCounts, Int> & Sendable {
        switch state {
        case .received: \.received
        case .deliveredToDevice: \.deliveredToDevice
        case .deliveredFromStorage: \.deliveredFromStorage
        case .storedDeviceOffline: \.storedDeviceOffline
        case .storedPowerConsiderations: \.storedPowerConsiderations
        case .discardedTokenUnregistered: \.discardedTokenUnregistered
        case .discardedExpired: \.discardedExpired
        case .discardedCoalesced: \.discardedCoalesced
        }
    }
}
