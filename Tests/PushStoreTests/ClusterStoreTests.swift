import Foundation
import PushModel
import PushPolicy
import PushStore
import Synchronization
import TestSupport
import Testing

/// Several nodes on one PostgreSQL database: notices go out with their commit, a claim moves a device's
/// ownership and brings its state, and only the owner writes its budgets.
@Suite struct ClusterStoreTests {
    static let t0 = StoreContractTests.t0

    @Test(.enabled(if: StoreUnderTest.postgresURL != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func noticesGoOutWithTheirCommitAndAClaimBringsTheDevicesState() async throws {
        try await withStores { stores in
            let (place, a, b) = try await twoNodes(in: &stores)

            // Node B listens; node A registers a device with a token and holds a push for it.
            let heard = Heard()
            stores.addTask {
                try await b.listen(ready: {}) { messages in heard.messages.withLock { $0 += messages } }
            }
            let device = StoredDevice(id: "dev-a", secretHash: [1, 2, 255], createdAt: Self.t0, owner: "node-a")
            let token = StoredToken(
                token: Samples.token(1), deviceID: "dev-a", bundleID: "com.example.a", unregisteredAt: nil)
            let held = Samples.stored(1, rule: .overBudget)
            let spent = [AppBudget(bundleID: "com.example.a", budget: Samples.budget(tokens: 0))]
            try await eventuallyListening(b, heard: heard, from: a)
            var batch = StoreBatch()
            batch.devices = [device]
            batch.tokens = [token]
            batch.notifications = [held]
            batch.budgets = ["dev-a": spent]
            batch.notices = [.device(device), .token(token)]
            try await a.commit(batch)
            try await eventually("node B heard of the device and its token") {
                heard.messages.withLock {
                    $0.contains { $0.notice == .device(device) } && $0.contains { $0.notice == .token(token) }
                }
            }
            #expect(heard.messages.withLock { $0.allSatisfy { $0.from == "node-a" } })

            // Node B claims the device: it gets the spent budget and the held push; A hears who owns it now.
            let claimed = try await b.claim(deviceID: "dev-a")
            #expect(claimed.previousOwner == "node-a")
            #expect(claimed.claim == 1)
            #expect(claimed.budgets == spent)
            #expect(claimed.pending.map(\.notification.id) == [held.notification.id])
            #expect(claimed.subscriptions.isEmpty)
            // Routed notices are loaded in one query, in the order asked; unknown ones are left out.
            var second = StoreBatch()
            let other = Samples.stored(2, rule: nil)
            second.notifications = [other]
            try await a.commit(second)
            let keys = [
                NotificationKey(apnsID: other.notification.id.value, teamID: "TEAM000001"),
                NotificationKey(apnsID: held.notification.id.value, teamID: "OTHERTEAM1"),
                NotificationKey(apnsID: held.notification.id.value, teamID: "TEAM000001"),
            ]
            #expect(try await a.notifications(keys) == [other, held])
            #expect(try await a.notifications([]) == [])

            // A no longer owns it: a late budget change from A is not written over B's.
            var late = StoreBatch()
            late.budgets = ["dev-a": [AppBudget(bundleID: "com.example.a", budget: Samples.budget(tokens: 3))]]
            try await a.commit(late)
            // Nor does a late change that lists no app delete B's rows.
            late.budgets = ["dev-a": []]
            late.budgetsPruned = ["dev-a"]
            try await a.commit(late)
            #expect(try await a.claim(deviceID: "dev-a").budgets == spent, "A's late write was fenced off")
            try await a.close()
            try await b.close()
            await place.remove()
        }
    }

    /// What a node that stopped listening may have missed comes back from the tables as notices: the
    /// devices other nodes own with their tokens and owners, and the pushes routed to it that its policy
    /// has not decided yet.
    @Test(.enabled(if: StoreUnderTest.postgresURL != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func missedNoticesAreRebuiltFromTheTables() async throws {
        try await withStores { stores in
            let (place, a, b) = try await twoNodes(in: &stores)
            let onA = StoredDevice(id: "dev-a", secretHash: [1], createdAt: Self.t0, owner: "node-a")
            let onB = StoredDevice(id: "dev-b", secretHash: [2], createdAt: Self.t0, owner: "node-b")
            let tokenA = StoredToken(
                token: Samples.token(1), deviceID: "dev-a", bundleID: "com.example.a", unregisteredAt: nil)
            let tokenB = StoredToken(
                token: Samples.token(2), deviceID: "dev-b", bundleID: "com.example.a", unregisteredAt: nil)
            var batch = StoreBatch()
            batch.devices = [onA, onB]
            batch.tokens = [tokenA, tokenB]
            // For B's device: one routed by A (no rule yet), one B's policy decided; one for A's device.
            var routed = Samples.stored(10, rule: nil)
            routed.deviceID = "dev-b"
            var decided = Samples.stored(11, rule: .overBudget)
            decided.deviceID = "dev-b"
            var forA = Samples.stored(12, rule: nil)
            forA.deviceID = "dev-a"
            batch.notifications = [routed, decided, forA]
            try await a.commit(batch)

            let missed = try await b.missedNotices()
            #expect(
                missed == [
                    .device(onA), .token(tokenA), .owner(deviceID: "dev-a", node: "node-a", claim: 0),
                    .route(node: "node-b", apnsID: routed.notification.id.value, teamID: "TEAM000001"),
                ])
            // Once B has decided it, the routed push is no longer missed.
            var outcome = StoreBatch()
            outcome.outcomes = [
                NotificationOutcome(apnsID: routed.notification.id, state: .pending, rule: .overBudget, at: Self.t0)
            ]
            try await b.commit(outcome)
            #expect(try await b.missedNotices().contains { if case .route = $0 { true } else { false } } == false)
            try await a.close()
            try await b.close()
            await place.remove()
        }
    }

    /// A node whose lease went stale is gone: one survivor takes its devices over (owner notice, budgets,
    /// pending pushes), a second finds nothing left to take; the sweep finds the undecided pushes of a
    /// node's own devices once they are old enough.
    @Test(.enabled(if: StoreUnderTest.postgresURL != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func aDeadNodesDevicesAreTakenOverByOneSurvivor() async throws {
        try await withStores { stores in
            let (place, a, b) = try await twoNodes(in: &stores)
            let c = try PostgresStore(url: place.path, nodeID: "node-c")
            stores.addTask { await c.run() }
            _ = try await c.open(now: Self.t0)
            let device = StoredDevice(id: "dev-a", secretHash: [1], createdAt: Self.t0, owner: "node-a")
            let spent = [AppBudget(bundleID: "com.example.a", budget: Samples.budget(tokens: 0))]
            var undecided = Samples.stored(20, rule: nil)
            undecided.deviceID = "dev-a"
            var batch = StoreBatch()
            batch.devices = [device]
            batch.notifications = [undecided]
            batch.budgets = ["dev-a": spent]
            try await a.commit(batch)

            #expect(try await b.takeOver(leaseMilliseconds: 60_000).isEmpty, "node A's lease is fresh")
            try await TestPostgres.run(place.path, "UPDATE nodes SET renewed_at = 0 WHERE node_id = 'node-a'")
            let taken = try await b.takeOver(leaseMilliseconds: 60_000)
            #expect(taken.map(\.deviceID) == ["dev-a"])
            #expect(taken.first?.claimed.claim == 1)
            #expect(taken.first?.claimed.budgets == spent)
            #expect(taken.first?.claimed.pending.map(\.notification.id) == [undecided.notification.id])
            #expect(try await c.takeOver(leaseMilliseconds: 60_000).isEmpty, "one survivor takes each device")
            #expect(
                try await TestPostgres.integer(place.path, "SELECT COUNT(*) FROM nodes WHERE node_id = 'node-a'") == 0)

            // B owns it now: its undecided push is B's to sweep, once older than the cutoff.
            #expect(try await b.undecided(olderThan: undecided.notification.receivedAt).isEmpty)
            #expect(
                try await b.undecided(olderThan: undecided.notification.receivedAt.adding(seconds: 1)).map(\.apnsID)
                    == [
                        undecided.notification.id.value
                    ])
            #expect(try await c.undecided(olderThan: undecided.notification.receivedAt.adding(seconds: 1)).isEmpty)

            // Node A comes back: it renews its lease and owns nothing until a device connects to it.
            try await a.renewLease(routeAddress: nil)
            #expect(try await c.takeOver(leaseMilliseconds: 60_000).isEmpty)

            // A device whose owner never held a lease (gone before it wrote one) is taken too, once.
            var orphan = StoreBatch()
            orphan.devices = [StoredDevice(id: "dev-z", secretHash: [2], createdAt: Self.t0, owner: "node-z")]
            try await a.commit(orphan)
            #expect(try await c.takeOver(leaseMilliseconds: 60_000).map(\.deviceID) == ["dev-z"])
            #expect(try await b.takeOver(leaseMilliseconds: 60_000).isEmpty)
            try await a.close()
            try await b.close()
            try await c.close()
            await place.remove()
        }
    }

    /// Devices arriving together are claimed in one transaction: each brings its own budgets and pending
    /// pushes, the others hear every new owner, and a device the store does not have is left out.
    @Test(.enabled(if: StoreUnderTest.postgresURL != nil, "needs TEST_POSTGRES_URL (see docs/store.md)"))
    func devicesAreClaimedInOneTransaction() async throws {
        try await withStores { stores in
            let (place, a, b) = try await twoNodes(in: &stores)
            let heard = Heard()
            stores.addTask {
                try await a.listen(ready: {}) { messages in heard.messages.withLock { $0 += messages } }
            }
            try await eventuallyListening(a, heard: heard, from: b)
            var batch = StoreBatch()
            var ids: [String] = []
            for i in 0..<300 {
                let id = "dev-\(i)"
                ids.append(id)
                batch.devices.append(StoredDevice(id: id, secretHash: [1], createdAt: Self.t0, owner: "node-a"))
            }
            var pending = Samples.stored(30, rule: nil)
            pending.deviceID = "dev-7"
            batch.notifications = [pending]
            let spent = [AppBudget(bundleID: "com.example.a", budget: Samples.budget(tokens: 0))]
            batch.budgets = ["dev-8": spent]
            try await a.commit(batch)

            let claimed = try await b.claim(deviceIDs: ids + ["no-such-device"])
            #expect(claimed.count == 300)
            #expect(claimed.values.allSatisfy { $0.previousOwner == "node-a" && $0.claim == 1 })
            #expect(claimed["dev-7"]?.pending.map(\.notification.id) == [pending.notification.id])
            #expect(claimed["dev-8"]?.budgets == spent)
            #expect(claimed["dev-9"]?.pending.isEmpty == true)
            try await eventually("node A heard of every new owner") {
                let owners = heard.messages.withLock {
                    $0.count { if case .owner(_, "node-b", 1) = $0.notice { true } else { false } }
                }
                return owners == 300
            }
            #expect(try await b.claim(deviceIDs: []).isEmpty)
            try await a.close()
            try await b.close()
            await place.remove()
        }
    }

    /// A new database, opened by node A and node B.
    func twoNodes(in stores: inout ThrowingTaskGroup<Void, any Error>) async throws -> (
        StorePlace, PostgresStore, PostgresStore
    ) {
        let place = try await StoreUnderTest.postgres.makePlace()
        let a = try PostgresStore(url: place.path, nodeID: "node-a")
        let b = try PostgresStore(url: place.path, nodeID: "node-b")
        stores.addTask { await a.run() }
        stores.addTask { await b.run() }
        _ = try await a.open(now: Self.t0)
        _ = try await b.open(now: Self.t0)
        return (place, a, b)
    }

    /// Commits notices until B hears one (LISTEN takes effect asynchronously).
    func eventuallyListening(_ b: PostgresStore, heard: Heard, from a: PostgresStore) async throws {
        try await eventually("node B is listening") {
            var ping = StoreBatch()
            ping.notices = [.owner(deviceID: "none", node: "node-a", claim: 0)]
            try await a.commit(ping)
            try await Task.sleep(for: .milliseconds(20))  // clock-ok: a real server's notice, bounded
            return heard.messages.withLock { !$0.isEmpty }
        }
        heard.messages.withLock { $0.removeAll() }
    }

}

/// What a listening node heard.
final class Heard: Sendable {
    let messages = Mutex<[ClusterMessage]>([])
}

@Suite struct ClusterMessageTests {
    @Test(arguments: [
        ClusterNotice.owner(deviceID: "dev-1", node: "host:7000", claim: 3),
        .route(node: "node-b", apnsID: "01a3185c-5000-7abc-8def-0123456789ab", teamID: "TEAM000001"),
        .route(
            node: "node-b", apnsID: "01a3185c-5000-7abc-8def-0123456789ab", teamID: "TEAM000001", deviceID: "dev-1"),
        .device(StoredDevice(id: "dev-1", secretHash: [0, 15, 255], createdAt: UnixTime(milliseconds: 5), owner: "a")),
        .device(StoredDevice(id: "dev-2", secretHash: [], createdAt: UnixTime(milliseconds: 0), owner: nil)),
        .token(StoredToken(token: "ab12", deviceID: "dev-1", bundleID: "com.example.a", unregisteredAt: nil)),
        .token(
            StoredToken(
                token: "ab12", deviceID: "dev-1", bundleID: "com.example.a", unregisteredAt: UnixTime(milliseconds: 9))),
        .token(
            StoredToken(
                token: "cd34", deviceID: "dev-1", bundleID: "com.example.a", unregisteredAt: nil,
                activity: "update:7c2e")),
        .removed(deviceID: "dev-1", at: UnixTime(milliseconds: 1_800_000_000_000)),
        .channel(
            StoredChannel(
                id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.a", storagePolicy: 1,
                createdAt: UnixTime(milliseconds: 3))),
        .channel(
            StoredChannel(
                id: "b3RoZXI=", bundleID: "com.example.a", storagePolicy: 0, createdAt: UnixTime(milliseconds: 3),
                deletedAt: UnixTime(milliseconds: 4))),
        .broadcast(BroadcastKey(channelID: "dHN0LXNyY2gtY2hubA==", sequence: 1_800_000_000_000_123)),
    ])
    func aNoticeReadsBackAsSent(_ notice: ClusterNotice) {
        let message = ClusterMessage(from: "node-a", notice: notice)
        #expect(ClusterMessage(text: message.text) == message)
    }

    @Test(arguments: [
        "2\tnode-a\towner\td\tn\t1", "1\tnode-a\tremoved\td\tsoon", "1\tnode-a\towner\td\tn",
        "1\tnode-a\tdevice\td\tzz\t1\t", "", "1",
    ])
    func aNoticeThisVersionCannotReadIsSkipped(_ text: String) {
        #expect(ClusterMessage(text: text) == nil)
    }

    /// Many notices go out in as few NOTIFY payloads as PostgreSQL allows, and read back in order.
    @Test func noticesArePackedIntoPayloadsThatFitAndReadBackInOrder() {
        let messages = (0..<500).map {
            ClusterMessage(
                from: "node-a",
                notice: .route(
                    node: "node-b", apnsID: "01a3185c-5000-7abc-8def-\(String(1_000_000_000_000 + $0))",
                    teamID: "TEAM000001", deviceID: "dev-\($0)"))
        }
        let payloads = ClusterMessage.payloads(messages.map(\.text))
        #expect(payloads.count > 1)
        #expect(payloads.count < 20)
        #expect(payloads.allSatisfy { $0.utf8.count <= ClusterMessage.payloadLimit })
        #expect(payloads.flatMap { ClusterMessage.lines(of: $0).map(\.message) } == messages)
        #expect(ClusterMessage.payloads([]) == [])
    }

    /// One line a newer node wrote is skipped, not the payload's others.
    @Test func anUnreadableLineIsSkippedAlone() {
        let owner = ClusterMessage(from: "node-a", notice: .owner(deviceID: "d", node: "node-a", claim: 2))
        let lines = ClusterMessage.lines(of: "2\tnode-a\tnew\tx\n" + owner.text)
        #expect(lines.map(\.message) == [nil, owner])
        #expect(lines[0].line == "2\tnode-a\tnew\tx")
    }

    /// A node hears its own notices too: they are left out before they are read; a line of another
    /// version is never taken for one of them.
    @Test func aNodesOwnLinesAreLeftOut() {
        let mine = ClusterMessage(from: "node-a", notice: .owner(deviceID: "d", node: "node-a", claim: 2))
        let theirs = ClusterMessage(from: "node-ab", notice: .removed(deviceID: "d", at: UnixTime(milliseconds: 5)))
        let lines = ClusterMessage.lines(
            of: [mine.text, theirs.text, "2\tnode-a\tnew", mine.text].joined(separator: "\n"), skipping: "node-a")
        #expect(lines.map(\.message) == [theirs, nil])
        #expect(lines.map(\.line) == [theirs.text[...], "2\tnode-a\tnew"])
        #expect(ClusterMessage.lines(of: "").isEmpty && ClusterMessage.lines(of: "\n\n").isEmpty)
    }

    /// A route notice from a node of the version before the device id was sent reads as one without it.
    @Test func anOlderNodesRouteNoticeReadsWithoutItsDevice() {
        #expect(
            ClusterMessage(text: "1\tnode-a\troute\tnode-b\tid-1\tTEAM000001")?.notice
                == .route(node: "node-b", apnsID: "id-1", teamID: "TEAM000001", deviceID: ""))
    }
}
