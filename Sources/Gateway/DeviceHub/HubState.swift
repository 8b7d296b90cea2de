import GatewayCore
import PushModel
import PushPolicy
import PushStore

/// A push to write to a session (after the hub's lock is released).
struct HubWrite {
    var session: any DeviceSession
    var device: DeviceSlot
    var item: Outgoing
}

/// What the hub's one lock guards: the gateway's pure machine (`HubCore`: the policy, the delivery
/// queues, the channels, which devices are connected), each connected device's session, and the store
/// changes decided and not yet handed to the writer. Its methods make no I/O: they return what to write
/// to which session, which the hub does after unlocking. `Answer` is what a store change carries for
/// whoever waits for its commit (the hub: the event loop to answer the provider on), opaque here.
struct HubState<Answer: Sendable>: Sendable {
    var core: HubCore
    /// The session of each connected device (`core.connected`'s devices, no other).
    private(set) var sessions: [DeviceSlot: any DeviceSession] = [:]
    /// What the hub counted (`/v1/counters`), kept under the same lock as what it counts.
    var counters = HubCounters()
    /// When the tick's periodic checks last ran (stalled devices, broadcast cursors, stale devices).
    var checks = PeriodicChecks()
    /// Broadcast sequences accepted here.
    var sequencer = BroadcastSequencer()
    /// Store changes decided under the lock, in decision order, for the hub to hand to the store's
    /// writer after unlocking (no store call is made under this lock).
    private var posted: [StoreChange<Answer>] = []
    private var nextSequence: UInt64 = 0

    init(policy: ThrottleEngine, deliveries: DeliveryQueues) {
        core = HubCore(policy: policy, deliveries: deliveries)
    }

    var policy: ThrottleEngine {
        get { core.policy }
        _modify { yield &core.policy }
    }
    var deliveries: DeliveryQueues {
        get { core.deliveries }
        _modify { yield &core.deliveries }
    }
    var broadcasts: ChannelSubscriptions {
        get { core.broadcasts }
        _modify { yield &core.broadcasts }
    }

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

    func session(of device: DeviceSlot) -> (any DeviceSession)? { sessions[device] }
    var connectedCount: Int { sessions.count }
    var allSessions: [any DeviceSession] { Array(sessions.values) }

    /// The core's writes, to the sessions of their devices, counted as sent (and sent again) here under
    /// the lock that made them: the hub writes every one after unlocking.
    mutating func take(_ written: [CoreWrite], into writes: inout [HubWrite]) {
        for write in written {
            guard let session = sessions[write.device] else { continue }
            writes.append(HubWrite(session: session, device: write.device, item: write.item))
            counters.sent += 1
            if write.item.sends > 1 { counters.resent += 1 }
        }
    }

    mutating func noteResends(_ writes: [HubWrite], now: UnixTime) {
        for write in writes { core.noteResend(write.item, now: now) }
    }

    // MARK: Events

    mutating func received(_ push: PushNotification, device: DeviceSlot, now: UnixTime) -> [PolicyAction] {
        core.received(push, device: device, now: now)
    }

    /// `session` is the device's connection now: an earlier one is returned to close, what its queue
    /// kept is written, then what the policy held for it. A session that has already ended (while its
    /// device was being claimed: its `disconnected` came first and found nothing to remove) changes
    /// nothing.
    mutating func connected(
        _ device: DeviceSlot, session: any DeviceSession, now: UnixTime, writes: inout [HubWrite]
    ) -> (previous: (any DeviceSession)?, actions: [PolicyAction]) {
        guard !session.hasEnded else { return (nil, []) }
        let previous = sessions.updateValue(session, forKey: device)
        var written: [CoreWrite] = []
        let actions = core.connected(device, now: now, writes: &written)
        take(written, into: &writes)
        return (previous === session ? nil : previous, actions)
    }

    /// The device's `session` ended. Nothing if it was not the current one (a replaced connection).
    mutating func disconnected(_ device: DeviceSlot, session: any DeviceSession, now: UnixTime) -> Bool {
        guard sessions[device] === session else { return false }
        sessions.removeValue(forKey: device)
        core.disconnected(device, now: now)
        return true
    }

    mutating func acknowledged(
        _ id: APNsID, by device: DeviceSlot, now: UnixTime, writes: inout [HubWrite]
    ) -> Acknowledgement? {
        var written: [CoreWrite] = []
        let acknowledgement = core.acknowledged(id, by: device, now: now, writes: &written)
        take(written, into: &writes)
        return acknowledgement
    }

    mutating func route(
        _ actions: [PolicyAction], device: DeviceSlot?, now: UnixTime, slot: (DeviceToken) -> DeviceSlot?,
        unstored: APNsID? = nil, writes: inout [HubWrite]
    ) {
        var written: [CoreWrite] = []
        core.route(actions, device: device, now: now, slot: slot, unstored: unstored, writes: &written)
        take(written, into: &writes)
    }

    mutating func settled(
        _ push: PushNotification, device: DeviceSlot, stored: Bool, now: UnixTime, writes: inout [HubWrite]
    ) {
        var written: [CoreWrite] = []
        core.settled(push, device: device, stored: stored, now: now, writes: &written)
        take(written, into: &writes)
    }

    mutating func fanOut(
        _ message: BroadcastMessage, to slice: ArraySlice<DeviceSlot>, now: UnixTime, writes: inout [HubWrite]
    ) {
        var written: [CoreWrite] = []
        core.fanOut(message, to: slice, now: now, writes: &written)
        take(written, into: &writes)
    }

    mutating func subscribe(
        _ device: DeviceSlot, to channel: ChannelID, bundleID: String, storage: MessageStoragePolicy, now: UnixTime,
        writes: inout [HubWrite]
    ) -> ChannelSubscriptions.Subscription? {
        var written: [CoreWrite] = []
        let subscription = core.subscribe(
            device, to: channel, bundleID: bundleID, storage: storage, now: now, writes: &written)
        take(written, into: &writes)
        return subscription
    }

    /// Another node runs the device now: its session (to close), queue and policy state are let go; the
    /// pushes to hand over (held, and queued or not acknowledged) are returned.
    mutating func lost(_ device: DeviceSlot) -> (session: (any DeviceSession)?, handOver: [PushNotification]) {
        let session = sessions.removeValue(forKey: device)
        let (_, held, queued) = core.lost(device)
        return (session, queued.map(\.push) + held.map(\.notification))
    }

    mutating func adopt(
        _ device: DeviceSlot, budgets: [(bundleID: String, budget: ThrottleBudget)], pending: [PendingPush],
        now: UnixTime, writes: inout [HubWrite]
    ) -> (restored: Int, overflow: [APNsID], actions: [PolicyAction]) {
        var written: [CoreWrite] = []
        let adopted = core.adopt(device, budgets: budgets, pending: pending, now: now, writes: &written)
        take(written, into: &writes)
        return adopted
    }
}

/// What one decision changes in the store: the new notification, what became of others, the budgets;
/// with an answer when someone waits for its commit (the hub: the event loop a provider's answer goes
/// out on).
struct StoreChange<Answer: Sendable>: Sendable {
    var inserting: StoredNotification?
    var outcomes: [NotificationOutcome] = []
    var budgets: [String: [AppBudget]] = [:]
    /// Those of `budgets`' devices that lost an app's budget (`StoreBatch.budgetsPruned`).
    var budgetsPruned: Set<String> = []
    /// A channel subscription made or ended (the subscription's row before any cursor of it).
    var subscribing: StoredSubscription?
    var unsubscribing: SubscriptionKey?
    var answer: Answer?
    var sequence: UInt64 = 0

    /// What it changes, into the writer's batch.
    func apply(to batch: inout StoreBatch) {
        if let inserting { batch.notifications.append(inserting) }
        batch.outcomes.append(contentsOf: outcomes)
        for (device, apps) in budgets { batch.budgets[device] = apps }
        batch.budgetsPruned.formUnion(budgetsPruned)
        if let subscribing { batch.subscribe(subscribing) }
        if let unsubscribing { batch.unsubscribe(unsubscribing) }
    }
}
