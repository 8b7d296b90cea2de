import GatewayCore
import DeviceProtocol
import Foundation
import PushModel
import PushPolicy
import PushStore
import Synchronization
import Testing

@testable import DeviceHub

/// The hub's locked state (the core, the sessions) without sockets: fake sessions, plain instants. Every event in each state a device can
/// be in (never connected, connected, replaced, gone, taken by another node), and what it writes.
@Suite struct HubStateTests {
    final class FakeSession: DeviceSession {
        let closed = Mutex(false)
        let ended = Mutex(false)
        func write(_ item: Outgoing, shared: inout SharedEncodings) {}
        func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?) { closed.withLock { $0 = true } }
        var hasEnded: Bool { ended.withLock { $0 } }
        func end() { ended.withLock { $0 = true } }
    }

    static let t0 = UnixTime(seconds: 1_800_000_000)
    static let token = DeviceToken(String(repeating: "cd", count: 32))!
    var counter = 0

    mutating func push(_ kind: NotificationClass, bundle: String = "com.example.app") -> PushNotification {
        counter += 1
        return PushNotification(
            id: APNsID(header: String(format: "00000000-0000-4000-8000-%012d", counter))!, deviceToken: Self.token,
            topic: Topic(bundle)!, bundleID: bundle, pushType: kind == .silent ? .background : .alert,
            priority: kind == .silent ? .conservePower : .immediate, expiration: .storeByDefault, collapseID: nil,
            notificationClass: kind, payload: [], teamID: nil, receivedAt: Self.t0)
    }

    func core(window: Int = 2) -> HubState<Never> {
        HubState(policy: ThrottleEngine(), deliveries: DeliveryQueues(window: window, limit: 100))
    }

    /// `received`, then the routing the hub does under the same lock.
    func receive(_ push: PushNotification, _ core: inout HubState<Never>, device: DeviceSlot = 1) -> [HubWrite] {
        var writes: [HubWrite] = []
        let actions = core.received(push, device: device, now: Self.t0)
        core.route(actions, device: device, now: Self.t0, slot: { _ in device }, writes: &writes)
        return writes
    }

    func connect(_ session: FakeSession, _ core: inout HubState<Never>, device: DeviceSlot = 1) -> (
        previous: (any DeviceSession)?, writes: [HubWrite]
    ) {
        var writes: [HubWrite] = []
        let (previous, actions) = core.connected(device, session: session, now: Self.t0, writes: &writes)
        core.route(actions, device: device, now: Self.t0, slot: { _ in device }, writes: &writes)
        return (previous, writes)
    }

    @Test mutating func aDeviceThatNeverConnectedIsOfflineAndGetsWhatWasKeptWhenItDoes() {
        var core = core()
        let alert = push(.alerting)
        #expect(receive(alert, &core).isEmpty)
        #expect(core.policy.conditions(of: 1).online == false, "no session: offline for the policy")
        let session = FakeSession()
        let (previous, writes) = connect(session, &core)
        #expect(previous == nil)
        #expect(writes.map(\.item.id) == [alert.id])
        #expect(writes.first?.item.rule == .reconnect)
        #expect(writes.allSatisfy { $0.session === session })
    }

    @Test mutating func theWindowHoldsBackWhatTheDeviceHasNotAcknowledged() {
        var core = core(window: 2)
        let session = FakeSession()
        _ = connect(session, &core)
        let alerts = (0..<3).map { _ in push(.alerting) }
        let written = alerts.flatMap { receive($0, &core) }
        #expect(written.map(\.item.id) == [alerts[0].id, alerts[1].id])
        var writes: [HubWrite] = []
        let first = core.acknowledged(alerts[0].id, by: 1, now: Self.t0, writes: &writes)
        #expect(first?.item.id == alerts[0].id)
        #expect(writes.map(\.item.id) == [alerts[2].id])
        let repeated = core.acknowledged(alerts[0].id, by: 1, now: Self.t0, writes: &writes)
        #expect(repeated == nil, "repeated")
    }

    @Test mutating func aReplacingSessionGetsWhatTheFirstHadNotAcknowledgedAndTheFirstIsReturnedToClose() {
        var core = core()
        let first = FakeSession()
        _ = connect(first, &core)
        let alert = push(.alerting)
        #expect(receive(alert, &core).map(\.item.id) == [alert.id])
        let second = FakeSession()
        let (previous, writes) = connect(second, &core)
        #expect(previous === first)
        #expect(writes.map(\.item.id) == [alert.id])
        #expect(writes.first?.item.sends == 2)
        #expect(writes.allSatisfy { $0.session === second })
        // The first session's end, heard late, changes nothing.
        let ended = core.disconnected(1, session: first, now: Self.t0)
        #expect(ended == false)
        #expect(core.session(of: 1) === second)
    }

    /// A device connecting to a node that does not own it is claimed first (a store round trip); a
    /// session that ends meanwhile is heard of before it is installed, and must not be installed after.
    @Test mutating func aSessionThatEndedWhileItsDeviceWasClaimedIsNeverInstalled() {
        var core = core()
        let session = FakeSession()
        session.end()
        #expect(core.disconnected(1, session: session, now: Self.t0) == false, "not installed yet")
        // The claim is done: the hub installs the session it was claiming for.
        let (previous, writes) = connect(session, &core)
        #expect(previous == nil && writes.isEmpty)
        #expect(core.session(of: 1) == nil)
        #expect(core.connectedCount == 0)
        // A push now waits for the device's next session, which gets it.
        let alert = push(.alerting)
        #expect(receive(alert, &core).isEmpty)
        #expect(core.policy.conditions(of: 1).online == false, "no session: offline for the policy")
        let next = FakeSession()
        #expect(connect(next, &core).writes.map(\.item.id) == [alert.id])
        #expect(core.session(of: 1) === next)
    }

    @Test mutating func whatIsQueuedForAGoneDeviceIsNeverCoalescedByLaterArrivals() {
        var core = core(window: 1)
        let session = FakeSession()
        _ = connect(session, &core)
        let queued = (0..<3).map { _ in push(.alerting) }
        for alert in queued { _ = receive(alert, &core) }
        let ended = core.disconnected(1, session: session, now: Self.t0)
        #expect(ended)
        // Two more while it is away: APNs keeps the newest of those only.
        let away = (0..<2).map { _ in push(.alerting) }
        for alert in away { _ = receive(alert, &core) }
        var writes: [HubWrite] = []
        let again = FakeSession()
        let (_, connectWrites) = connect(again, &core)
        writes = connectWrites
        var delivered: [APNsID] = []
        while let next = writes.first {
            writes.removeFirst()
            delivered.append(next.item.id)
            _ = core.acknowledged(next.item.id, by: 1, now: Self.t0, writes: &writes)
        }
        #expect(delivered == queued.map(\.id) + [away[1].id], "the queued three in order, then the newest kept")
    }

    /// What a decision posts for the store: a wake's budget, with no app's budget lost; a day later the
    /// app's state is idle and dropped, and the change says so, for its row to go.
    @Test mutating func aDecisionSaysWhenADeviceLostAnAppsBudget() {
        var core = core()
        core.policy.tracksChanges = true
        let directory = HubDirectory(slot: { _ in 1 }, deviceID: { _ in "dev-1" })
        func decide(_ actions: [PolicyAction], at now: UnixTime) -> StoreChange<Never>? {
            _ = core.decided(
                actions, writes: [], now: now, device: 1, inserting: nil, answer: nil, stores: true,
                directory: directory)
            return core.takePosted().last
        }
        let wake = push(.silent)
        let woken = decide(core.policy.received(wake, device: 1, now: Self.t0), at: Self.t0)
        #expect(woken?.budgets["dev-1"]?.map(\.bundleID) == ["com.example.app"])
        #expect(woken?.budgetsPruned == [])
        _ = decide(
            core.policy.completed(device: 1, bundleID: "com.example.app", id: wake.id, result: .newData, now: Self.t0),
            at: Self.t0)
        let later = Self.t0.adding(seconds: 24 * 3600)
        let idle = decide(core.policy.received(push(.alerting), device: 1, now: later), at: later)
        #expect(idle?.budgets["dev-1"] == [])
        #expect(idle?.budgetsPruned == ["dev-1"])
        var batch = StoreBatch()
        idle?.apply(to: &batch)
        #expect(batch.budgetsPruned == ["dev-1"])
    }

    @Test mutating func adoptingPutsDeliveriesBackInTheQueueAndHoldsTheRest() {
        var core = core(window: 8)
        let alert = push(.alerting)
        let wake = push(.silent)
        let overBudget = push(.silent)
        let undecided = push(.alerting)
        var spent = ThrottleBudget.untouched
        spent.tokens = 0
        var none: [HubWrite] = []
        let (restored, overflow, actions) = core.adopt(
            1, budgets: [("com.example.app", spent)],
            pending: [
                PendingPush(push: alert, expiresAt: nil, rule: .alerting),
                PendingPush(push: wake, expiresAt: nil, rule: .onBudget),
                PendingPush(push: overBudget, expiresAt: nil, rule: .overBudget),
                PendingPush(push: undecided, expiresAt: nil, rule: nil),
            ], now: Self.t0, writes: &none)
        #expect(restored == 4)
        #expect(overflow.isEmpty)
        #expect(none.isEmpty && actions.isEmpty, "offline: nothing written, nothing released")
        #expect(core.deliveries.outstanding(of: 1).map(\.id) == [alert.id, wake.id])
        let session = FakeSession()
        let (_, writes) = connect(session, &core)
        // The queue first, in order; then what the policy kept for the offline device (the undecided
        // one), released by the reconnection. The push held over budget keeps its reason: a reconnect is
        // no window for it, the next keep-alive is (a release spends no budget).
        #expect(writes.map(\.item.id) == [alert.id, wake.id, undecided.id])
        #expect(writes.map(\.item.wake) == [false, true, false])
        var released: [HubWrite] = []
        core.route(
            core.policy.keepAlive(device: 1, now: Self.t0), device: 1, now: Self.t0, slot: { _ in 1 },
            writes: &released)
        #expect(released.map(\.item.id) == [overBudget.id])
        #expect(released.map(\.item.rule) == [.piggybackKeepAlive])
        // The restored wake was paid for: acknowledging it starts its deadline, no second charge.
        var more: [HubWrite] = []
        _ = core.acknowledged(wake.id, by: 1, now: Self.t0, writes: &more)
        let due = core.policy.advance(to: Self.t0.adding(seconds: 31))
        #expect(due == [.deadlineMissed(wake.id)])
    }

    /// A node that ran a device without having heard that another node claimed it (its notice not yet
    /// heard), the device connected here, takes it over when that node dies: the state adopted is for
    /// a device that is connected, not an offline one. Before, the policy held every push to it as for
    /// an offline device and its queue waited for a connection, until the device reconnected
    /// (`Benchmarks/fleet.sh 100000 7` with 1,000 streams: 18 alerts held for connected devices).
    @Test mutating func stateAdoptedForADeviceConnectedHereIsDeliveredAtOnce() {
        var core = core(window: 8)
        let session = FakeSession()
        _ = connect(session, &core)
        let queued = push(.alerting)
        let held = push(.alerting)
        let undecided = push(.alerting)
        var writes: [HubWrite] = []
        let (restored, _, actions) = core.adopt(
            1, budgets: [],
            pending: [
                PendingPush(push: queued, expiresAt: nil, rule: .alerting),
                PendingPush(push: held, expiresAt: nil, rule: .offline),
                PendingPush(push: undecided, expiresAt: nil, rule: nil),
            ], now: Self.t0, writes: &writes)
        #expect(restored == 3)
        #expect(writes.map(\.item.id) == [queued.id], "the queue, written to the connected session")
        #expect(writes.allSatisfy { $0.session === session })
        core.route(actions, device: 1, now: Self.t0, slot: { _ in 1 }, writes: &writes)
        #expect(writes.map(\.item.id) == [queued.id, held.id, undecided.id], "then what was held, released")
        #expect(core.policy.conditions(of: 1).online, "the policy knows the device is here")
        let alert = push(.alerting)
        #expect(receive(alert, &core).map(\.item.id) == [alert.id], "and the next push goes straight out")
    }

    @Test mutating func aDeviceLostToAnotherNodeHandsOverNoBroadcast() {
        var core = core(window: 1)
        let session = FakeSession()
        _ = connect(session, &core)
        let channel = ChannelID("Y2hhbm5lbC1vbmU=")!
        var none: [HubWrite] = []
        _ = core.subscribe(
            1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: Self.t0, writes: &none)
        let update = PushNotification(
            id: APNsID.generate(), deviceToken: Self.token, topic: Topic("com.example.app.push-type.liveactivity")!,
            bundleID: "com.example.app", pushType: .liveactivity, priority: .immediate, expiration: .storeByDefault,
            collapseID: nil, notificationClass: .other, payload: [], teamID: nil, receivedAt: Self.t0,
            broadcast: BroadcastStamp(channel: channel, sequence: 1))
        var written: [HubWrite] = []
        core.fanOut(
            BroadcastMessage(push: update, deliverableUntil: Self.t0.adding(seconds: 60)), to: [1], now: Self.t0,
            writes: &written)
        #expect(written.map(\.item.id) == [update.id])
        let alert = push(.alerting)
        #expect(receive(alert, &core).isEmpty, "behind the broadcast, in the queue")
        let (_, handOver) = core.lost(1)
        // The alert is a notification to hand over; the broadcast follows the device's channel cursor.
        #expect(handOver.map(\.id) == [alert.id])
    }

    @Test mutating func aDeviceLostToAnotherNodeLetsGoOfEverything() {
        var core = core(window: 1)
        let session = FakeSession()
        _ = connect(session, &core)
        let pushes = (0..<2).map { _ in push(.alerting) }
        for push in pushes { _ = receive(push, &core) }
        let (lostSession, handOver) = core.lost(1)
        #expect(lostSession === session)
        // Both handed to the new owner (pending in the store too; its claim may have read them or not).
        #expect(handOver.map(\.id) == pushes.map(\.id))
        #expect(core.deliveries.count(of: 1) == 0)
        #expect(core.session(of: 1) == nil)
    }
}

/// What the store records of a decision, without a store.
@Suite struct StoreChangeTests {
    static let t0 = UnixTime(seconds: 1_800_000_000)

    func push(_ n: Int, _ kind: NotificationClass = .alerting) -> PushNotification {
        PushNotification(
            id: APNsID(header: String(format: "00000000-0000-4000-8000-%012d", n))!,
            deviceToken: DeviceToken(String(repeating: "cd", count: 32))!, topic: Topic("com.example.app")!,
            bundleID: "com.example.app", pushType: .alert, priority: .immediate, expiration: .storeByDefault,
            collapseID: nil, notificationClass: kind, payload: [], teamID: nil, receivedAt: Self.t0)
    }

    @Test func aNewPushIsInsertedAndWhatBecameOfOthersIsRecorded() {
        let alert = push(1)
        let released = push(2, .silent)
        let coalesced = push(3)
        let decided = HubState<Never>.stored(
            alert, deviceID: "d", [.deliver(alert, rule: .alerting, wake: false)], settings: PolicySettings())
        let (inserting, outcomes) = HubState<Never>.storeChange(
            [
                .deliver(alert, rule: .alerting, wake: false), .deliver(released, rule: .piggybackAlert, wake: true),
                .discard(coalesced.id, rule: .coalescedNewest),
            ], decided: decided, new: true, now: Self.t0)
        #expect(inserting?.notification.id == alert.id)
        #expect(inserting?.rule == .alerting)
        #expect(
            outcomes == [
                NotificationOutcome(apnsID: released.id, state: .pending, rule: .piggybackAlert, at: Self.t0),
                NotificationOutcome(apnsID: coalesced.id, state: .discarded, rule: .coalescedNewest, at: Self.t0),
            ])
    }

    @Test func aPushAnotherNodeStoredGetsItsDecisionAsAnOutcome() {
        let routed = push(4)
        let decided = HubState<Never>.stored(
            routed, deviceID: "d", [.hold(routed.id, rule: .offline)], settings: PolicySettings())
        let (inserting, outcomes) = HubState<Never>.storeChange(
            [.hold(routed.id, rule: .offline)], decided: decided, new: false, now: Self.t0)
        #expect(inserting == nil)
        #expect(outcomes == [NotificationOutcome(apnsID: routed.id, state: .pending, rule: .offline, at: Self.t0)])
    }
}
