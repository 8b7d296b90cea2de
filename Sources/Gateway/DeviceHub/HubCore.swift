import PushModel
import PushPolicy
import PushStore

/// A device's connection, as the hub's core keeps it.
typealias HubSession = any DeviceSession

/// A push to write to a session (after the hub's lock is released).
struct HubWrite {
    var session: HubSession
    var device: DeviceSlot
    var item: Outgoing
}

/// What the hub's one lock guards: the policy, every device's delivery queue, and which session is each
/// device's current one. Its methods are pure (no I/O, time passed in): they change the state and return
/// what to write to which session, which the hub does after unlocking. Tests drive it with plain
/// objects as sessions. `Answer` is what a store change carries for whoever waits for its commit (the
/// hub: the event loop to answer the provider on), opaque here.
struct HubCore<Answer: Sendable>: Sendable {
    typealias Session = HubSession
    typealias Write = HubWrite

    var policy: ThrottleEngine
    var deliveries: DeliveryQueues
    /// The channel subscriptions of the devices this node runs, and each channel's newest broadcast.
    var broadcasts = ChannelSubscriptions()
    private(set) var sessions: [DeviceSlot: Session] = [:]
    /// New pushes whose insert the store has not committed yet: a delivery of one, decided with it or
    /// released later (an alert carrying a held push along), waits in its queue for `settled`.
    private(set) var unstored: Set<APNsID> = []
    /// Store changes decided under the lock, in decision order, for the hub to hand to the store's
    /// writer after unlocking (no store call is made under this lock).
    private var posted: [StoreChange<Answer>] = []
    private var nextSequence: UInt64 = 0

    /// Posts a store change; its sequence number.
    mutating func post(_ change: StoreChange<Answer>) -> UInt64 {
        var change = change
        change.sequence = nextSequence
        nextSequence &+= 1
        posted.append(change)
        return change.sequence
    }

    /// Everything posted so far, in order.
    mutating func takePosted() -> [StoreChange<Answer>] {
        defer { posted.removeAll(keepingCapacity: true) }
        return posted
    }

    init(policy: ThrottleEngine, deliveries: DeliveryQueues) {
        self.policy = policy
        self.deliveries = deliveries
    }

    func session(of device: DeviceSlot) -> Session? { sessions[device] }
    var connectedCount: Int { sessions.count }
    var allSessions: [Session] { Array(sessions.values) }

    /// Writes of pushes written before (to a connection that ended) go in the decision log.
    mutating func noteResends(_ writes: [Write], now: UnixTime) {
        for write in writes where write.item.sends > 1 {
            policy.sentAgain(write.item.id, sends: write.item.sends, now: now)
        }
    }

    // MARK: Events

    /// A push accepted for `device`. The policy hears first that the device is offline when it has no
    /// session (a device restored from the store, or one that never said hello, is offline).
    mutating func received(_ push: PushNotification, device: DeviceSlot, now: UnixTime) -> [PolicyAction] {
        if sessions[device] == nil, policy.conditions(of: device).online {
            policy.disconnected(device: device, now: now)
        }
        return policy.received(push, device: device, now: now)
    }

    /// `session` is the device's connection now: an earlier one is returned to close, what its queue
    /// kept is written, then what the policy held for it. A session that has already ended (while its
    /// device was being claimed: its `disconnected` came first and found nothing to remove) changes
    /// nothing.
    mutating func connected(
        _ device: DeviceSlot, session: Session, now: UnixTime, writes: inout [Write]
    ) -> (previous: Session?, actions: [PolicyAction]) {
        guard !session.hasEnded else { return (nil, []) }
        let previous = sessions.updateValue(session, forKey: device)
        if previous != nil { deliveries.disconnected(device) }
        var items: [Outgoing] = []
        deliveries.connected(device, now: now, into: &items)
        // Then each channel's newest broadcast the device has not been given (after what it was given
        // before, which its queue sends again).
        for message in broadcasts.caughtUp(device, now: now) {
            deliveries.enqueue(
                Outgoing(push: message.push, rule: .broadcastCaughtUp, wake: false), for: device, now: now, into: &items
            )
        }
        writes += items.map { Write(session: session, device: device, item: $0) }
        let actions = policy.connected(device: device, now: now)
        return (previous === session ? nil : previous, actions)
    }

    /// The device's `session` ended. Nothing if it was not the current one (a replaced connection).
    mutating func disconnected(_ device: DeviceSlot, session: Session, now: UnixTime) -> Bool {
        guard sessions[device] === session else { return false }
        sessions.removeValue(forKey: device)
        deliveries.disconnected(device)
        policy.disconnected(device: device, now: now)
        return true
    }

    /// The device acknowledged `id`: the push it names (nil if unknown or repeated), and what the window
    /// now lets through.
    mutating func acknowledged(_ id: APNsID, by device: DeviceSlot, now: UnixTime, writes: inout [Write]) -> Outgoing? {
        var items: [Outgoing] = []
        guard let item = deliveries.acknowledged(id, by: device, now: now, into: &items) else { return nil }
        policy.acknowledged(id, device: device, bundleID: item.push.bundleID, wake: item.wake, now: now)
        if let session = sessions[device] {
            writes += items.map { Write(session: session, device: device, item: $0) }
        }
        return item
    }

    /// Puts the policy's deliveries in their devices' queues (`device`, or the device of each push's
    /// token via `slot`); what the windows let through is written.
    /// `unstored`: the push these actions were decided for, if its insert is not committed yet.
    mutating func route(
        _ actions: [PolicyAction], device: DeviceSlot?, now: UnixTime, slot: (DeviceToken) -> DeviceSlot?,
        unstored: APNsID? = nil, writes: inout [Write]
    ) {
        if let unstored { self.unstored.insert(unstored) }
        var items: [Outgoing] = []
        for action in actions {
            guard case .deliver(let push, let rule, let wake) = action,
                let target = device ?? slot(push.deviceToken)
            else { continue }
            items.removeAll(keepingCapacity: true)
            deliveries.enqueue(
                Outgoing(push: push, rule: rule, wake: wake, durable: !isUnstored(push.id)), for: target, now: now,
                into: &items)
            guard !items.isEmpty, let session = sessions[target] else { continue }
            for item in items { writes.append(Write(session: session, device: target, item: item)) }
        }
    }

    /// The store's commit of `push` (accepted for `device`) ended: if it was stored, its delivery may be
    /// written; if not, its provider is answered with an error and the queue and the policy forget it.
    /// What the device's window lets through now is written either way.
    mutating func settled(
        _ push: PushNotification, device: DeviceSlot, stored: Bool, now: UnixTime, writes: inout [Write]
    ) {
        unstored.remove(push.id)
        var items: [Outgoing] = []
        if stored {
            deliveries.stored(push.id, for: device, now: now, into: &items)
        } else {
            _ = deliveries.withdraw(push.id, for: device, now: now, into: &items)
            policy.withdraw(push.id, device: device, bundleID: push.bundleID, now: now)
        }
        guard let session = sessions[device] else { return }
        writes += items.map { Write(session: session, device: device, item: $0) }
    }

    /// Gives `message` to the subscribers in `slice` that are connected and have not had it: into their
    /// queues, and written as far as their windows let it.
    mutating func fanOut(
        _ message: BroadcastMessage, to slice: ArraySlice<DeviceSlot>, now: UnixTime, writes: inout [Write]
    ) {
        var items: [Outgoing] = []
        for device in slice {
            guard let session = sessions[device],
                broadcasts.fanOut(message, to: device, connected: true)
            else { continue }
            items.removeAll(keepingCapacity: true)
            deliveries.enqueue(
                Outgoing(push: message.push, rule: .broadcast, wake: false), for: device, now: now, into: &items)
            for item in items { writes.append(Write(session: session, device: device, item: item)) }
        }
    }

    private func isUnstored(_ id: APNsID) -> Bool { !unstored.isEmpty && unstored.contains(id) }

    /// Another node runs the device now: its session (to close), queue and policy state are let go; the
    /// held pushes are returned to hand over (the queue's are pending in the store for the new owner).
    mutating func lost(_ device: DeviceSlot) -> (session: Session?, held: [HeldPush]) {
        let session = sessions.removeValue(forKey: device)
        _ = deliveries.removeAll(of: device)
        broadcasts.forget(device)
        return (session, policy.release(device: device))
    }

    /// The device's state from the store (at start or on a claim): deliveries it had not acknowledged go
    /// back to its queue in their order (never coalesced: they were decided for a reachable device), the
    /// rest is held by the policy as for an offline device. Returns the held pushes beyond the limit.
    mutating func adopt(
        _ device: DeviceSlot, budgets: [(bundleID: String, budget: ThrottleBudget)], pending: [PendingPush],
        now: UnixTime
    ) -> (restored: Int, overflow: [APNsID]) {
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
        return (pending.count - overflow.count, overflow)
    }
}

/// A pending notification from the store, as `HubCore.adopt` needs it.
struct PendingPush: Sendable {
    var push: PushNotification
    var expiresAt: UnixTime?
    /// The policy's last decision (nil: none yet, e.g. routed to a node that never ran it).
    var rule: Rule?
}

/// What one decision changes in the store: the new notification, what became of others, the budgets;
/// with an answer when someone waits for its commit (the hub: the event loop a provider's answer goes
/// out on).
struct StoreChange<Answer: Sendable>: Sendable {
    var inserting: StoredNotification?
    var outcomes: [NotificationOutcome]
    var budgets: [String: [AppBudget]]
    var answer: Answer?
    var sequence: UInt64 = 0
}
