import PushModel
import PushPolicy

/// A push the core lets through to a connected device: the shell writes it to the device's connection
/// (after its lock is released), an instant session delivers it at once (the forecast).
public struct CoreWrite: Sendable {
    public var device: DeviceSlot
    public var item: Outgoing
    /// Written to a session that acknowledges at once, and acknowledged already (`routeInstant`).
    public var acknowledged: Bool

    public init(device: DeviceSlot, item: Outgoing, acknowledged: Bool = false) {
        self.device = device
        self.item = item
        self.acknowledged = acknowledged
    }
}

/// The gateway's decisions as one pure machine: the policy, every device's delivery queue, the channel
/// subscriptions and which devices are connected. Events in (a push accepted, a connection, an
/// acknowledgement, a broadcast), the pushes to write out, time passed in; no I/O and no session type:
/// the hub keeps its connections beside it under the same lock (`HubState`), the forecast's devices are
/// all connected and acknowledge at once. One machine, so the hub and the forecast deliver alike.
public struct HubCore: Sendable {
    public var policy: ThrottleEngine
    public var deliveries: DeliveryQueues
    /// The channel subscriptions of the devices this node runs, and each channel's newest broadcast.
    public var broadcasts = ChannelSubscriptions()
    /// The devices with a connection now.
    public private(set) var connected: Set<DeviceSlot> = []
    /// New pushes whose insert the store has not committed yet: a delivery of one, decided with it or
    /// released later (an alert carrying a held push along), waits in its queue for `settled`.
    public private(set) var unstored: Set<APNsID> = []
    /// What a queue lets through, reused from event to event.
    private var scratch: [Outgoing] = []

    public init(policy: ThrottleEngine, deliveries: DeliveryQueues) {
        self.policy = policy
        self.deliveries = deliveries
    }

    /// A write of a push written before (to a connection that ended) goes in the decision log.
    public mutating func noteResend(_ item: Outgoing, now: UnixTime) {
        if item.sends > 1 { policy.sentAgain(item.id, sends: item.sends, now: now) }
    }

    // MARK: Events

    /// A push accepted for `device`. The policy hears first that the device is offline when it is not
    /// connected (a device restored from the store, or one that never said hello, is offline).
    public mutating func received(_ push: PushNotification, device: DeviceSlot, now: UnixTime) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        received(push, device: device, now: now, into: &actions)
        return actions
    }

    /// The same, appending to `actions` (a caller that reuses its buffers).
    public mutating func received(
        _ push: PushNotification, device: DeviceSlot, now: UnixTime, into actions: inout [PolicyAction]
    ) {
        if !connected.contains(device), policy.conditions(of: device).online {
            policy.disconnected(device: device, now: now)
        }
        policy.received(push, device: device, now: now, into: &actions)
    }

    /// The device has a connection now (a new one replaces the one it had: what was written to that one
    /// and not acknowledged is written again): what its queue kept is written, then each channel's newest
    /// broadcast it has not had, then what the policy held for it.
    public mutating func connected(_ device: DeviceSlot, now: UnixTime, writes: inout [CoreWrite]) -> [PolicyAction] {
        if !connected.insert(device).inserted { deliveries.disconnected(device) }
        var items: [Outgoing] = []
        deliveries.connected(device, now: now, into: &items)
        // Then each channel's newest broadcast the device has not been given (after what it was given
        // before, which its queue sends again).
        for message in broadcasts.caughtUp(device, now: now) {
            deliveries.enqueue(
                Outgoing(push: message.push, rule: .broadcastCaughtUp, wake: false), for: device, now: now, into: &items
            )
        }
        writes += items.map { CoreWrite(device: device, item: $0) }
        return policy.connected(device: device, now: now)
    }

    /// The device's connection ended: what it had not acknowledged stays in its queue for the next.
    public mutating func disconnected(_ device: DeviceSlot, now: UnixTime) {
        guard connected.remove(device) != nil else { return }
        deliveries.disconnected(device)
        policy.disconnected(device: device, now: now)
    }

    /// The device acknowledged `id`: the push it names (nil if unknown or repeated) — a broadcast's moves
    /// the device's cursor on its channel — and what the window now lets through. `app`: the push's app
    /// as the policy names it, when the caller has it at hand (else it is looked up by bundle id).
    public mutating func acknowledged(
        _ id: APNsID, by device: DeviceSlot, app: PolicyApp? = nil, now: UnixTime, writes: inout [CoreWrite]
    ) -> Acknowledgement? {
        scratch.removeAll(keepingCapacity: true)
        guard let item = deliveries.acknowledged(id, by: device, now: now, into: &scratch) else { return nil }
        let cursorMoved: Bool
        if let stamp = item.push.broadcast {
            cursorMoved = broadcasts.acknowledged(stamp, by: device)
        } else {
            cursorMoved = false
            policyAcknowledged(item.push, device: device, app: app, wake: item.wake, now: now)
        }
        if !scratch.isEmpty, connected.contains(device) {
            for item in scratch { writes.append(CoreWrite(device: device, item: item)) }
        }
        return Acknowledgement(item: item, cursorMoved: cursorMoved)
    }

    /// Puts the policy's deliveries in their devices' queues (`device`, or the device of each push's
    /// token via `slot`); what the windows let through is written.
    /// `unstored`: the push these actions were decided for, if its insert is not committed yet.
    public mutating func route(
        _ actions: [PolicyAction], device: DeviceSlot?, now: UnixTime, slot: (DeviceToken) -> DeviceSlot?,
        unstored: APNsID? = nil, writes: inout [CoreWrite]
    ) {
        if let unstored { self.unstored.insert(unstored) }
        for action in actions {
            guard case .deliver(let push, let rule, let wake) = action,
                let target = device ?? slot(push.deviceToken)
            else { continue }
            route(push, rule: rule, wake: wake, to: target, now: now, writes: &writes)
        }
    }

    /// One delivery the policy decided, into `device`'s queue; what its window lets through is written.
    public mutating func route(
        _ push: PushNotification, rule: Rule, wake: Bool, to device: DeviceSlot, now: UnixTime,
        writes: inout [CoreWrite]
    ) {
        scratch.removeAll(keepingCapacity: true)
        deliveries.enqueue(
            Outgoing(push: push, rule: rule, wake: wake, durable: !isUnstored(push.id)), for: device, now: now,
            into: &scratch)
        guard !scratch.isEmpty, connected.contains(device) else { return }
        for item in scratch { writes.append(CoreWrite(device: device, item: item)) }
    }

    /// The store's commit of `push` (accepted for `device`) ended: if it was stored, its delivery may be
    /// written; if not, its provider is answered with an error and the queue and the policy forget it.
    /// What the device's window lets through now is written either way.
    public mutating func settled(
        _ push: PushNotification, device: DeviceSlot, stored: Bool, now: UnixTime, writes: inout [CoreWrite]
    ) {
        unstored.remove(push.id)
        var items: [Outgoing] = []
        if stored {
            deliveries.stored(push.id, for: device, now: now, into: &items)
        } else {
            _ = deliveries.withdraw(push.id, for: device, now: now, into: &items)
            policy.withdraw(push.id, device: device, bundleID: push.bundleID, now: now)
        }
        guard connected.contains(device) else { return }
        writes += items.map { CoreWrite(device: device, item: $0) }
    }

    /// Gives `message` to the subscribers in `slice` that are connected and have not had it: into their
    /// queues, and written as far as their windows let it.
    public mutating func fanOut(
        _ message: BroadcastMessage, to slice: ArraySlice<DeviceSlot>, now: UnixTime, writes: inout [CoreWrite]
    ) {
        var items: [Outgoing] = []
        for device in slice {
            guard connected.contains(device), broadcasts.fanOut(message, to: device, connected: true) else { continue }
            items.removeAll(keepingCapacity: true)
            deliveries.enqueue(
                Outgoing(push: message.push, rule: .broadcast, wake: false), for: device, now: now, into: &items)
            for item in items { writes.append(CoreWrite(device: device, item: item)) }
        }
    }

    /// One delivery to a device whose session acknowledges what is written to it in the same instant (the
    /// forecast's devices): with nothing else outstanding for it, the push is written and acknowledged at
    /// once — what `route` and then `acknowledged` would do, the queue empty before and after — and comes
    /// back marked acknowledged; otherwise it goes through the queue as any delivery (`route`).
    public mutating func routeInstant(
        _ push: PushNotification, rule: Rule, wake: Bool, to device: DeviceSlot, app: PolicyApp?, now: UnixTime,
        writes: inout [CoreWrite]
    ) {
        guard deliveries.count(of: device) == 0, connected.contains(device), !isUnstored(push.id) else {
            return route(push, rule: rule, wake: wake, to: device, now: now, writes: &writes)
        }
        policyAcknowledged(push, device: device, app: app, wake: wake, now: now)
        writes.append(
            CoreWrite(device: device, item: Outgoing(push: push, rule: rule, wake: wake, sends: 1), acknowledged: true))
    }

    /// An activity on the device subscribes to a channel (`ChannelSubscriptions.subscribe`): the
    /// channel's newest message, if it still stores it, goes to the device's queue (written as far as its
    /// window lets it). Nil when the device was subscribed already.
    public mutating func subscribe(
        _ device: DeviceSlot, to channel: ChannelID, bundleID: String, storage: MessageStoragePolicy, now: UnixTime,
        writes: inout [CoreWrite]
    ) -> ChannelSubscriptions.Subscription? {
        guard
            let (subscription, deliver) = broadcasts.subscribe(
                device, to: channel, bundleID: bundleID, storage: storage, now: now)
        else { return nil }
        if let deliver {
            route(deliver.push, rule: .broadcastCaughtUp, wake: false, to: device, now: now, writes: &writes)
        }
        return subscription
    }

    /// The policy hears of an acknowledgement, by the app's handle when the caller has it.
    private mutating func policyAcknowledged(
        _ push: PushNotification, device: DeviceSlot, app: PolicyApp?, wake: Bool, now: UnixTime
    ) {
        if let app {
            policy.acknowledged(push.id, device: device, app: app, wake: wake, now: now)
        } else {
            policy.acknowledged(push.id, device: device, bundleID: push.bundleID, wake: wake, now: now)
        }
    }

    private func isUnstored(_ id: APNsID) -> Bool { !unstored.isEmpty && unstored.contains(id) }

    /// Another node runs the device now: its connection (to close, if it had one), queue and policy state
    /// are let go; the held pushes and the queue's notifications (written and not acknowledged, or
    /// waiting) are returned to hand over. They are pending in the store too, but the new owner's claim
    /// may have read the device's pending pushes before the commit of the newest ones here; it runs each
    /// once. The queue's broadcasts are not handed over: they are no notifications, and the new owner
    /// gives the device each channel's newest it has not had (its cursors) when it connects.
    public mutating func lost(_ device: DeviceSlot) -> (wasConnected: Bool, held: [HeldPush], queued: [Outgoing]) {
        let wasConnected = connected.remove(device) != nil
        let queued = deliveries.removeAll(of: device).filter { $0.push.broadcast == nil }
        broadcasts.forget(device)
        return (wasConnected, policy.release(device: device), queued)
    }

    /// The device's state from the store (at start, on a claim or a takeover): deliveries it had not
    /// acknowledged go back to its queue in their order (never coalesced: they were decided for a
    /// reachable device), the rest is held by the policy as for an offline device. Returns the held
    /// pushes beyond the limit. A device connected here meanwhile (a takeover of a device this node ran
    /// without having heard that another node had claimed it) is connected again to its new state, as on
    /// a connection: its queue is written (`writes`) and the policy's releases for it are returned — else
    /// the policy would hold its pushes as for an offline device, and its queue would wait for a
    /// connection, until the device reconnected.
    public mutating func adopt(
        _ device: DeviceSlot, budgets: [(bundleID: String, budget: ThrottleBudget)], pending: [PendingPush],
        now: UnixTime, writes: inout [CoreWrite]
    ) -> (restored: Int, overflow: [APNsID], actions: [PolicyAction]) {
        _ = deliveries.removeAll(of: device)
        _ = policy.release(device: device)
        var bundles: [String] = []
        var held: [String: [HeldPush]] = [:]
        var sentWakes: [String: [APNsID]] = [:]
        var unused: [Outgoing] = []
        for entry in pending {
            let bundleID = entry.push.bundleID
            if held[bundleID] == nil, sentWakes[bundleID] == nil { bundles.append(bundleID) }
            if let rule = entry.rule, rule.isDelivery {
                let wake = entry.push.notificationClass == .silent
                if wake { sentWakes[bundleID, default: []].append(entry.push.id) }
                deliveries.enqueue(
                    Outgoing(push: entry.push, rule: rule, wake: wake), for: device, now: now, into: &unused)
            } else {
                // A held push keeps its reason (over budget it still waits for a window, its budget or its
                // condition); one never decided (routed, or taken over before its decision) is for a device
                // that is offline here.
                let rule = entry.rule.flatMap { $0.isHeld ? $0 : nil } ?? .offline
                held[bundleID, default: []].append(
                    HeldPush(notification: entry.push, expiresAt: entry.expiresAt, rule: rule))
            }
        }
        var budget: [String: ThrottleBudget] = [:]
        for app in budgets {
            budget[app.bundleID] = app.budget
            if held[app.bundleID] == nil, sentWakes[app.bundleID] == nil { bundles.append(app.bundleID) }
        }
        var overflow: [APNsID] = []
        for bundleID in bundles {
            overflow += policy.restore(
                device: device, bundleID: bundleID, budget: budget[bundleID] ?? .untouched,
                held: held[bundleID] ?? [], sentWakes: sentWakes[bundleID] ?? [])
        }
        _ = policy.takeChangedDevices()
        let restored = pending.count - overflow.count
        guard connected.contains(device) else { return (restored, overflow, []) }
        var items: [Outgoing] = []
        deliveries.connected(device, now: now, into: &items)
        writes += items.map { CoreWrite(device: device, item: $0) }
        return (restored, overflow, policy.connected(device: device, now: now))
    }
}

/// What an acknowledgement settled.
public struct Acknowledgement: Sendable {
    /// The push acknowledged.
    public var item: Outgoing
    /// A broadcast acknowledged past the device's cursor on its channel: the cursor moved (to be stored).
    public var cursorMoved: Bool
}

/// A pending notification from the store, as `HubCore.adopt` needs it.
public struct PendingPush: Sendable {
    public var push: PushNotification
    public var expiresAt: UnixTime?
    /// The policy's last decision (nil: none yet, e.g. routed to a node that never ran it).
    public var rule: Rule?

    public init(push: PushNotification, expiresAt: UnixTime?, rule: Rule?) {
        self.push = push
        self.expiresAt = expiresAt
        self.rule = rule
    }
}
