import DeviceRuntime
import GatewayCore
import PushModel
import PushPolicy

/// The gateway's decisions: the policy's actions carried out through the core, each delivery acknowledged
/// at once by its device.
extension ForecastShard {
    /// Carries out the policy's actions: deliveries reach their device (which acknowledges at once), and
    /// every decision is counted for its device's kind.
    func apply(_ actions: [PolicyAction]) {
        for action in actions {
            switch action {
            case .deliver(let push, let rule, let wake):
                // Into the device's queue, as the hub does; what its window lets through is delivered.
                var writes = writeBuffers.take()
                let device = device(of: push.id)
                core.routeInstant(
                    push, rule: rule, wake: wake, to: DeviceSlot(device),
                    app: slot(of: push.bundleID, device).map { policyApps[Int(kindOf[device])][Int($0.index)] },
                    now: UnixTime(milliseconds: now), writes: &writes)
                deliver(writes)
                writeBuffers.give(&writes)
            case .hold(let id, let rule):
                let device = self.device(of: id)
                count(rule, device)
                if isTraced(device) {
                    record(device, "hold") {
                        $0.apnsID = id.description
                        $0.rule = rule.rawValue
                    }
                }
                armKeepAlive(device)
            case .discard(let id, let rule):
                let device = self.device(of: id)
                count(rule, device)
                if liveUpdatesInFlight.remove(id) != nil { costs[Int(kindOf[device])].liveActivityUpdatesDropped += 1 }
                if isTraced(device) {
                    record(device, "discard") {
                        $0.apnsID = id.description
                        $0.rule = rule.rawValue
                    }
                }
            case .deadlineMissed(let id):
                let device = self.device(of: id)
                costs[Int(kindOf[device])].deadlineMisses += 1
                if isTraced(device) { record(device, "deadline_missed") { $0.apnsID = id.description } }
            case .notWoken(let id, let reason):
                let device = self.device(of: id)
                if isTraced(device) {
                    record(device, "not_woken") {
                        $0.apnsID = id.description
                        $0.reason = reason.rawValue
                    }
                }
            case .completed, .completedLate:
                break
            }
        }
        armPolicyTimer()
    }

    /// The pushes the core let through reach their devices, which acknowledge each at once (what the
    /// acknowledgement lets through next, the same).
    func deliver(_ writes: [CoreWrite]) {
        var writes = writes
        var index = 0
        while index < writes.count {
            let write = writes[index]
            index += 1
            let push = write.item.push
            let rule = write.item.rule
            let wake = write.item.wake
            let device = Int(write.device)
            if let stamp = push.broadcast {
                delivered(broadcast: write, stamp: stamp, &writes)
                continue
            }
            count(rule, device)
            if isTraced(device) {
                record(device, "deliver") {
                    $0.apnsID = push.id.description
                    $0.rule = rule.rawValue
                    $0.wake = wake
                }
            }
            let app = slot(of: push.bundleID, device)
            if !write.acknowledged {
                _ = core.acknowledged(
                    push.id, by: write.device, app: app.map { policyApps[Int(kindOf[device])][Int($0.index)] },
                    now: UnixTime(milliseconds: now), writes: &writes)
            }
            if push.pushType == .liveactivity { liveUpdatesInFlight.remove(push.id) }
            guard let app else { continue }
            if push.pushType == .liveactivity, let activity = Self.activityTokens.firstIndex(of: push.deviceToken),
                let version = AnnouncementRequest.version(in: push.payload)
            {
                // The activity its token names, the version its content-state carries, stamped with the
                // version's publication, as the backend stamps it (`announce`).
                deviceEvent(
                    device,
                    .liveActivityUpdated(
                        app: app, activity: activity, version: version, timestamp: publishTimes[version - 1] / 1000))
            } else if let surface = WidgetKitSurface(push.pushType),
                let version = AnnouncementRequest.version(in: push.payload)
            {
                costs[Int(kindOf[device])].reloadPushesDelivered[surface.index] += 1
                deviceEvent(device, .widgetKitPushed(app: app, surface: surface, version: version))
            } else {
                deviceEvent(device, .pushDelivered(app: app, apnsID: push.id, silent: wake))
            }
        }
    }

    /// A broadcast written to a subscriber: acknowledged at once (its cursor moves), and the activity
    /// that follows the channel shows the version, stamped with its publication.
    func delivered(broadcast write: CoreWrite, stamp: BroadcastStamp, _ writes: inout [CoreWrite]) {
        let device = Int(write.device)
        let time = UnixTime(milliseconds: now)
        _ = core.acknowledged(write.item.id, by: write.device, now: time, writes: &writes)
        costs[Int(kindOf[device])].broadcastWrites += 1
        guard let channel = channelIndex[stamp.channel],
            let app = slot(of: channels[channel].bundleID, device),
            let version = AnnouncementRequest.version(in: write.item.push.payload)
        else { return }
        deviceEvent(
            device,
            .liveActivityUpdated(
                app: app, activity: channels[channel].activity, version: version,
                timestamp: publishTimes[version - 1] / 1000))
    }

    func count(_ rule: Rule, _ device: Int) {
        costs[Int(kindOf[device])].rules[Self.rules.firstIndex(of: rule)!] += 1
    }

    /// Scanned, not hashed: a `Rule` hashes its raw value, a string.
    static let rules = Rule.allCases

    /// Push ids carry their device's fleet-wide index in their high half.
    func device(of id: APNsID) -> Int { Int(id.high) - firstDevice }

    /// A device with held pushes that a keep-alive would release sends its next keep-alive into the
    /// policy. Others send keep-alives that change nothing (expired pushes are the policy timer's), and
    /// they are not simulated: a device is looked at again when a push is held, or its conditions or an
    /// app's state change (a force-quit app relaunched, Low Power Mode ending).
    func armKeepAlive(_ device: Int) {
        guard keepAliveAt[device] == .max, let from = Self.releases(&core.policy, device, now) else { return }
        let at = keepAlives[device].first(atOrAfter: from).milliseconds
        keepAliveAt[device] = at
        queue.schedule(at: at, .keepAlive, target: UInt32(device))
    }

    /// The policy's timers run on the hub's tick (every 200 ms), as in the gateway.
    func armPolicyTimer() {
        guard let next = Self.nextTimer(&core.policy) else { return }
        let tick: Int64 = 200
        let start = scenario.start.milliseconds
        var at = max(next, now + 1)
        at = start + ((at - start + tick - 1) / tick) * tick
        guard at < policyTimerAt else { return }
        policyTimerAt = at
        queue.schedule(at: at, .policyTimer, target: 0)
    }
}
