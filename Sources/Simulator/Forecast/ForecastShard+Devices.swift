import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// The devices: events into each `SimulatedIPhone`, and what its runtime did back to the gateway.
extension ForecastShard {
    func deviceEvent(_ device: Int, _ event: RuntimeEvent) {
        if isTraced(device) { traceEvent(device, event) }
        var link = ShardLink(shard: self, device: device)
        var actions = runtimeBuffers.take()
        iphones[device].handle(event, at: UnixTime(milliseconds: now), link: &link, into: &actions)
        after(device, actions)
        runtimeBuffers.give(&actions)
    }

    /// What the device's runtime did: its messages go to the gateway, every action to the ledger; its
    /// deadline is filed again.
    func after(_ device: Int, _ actions: [RuntimeAction]) {
        let kind = Int(kindOf[device])
        let time = UnixTime(milliseconds: now)
        var decided = policyBuffers.take()
        for action in actions {
            ledger.record(action, at: time, profileIndex: ledgerIndex[kind])
            if isTraced(device) { traceAction(device, action) }
            decided.removeAll(keepingCapacity: true)
            switch action {
            case .woken:
                hourlyWakes[min(hourlyWakes.count - 1, Int((now - scenario.start.milliseconds) / 3_600_000))] += 1
                continue
            case .appState(let app, let state):
                core.policy.appStateChanged(
                    device: DeviceSlot(device), app: policyApps[kind][Int(app.index)], to: state, now: time,
                    into: &decided)
            case .complete(let id, let app, let result):
                core.policy.completed(
                    device: DeviceSlot(device), app: policyApps[kind][Int(app.index)], id: id, result: result,
                    now: time, into: &decided)
            case .wakeRefused(let app, let id, let reason):
                core.policy.notWoken(
                    device: DeviceSlot(device), app: policyApps[kind][Int(app.index)], id: id, reason: reason,
                    now: time, into: &decided)
            case .conditions(let lowPowerMode, let refreshOff, let debugger, let others):
                core.policy.conditionsChanged(
                    device: DeviceSlot(device), lowPowerMode: lowPowerMode, backgroundAppRefreshOff: refreshOff,
                    debuggerAttached: debugger, otherAppsWakesPerDay: others, now: time, into: &decided)
            case .rebooted:
                core.policy.rebooted(device: DeviceSlot(device), now: time)
            default:
                continue
            }
            apply(decided)
            armKeepAlive(device)
        }
        policyBuffers.give(&decided)
        fileDeadline(device)
    }

    /// Read through `inout`: a class's array element read in place (its getter copies the whole iPhone,
    /// a retain per field).
    static func deadline(of iphone: inout SimulatedIPhone) -> Int64 {
        iphone.nextDeadline?.milliseconds ?? .max
    }

    /// From when a keep-alive of `device` would release something (now, or when a herd window or a
    /// daily budget's period ends), or nil.
    static func releases(_ engine: inout ThrottleEngine, _ device: Int, _ now: Int64) -> UnixTime? {
        engine.nextReleasingKeepAlive(device: DeviceSlot(device), now: UnixTime(milliseconds: now))
    }

    static func nextTimer(_ engine: inout ThrottleEngine) -> Int64? {
        engine.nextTimer?.milliseconds
    }

    func fileDeadline(_ device: Int) {
        let next = Self.deadline(of: &iphones[device])
        guard next != deadlineAt[device] else { return }
        deadlineAt[device] = next
        queue.setDeadline(UInt32(device), at: next == .max ? nil : max(next, now))
    }
}
