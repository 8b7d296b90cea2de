import Foundation
import PushModel
import PushPolicy
import PushStore
import Testing

/// One suite, every backend: what a gateway relies on from its store.
@Suite struct StoreContractTests {
    static let t0 = UnixTime(seconds: 1_800_000_000)

    @Test(arguments: StoreUnderTest.available)
    func whatIsCommittedIsThereAfterReopening(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            var batch = StoreBatch()
            batch.devices = [
                StoredDevice(id: "dev-a", secretHash: [1, 2, 3], createdAt: Self.t0),
                StoredDevice(id: "dev-b", secretHash: [4, 5, 6], createdAt: Self.t0),
            ]
            batch.tokens = [
                StoredToken(token: Samples.token(1), deviceID: "dev-a", bundleID: "com.example.a", unregisteredAt: nil),
                StoredToken(token: Samples.token(2), deviceID: "dev-b", bundleID: "com.example.a", unregisteredAt: nil),
                // A Live Activity's push-to-start token beside the app's own.
                StoredToken(
                    token: Samples.token(3), deviceID: "dev-a", bundleID: "com.example.a", unregisteredAt: nil,
                    activity: "start:GameAttributes"),
            ]
            batch.channels = [
                StoredChannel(
                    id: "dHN0LXNyY2gtY2hubA==", bundleID: "com.example.a", storagePolicy: 1, createdAt: Self.t0),
                StoredChannel(id: "b3RoZXI=", bundleID: "com.example.a", storagePolicy: 0, createdAt: Self.t0),
            ]
            let held = Samples.stored(1, state: .pending, rule: .overBudget, collapse: "c1", payload: [0, 255, 7])
            let delivered = Samples.stored(2, state: .pending, rule: .alerting, kind: .alerting)
            batch.notifications = [held, delivered]
            batch.budgets = [
                "dev-a": [
                    AppBudget(bundleID: "com.example.a", budget: Samples.budget(tokens: 0.5)),
                    AppBudget(bundleID: "com.example.b", budget: Samples.budget(tokens: nil, state: .forceQuit)),
                ]
            ]
            try await store.commit(batch)

            var later = StoreBatch()
            later.outcomes = [
                NotificationOutcome(apnsID: delivered.notification.id, state: .delivered, rule: nil, at: Self.t0)
            ]
            later.tokens = [
                StoredToken(
                    token: Samples.token(2), deviceID: "dev-b", bundleID: "com.example.a",
                    unregisteredAt: Self.t0.adding(seconds: 5))
            ]
            // A channel deleted: kept, marked (its id is never issued again).
            later.channels = [
                StoredChannel(
                    id: "b3RoZXI=", bundleID: "com.example.a", storagePolicy: 0, createdAt: Self.t0,
                    deletedAt: Self.t0.adding(seconds: 6))
            ]
            try await store.commit(later)
            try await store.close()

            let reopened = try await place.open(in: &stores)
            let snapshot = try await reopened.open(now: Self.t0.adding(seconds: 10))
            #expect(snapshot.devices == batch.devices)
            #expect(snapshot.tokens.map(\.token) == [Samples.token(1), Samples.token(2), Samples.token(3)])
            #expect(snapshot.tokens[1].unregisteredAt == Self.t0.adding(seconds: 5))
            #expect(snapshot.tokens.map(\.activity) == [nil, nil, "start:GameAttributes"])
            #expect(snapshot.channels == [batch.channels[0], later.channels[0]])
            #expect(snapshot.budgets == [DeviceBudgets(deviceID: "dev-a", apps: batch.budgets["dev-a"]!)])
            #expect(snapshot.pending == [held])
            let found = try await reopened.notification(delivered.notification.id)
            #expect(found?.state == .delivered)
            #expect(found?.rule == .alerting)
            #expect(try await reopened.counts() == [.pending: 1, .delivered: 1])
            try await reopened.close()
            await place.remove()
        }
    }

    /// Broadcasts are one row each; a subscription keeps the highest sequence its device acknowledged
    /// (a cursor never goes back); the snapshot gives each channel's newest broadcast still deliverable.
    @Test(arguments: StoreUnderTest.available)
    func broadcastsAndSubscriptionCursorsAreThereAfterReopening(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            let stored = "dHN0LXNyY2gtY2hubA=="
            let unstored = "b3RoZXI="
            func broadcast(_ channel: String, _ sequence: Int64, until seconds: Int64) -> StoredBroadcast {
                StoredBroadcast(
                    channelID: channel, sequence: sequence,
                    apnsID: "01a3185c-5000-7abc-8def-0123456789a\(sequence % 10)",
                    teamID: "TEAM000001", bundleID: "com.example.a", priority: 10, expiration: sequence == 3 ? 0 : nil,
                    payload: Array(#"{"aps":{"event":"update","timestamp":\#(sequence)}}"#.utf8), acceptedAt: Self.t0,
                    deliverableUntil: Self.t0.adding(seconds: seconds))
            }
            var batch = StoreBatch()
            batch.broadcasts = [
                broadcast(stored, 1, until: 3600), broadcast(stored, 2, until: 3600), broadcast(unstored, 3, until: 5),
            ]
            batch.subscribe(
                StoredSubscription(deviceID: "dev-a", channelID: stored, bundleID: "com.example.a", acknowledged: 0))
            batch.subscribe(
                StoredSubscription(deviceID: "dev-a", channelID: unstored, bundleID: "com.example.a", acknowledged: 0))
            batch.subscribe(
                StoredSubscription(deviceID: "dev-b", channelID: stored, bundleID: "com.example.a", acknowledged: 1))
            try await store.commit(batch)
            var later = StoreBatch()
            later.advance(SubscriptionKey(deviceID: "dev-a", channelID: stored), to: 2)
            later.advance(SubscriptionKey(deviceID: "dev-a", channelID: stored), to: 1)
            later.unsubscribe(SubscriptionKey(deviceID: "dev-a", channelID: unstored))
            try await store.commit(later)
            var stale = StoreBatch()
            stale.advance(SubscriptionKey(deviceID: "dev-a", channelID: stored), to: 1)
            try await store.commit(stale)
            try await store.close()

            let reopened = try await place.open(in: &stores)
            let snapshot = try await reopened.open(now: Self.t0.adding(seconds: 10))
            #expect(
                snapshot.subscriptions == [
                    StoredSubscription(
                        deviceID: "dev-a", channelID: stored, bundleID: "com.example.a", acknowledged: 2),
                    StoredSubscription(
                        deviceID: "dev-b", channelID: stored, bundleID: "com.example.a", acknowledged: 1),
                ])
            // The unstored channel's message is past its time; the stored channel's newest is kept.
            #expect(snapshot.broadcasts == [broadcast(stored, 2, until: 3600)])
            let message = try #require(snapshot.broadcasts.first?.message)
            #expect(message.sequence == 2)
            #expect(message.push.pushType == .liveactivity)
            #expect(message.push.topic.value == "com.example.a.push-type.liveactivity")
            #expect(StoredBroadcast(message) == snapshot.broadcasts[0])
            try await reopened.close()
            await place.remove()
        }
    }

    @Test(arguments: StoreUnderTest.available)
    func whenDevicesWereLastSeenAndRemovedIsThereAfterReopening(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            var batch = StoreBatch()
            batch.devices = ["dev-a", "dev-b", "dev-c"].map {
                StoredDevice(id: $0, secretHash: [1], createdAt: Self.t0)
            }
            try await store.commit(batch)
            var later = StoreBatch()
            later.seen = ["dev-a": Self.t0.adding(seconds: 5), "dev-b": Self.t0.adding(seconds: 6)]
            later.removed = ["dev-b": Self.t0.adding(seconds: 7)]
            try await store.commit(later)
            var last = StoreBatch()
            last.seen = ["dev-a": Self.t0.adding(seconds: 8)]
            try await store.commit(last)
            try await store.close()

            let reopened = try await place.open(in: &stores)
            let devices = try await reopened.open(now: Self.t0.adding(seconds: 10)).devices
            #expect(devices.map(\.id) == ["dev-a", "dev-b", "dev-c"])
            #expect(devices.map(\.lastSeenAt) == [Self.t0.adding(seconds: 8), Self.t0.adding(seconds: 6), nil])
            #expect(devices.map(\.removedAt) == [nil, Self.t0.adding(seconds: 7), nil])
            try await reopened.close()
            await place.remove()
        }
    }

    @Test(arguments: StoreUnderTest.available)
    func anAPNsIDIsStoredOncePerTeam(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            var batch = StoreBatch()
            batch.notifications = [
                Samples.stored(7, team: "TEAMAAAAAA"), Samples.stored(7, team: "TEAMAAAAAA", payload: [9]),
            ]
            try await store.commit(batch)
            var retry = StoreBatch()
            retry.notifications = [
                Samples.stored(7, team: "TEAMAAAAAA", payload: [8]), Samples.stored(7, team: "TEAMBBBBBB"),
                // A provider authenticated by certificate has no team; an empty payload is still bytes.
                Samples.stored(7, team: nil, payload: []),
            ]
            try await store.commit(retry)
            let snapshot = try await store.open(now: Self.t0)
            #expect(snapshot.pending.count == 3)
            #expect(snapshot.pending.first?.notification.payload == Samples.stored(7).notification.payload)
            #expect(Set(snapshot.pending.map { $0.notification.teamID }) == ["TEAMAAAAAA", "TEAMBBBBBB", nil])
            #expect(snapshot.pending.last?.notification.payload == [])
            try await store.close()
            await place.remove()
        }
    }

    /// A commit of hundreds of notifications (SQLite inserts them 32 and 8 to a statement, then one by
    /// one) stores each as it was, in order, and a repeated apns-id once.
    @Test(arguments: StoreUnderTest.available)
    func aLargeBatchIsStoredRowForRowInOrder(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            let distinct = (1...44).map { (n: Int) -> StoredNotification in
                let team: String? = n % 5 == 0 ? nil : "TEAM000001"
                let rule: Rule? = n % 3 == 0 ? nil : .overBudget
                let kind: NotificationClass = n % 2 == 0 ? .alerting : .silent
                let collapse: String? = n % 4 == 0 ? "c\(n)" : nil
                let payload: [UInt8] = n % 7 == 0 ? [] : Array("{\"n\":\(n)}".utf8)
                return Samples.stored(
                    n, team: team, rule: rule, kind: kind, collapse: collapse, payload: payload,
                    expiresAt: Self.t0.adding(seconds: 3600 + Int64(n)))
            }
            var batch = StoreBatch()
            batch.notifications = distinct
            // The same id again, within the first 32 rows: the first one stays.
            batch.notifications.insert(Samples.stored(3, payload: [1]), at: 20)
            try await store.commit(batch)
            try await store.close()

            let reopened = try await place.open(in: &stores)
            let snapshot = try await reopened.open(now: Self.t0)
            #expect(snapshot.pending.count == distinct.count)
            #expect(snapshot.pending == distinct)
            try await reopened.close()
            await place.remove()
        }
    }

    @Test(arguments: StoreUnderTest.available)
    func expiredAndOneAttemptPushesAreNotBroughtBack(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            var batch = StoreBatch()
            let live = Samples.stored(1, expiresAt: Self.t0.adding(seconds: 3600))
            let expiring = Samples.stored(2, expiresAt: Self.t0.adding(seconds: 60))
            let once = Samples.stored(3, expiresAt: nil, expiration: .immediateOnly)
            batch.notifications = [live, expiring, once]
            try await store.commit(batch)
            // While running, a one-attempt push in flight is left alone; a held push past its expiry is marked.
            let pruned = try await store.prune(finishedBefore: Self.t0, now: Self.t0.adding(seconds: 120))
            #expect(pruned == PruneResult(removed: 0, expired: 1))
            let snapshot = try await store.open(now: Self.t0.adding(seconds: 120))
            #expect(snapshot.pending == [live])
            #expect(try await store.notification(expiring.notification.id)?.rule == .expired)
            #expect(try await store.notification(once.notification.id)?.rule == .notStoredExpirationZero)
            try await store.close()
            await place.remove()
        }
    }

    @Test(arguments: StoreUnderTest.available)
    func pruningRemovesFinishedNotificationsPastTheRetention(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            var batch = StoreBatch()
            batch.notifications = (1...6).map { Samples.stored($0) }
            try await store.commit(batch)
            var outcomes = StoreBatch()
            outcomes.outcomes = [
                NotificationOutcome(apnsID: Samples.id(1), state: .delivered, rule: nil, at: Self.t0),
                NotificationOutcome(apnsID: Samples.id(2), state: .discarded, rule: .coalescedNewest, at: Self.t0),
                NotificationOutcome(
                    apnsID: Samples.id(3), state: .delivered, rule: nil, at: Self.t0.adding(seconds: 600)),
            ]
            try await store.commit(outcomes)
            let result = try await store.prune(finishedBefore: Self.t0.adding(seconds: 300), now: Self.t0)
            #expect(result == PruneResult(removed: 2, expired: 0))
            #expect(try await store.counts() == [.pending: 3, .delivered: 1])
            #expect(try await store.notification(Samples.id(1)) == nil)
            // Budgets: a device's list replaces what it had (an app changed, an app gone, an app added),
            // and an empty list removes it all, when the device is said to have lost an app's budget
            // (`budgetsPruned`). (A device's budgets are stored once the device is.)
            var budgets = StoreBatch()
            budgets.devices = [StoredDevice(id: "d", secretHash: [1], createdAt: Self.t0)]
            budgets.budgets = [
                "d": [
                    AppBudget(bundleID: "a", budget: Samples.budget(tokens: 1)),
                    AppBudget(bundleID: "b", budget: Samples.budget(tokens: 2)),
                ]
            ]
            try await store.commit(budgets)
            let replaced = [
                AppBudget(bundleID: "b", budget: Samples.budget(tokens: 0)),
                AppBudget(bundleID: "c", budget: Samples.budget(tokens: 3)),
            ]
            budgets.devices = []
            budgets.budgets = ["d": replaced]
            budgets.budgetsPruned = ["d"]
            try await store.commit(budgets)
            let kept = try await store.open(now: Self.t0).budgets
            #expect(kept.map(\.deviceID) == ["d"])
            #expect(kept.first?.apps.sorted { $0.bundleID < $1.bundleID } == replaced)
            budgets.budgets = ["d": []]
            try await store.commit(budgets)
            #expect(try await store.open(now: Self.t0).budgets.isEmpty)
            try await store.close()
            await place.remove()
        }
    }

    /// What pruning removes and leaves (SQLite finds notifications finished at receipt by walking the
    /// table in order of receipt, the others through its index): a notification received before the
    /// cutoff and finished after it stays, as does one still pending ahead of those removed and one
    /// received after the cutoff — until a later cutoff passes them; and a row added after a pass that
    /// removed the newest ones is still found by the next.
    @Test(arguments: StoreUnderTest.available)
    func pruningLeavesWhatFinishedOrArrivedAfterTheCutoff(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            var batch = StoreBatch()
            batch.notifications = [
                Samples.stored(1), Samples.stored(2), Samples.stored(3),
                Samples.stored(5, state: .noDevice, rule: nil),
                Samples.stored(4, state: .noDevice, rule: nil, receivedAt: Self.t0.adding(seconds: 1000)),
            ]
            try await store.commit(batch)
            var outcomes = StoreBatch()
            outcomes.outcomes = [(2, 10), (3, 600)].map { n, seconds in
                NotificationOutcome(
                    apnsID: Samples.id(n), state: .delivered, rule: nil, at: Self.t0.adding(seconds: seconds))
            }
            try await store.commit(outcomes)
            let first = try await store.prune(finishedBefore: Self.t0.adding(seconds: 500), now: Self.t0)
            #expect(first == PruneResult(removed: 2, expired: 0))
            #expect(try await store.notification(Samples.id(2)) == nil)
            #expect(try await store.notification(Samples.id(5)) == nil)
            #expect(try await store.counts() == [.pending: 1, .delivered: 1, .noDevice: 1])
            let later = try await store.prune(finishedBefore: Self.t0.adding(seconds: 2000), now: Self.t0)
            #expect(later == PruneResult(removed: 2, expired: 0))
            #expect(try await store.counts() == [.pending: 1])
            #expect(try await store.notification(Samples.id(1))?.state == .pending)
            var after = StoreBatch()
            after.notifications = [
                Samples.stored(6, state: .noDevice, rule: nil, receivedAt: Self.t0.adding(seconds: 3000))
            ]
            try await store.commit(after)
            let last = try await store.prune(finishedBefore: Self.t0.adding(seconds: 4000), now: Self.t0)
            #expect(last == PruneResult(removed: 1, expired: 0))
            #expect(try await store.counts() == [.pending: 1])
            try await store.close()
            await place.remove()
        }
    }

    @Test(arguments: StoreUnderTest.available.filter { $0 != .memory })
    func aNewerDatabaseIsRefused(_ kind: StoreUnderTest) async throws {
        try await withStores { stores in
            let place = try await kind.makePlace()
            let store = try await place.open(in: &stores)
            _ = try await store.open(now: Self.t0)
            try await store.close()
            try await place.execute("INSERT INTO schema_version (version) VALUES (\(Schema.latestVersion + 1))")
            let newer = try await place.open(in: &stores)
            let error = await #expect(throws: StoreError.self) { _ = try await newer.open(now: Self.t0) }
            #expect(error?.message.contains("schema version \(Schema.latestVersion + 1)") == true)
            #expect(error?.message.contains(kind == .sqlite ? place.path : "pushgate_test_") == true)
            try await newer.close()
            await place.remove()
        }
    }
}
