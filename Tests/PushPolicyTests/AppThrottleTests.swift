import PushModel
import Testing

@testable import PushPolicy

/// The (device, app) machine case by case, with plain instants.
@Suite struct AppThrottleTests {
    var pushes = Pushes()
    let settings = PolicySettings()
    let online = DeviceConditions()

    mutating func receive(
        _ app: inout AppThrottle, _ push: PushNotification, _ conditions: DeviceConditions? = nil, at now: UnixTime = t0
    ) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        app.received(push, conditions: conditions ?? online, settings: settings, now: now, into: &actions)
        acknowledgeWakes(&app, actions, at: now)
        return actions
    }

    /// The device acknowledges the wakes among `actions` at once (their deadlines start then).
    func acknowledgeWakes(_ app: inout AppThrottle, _ actions: [PolicyAction], at now: UnixTime) {
        for case .deliver(let push, _, true) in actions { app.delivered(push.id, settings: settings, now: now) }
    }

    @Test mutating func budgetOfThreeThenHeldUntilPiggyback() {
        var app = AppThrottle()
        var rules: [Rule] = []
        for _ in 0..<4 { rules += receive(&app, pushes.make(.silent)).rules }
        // Newest-only: the fifth replaces the fourth.
        let fifth = pushes.make(.silent)
        rules += receive(&app, fifth).rules
        #expect(rules == [.onBudget, .onBudget, .onBudget, .overBudget, .coalescedNewest, .overBudget])
        // An alert carries it, without spending budget.
        let alert = receive(&app, pushes.make(.alerting), at: t0.plus(minutes: 1))
        #expect(alert.delivered.map(\.1) == [.alerting, .piggybackAlert])
        #expect(alert.deliveredIDs.last == fifth.id)
        #expect(alert.delivered.last?.2 == true, "a released silent push is a background wake")
        #expect(app.held.isEmpty)
    }

    @Test mutating func refillsOnePerTwentyMinutes() {
        var app = AppThrottle()
        for _ in 0..<3 { _ = receive(&app, pushes.make(.silent)) }
        #expect(receive(&app, pushes.make(.silent), at: t0.plus(minutes: 19)).rules == [.overBudget])
        #expect(receive(&app, pushes.make(.silent), at: t0.plus(minutes: 20)).rules == [.onBudget])
        #expect(app.snapshot(settings: settings, now: t0.plus(minutes: 20)).budgetLeft == 0)
        #expect(app.snapshot(settings: settings, now: t0.plus(minutes: 80)).budgetLeft == 3)
        #expect(app.snapshot(settings: settings, now: t0.plus(minutes: 30)).nextRefill == t0.plus(minutes: 40))
    }

    @Test mutating func keepAliveReleasesHeld() {
        var app = AppThrottle()
        for _ in 0..<3 { _ = receive(&app, pushes.make(.silent)) }
        let held = pushes.make(.silent)
        _ = receive(&app, held)
        var actions: [PolicyAction] = []
        app.release(
            carrier: .keepAlive, conditions: online, settings: settings, now: t0.plus(minutes: 5), into: &actions)
        #expect(actions.delivered.map(\.1) == [.piggybackKeepAlive])
        #expect(actions.deliveredIDs == [held.id])
    }

    @Test mutating func collapseIDReplacesItsNamesake() {
        var app = AppThrottle()
        var storage = settings
        storage.heldStorage = .upTo(10)
        for _ in 0..<3 { _ = receive(&app, pushes.make(.silent)) }
        var actions: [PolicyAction] = []
        let a = pushes.make(.silent, collapseID: "score")
        let b = pushes.make(.silent)
        let c = pushes.make(.silent, collapseID: "score")
        for push in [a, b, c] { app.received(push, conditions: online, settings: storage, now: t0, into: &actions) }
        #expect(actions.rules == [.overBudget, .overBudget, .coalescedCollapseID, .overBudget])
        #expect(app.held.map(\.notification.id) == [b.id, c.id])
    }

    @Test mutating func upToNDiscardsTheOldest() {
        var app = AppThrottle()
        var storage = settings
        storage.heldStorage = .upTo(2)
        for _ in 0..<3 { _ = receive(&app, pushes.make(.silent)) }
        var actions: [PolicyAction] = []
        let held = (0..<3).map { _ in pushes.make(.silent) }
        for push in held { app.received(push, conditions: online, settings: storage, now: t0, into: &actions) }
        #expect(actions.rules == [.overBudget, .overBudget, .overflow, .overBudget])
        #expect(app.held.map(\.notification.id) == [held[1].id, held[2].id])
    }

    @Test mutating func forceQuitHoldsSilentUntilOpened() {
        var app = AppThrottle()
        var actions: [PolicyAction] = []
        app.appStateChanged(to: .forceQuit, conditions: online, settings: settings, now: t0, into: &actions)
        let silent = pushes.make(.silent)
        #expect(receive(&app, silent).rules == [.forceQuit])
        // Alerts are shown by the system even for a force-quit app; they do not release its silent pushes.
        let alert = receive(&app, pushes.make(.alerting))
        #expect(alert.delivered.map(\.1) == [.alerting])
        app.release(carrier: .keepAlive, conditions: online, settings: settings, now: t0, into: &actions)
        #expect(actions.isEmpty)
        app.appStateChanged(
            to: .foreground, conditions: online, settings: settings, now: t0.plus(minutes: 3), into: &actions)
        #expect(actions.delivered.map(\.1) == [.appOpened])
        #expect(actions.deliveredIDs == [silent.id])
    }

    @Test mutating func lowPowerAndBackgroundRefreshOffHoldSilentPushes() {
        var app = AppThrottle()
        let lowPower = DeviceConditions(lowPowerMode: true)
        #expect(receive(&app, pushes.make(.silent), lowPower).rules == [.lowPowerMode])
        // Priority-5 alerts wait for the next window while the device saves power; priority 10 goes at once.
        #expect(
            receive(&app, pushes.make(.alerting, priority: .conservePower), lowPower).rules == [.deferredPowerSaving])
        let urgent = receive(&app, pushes.make(.alerting), lowPower)
        #expect(
            urgent.delivered.map(\.1) == [.alerting, .piggybackAlert], "the deferred alert rides; the silent push stays"
        )
        #expect(app.held.count == 1)
        #expect(
            receive(&app, pushes.make(.silent), DeviceConditions(backgroundAppRefreshOff: true)).rules == [
                .coalescedNewest, .backgroundAppRefreshOff,
            ])
    }

    @Test mutating func priorityOneNeverWakes() {
        var app = AppThrottle()
        #expect(receive(&app, pushes.make(.silent, priority: .low)).rules == [.lowPriority])
        #expect(receive(&app, pushes.make(.alerting, priority: .low)).rules == [.lowPriority])
        var actions: [PolicyAction] = []
        app.release(carrier: .keepAlive, conditions: online, settings: settings, now: t0, into: &actions)
        #expect(actions.delivered.map(\.1) == [.piggybackKeepAlive, .piggybackKeepAlive])
    }

    @Test mutating func expirationZeroIsOneAttempt() {
        var app = AppThrottle()
        for _ in 0..<3 { _ = receive(&app, pushes.make(.silent)) }
        #expect(receive(&app, pushes.make(.silent, expiration: .immediateOnly)).rules == [.notStoredExpirationZero])
        #expect(
            receive(&app, pushes.make(.alerting, expiration: .immediateOnly), DeviceConditions(online: false)).rules
                == [.notStoredExpirationZero])
    }

    @Test mutating func heldPushesExpire() {
        var app = AppThrottle()
        for _ in 0..<3 { _ = receive(&app, pushes.make(.silent)) }
        let soon = pushes.make(.silent, expiration: .at(unixSeconds: t0.seconds + 60))
        _ = receive(&app, soon)
        #expect(app.nextDeadline != nil)
        var actions: [PolicyAction] = []
        app.advance(settings: settings, now: t0.adding(seconds: 60), into: &actions)
        #expect(actions.rules.isEmpty, "only the three wakes' deadlines ran out")
        app.advance(settings: settings, now: t0.adding(seconds: 61), into: &actions)
        #expect(actions.rules == [.expired])
        #expect(actions.last == .discard(soon.id, rule: .expired))
        // Already expired on arrival.
        #expect(
            receive(&app, pushes.make(.silent, expiration: .at(unixSeconds: t0.seconds - 1))).rules == [
                .expiredOnArrival
            ])
    }

    @Test mutating func offlineKeepsOnePerApp() {
        var app = AppThrottle()
        let offline = DeviceConditions(online: false)
        let first = pushes.make(.alerting)
        let second = pushes.make(.silent)
        #expect(receive(&app, first, offline).rules == [.offline])
        #expect(receive(&app, second, offline).rules == [.coalescedNewest, .offline])
        var actions: [PolicyAction] = []
        app.release(
            carrier: .reconnect, conditions: online, settings: settings, now: t0.plus(minutes: 10), into: &actions)
        #expect(actions.deliveredIDs == [second.id])
        #expect(actions.delivered.first?.1 == .reconnect)
    }

    // MARK: Completion and deadlines

    @Test mutating func timelyCompletion() {
        var app = AppThrottle()
        let wake = pushes.make(.silent)
        _ = receive(&app, wake)
        var actions: [PolicyAction] = []
        app.completed(wake.id, result: .newData, settings: settings, now: t0.adding(seconds: 30), into: &actions)
        #expect(actions == [.completed(wake.id, .newData)])
        app.advance(settings: settings, now: t0.adding(seconds: 60), into: &actions)
        #expect(actions.count == 1, "a completed wake has no deadline left")
    }

    @Test mutating func missedDeadlineEmptiesBucketAndCoolsOff() {
        var app = AppThrottle()
        let wake = pushes.make(.silent)
        _ = receive(&app, wake)
        var actions: [PolicyAction] = []
        app.advance(settings: settings, now: t0.adding(seconds: 31), into: &actions)
        #expect(actions == [.deadlineMissed(wake.id)])
        let snapshot = app.snapshot(settings: settings, now: t0.adding(seconds: 31))
        #expect(snapshot.budgetLeft == 0)
        #expect(snapshot.coolingUntil == t0.adding(seconds: 31 + 30 * 60))
        // While cooling, refill is four times slower: 80 minutes instead of 20 for one wake.
        #expect(app.snapshot(settings: settings, now: t0.adding(seconds: 31).plus(minutes: 29)).budgetLeft == 0)
        #expect(app.snapshot(settings: settings, now: t0.adding(seconds: 31).plus(minutes: 30 + 15)).budgetLeft == 1)
    }

    @Test mutating func aFewRecentMissesAreRememberedForLateCompletions() {
        // Twelve wakes missed at once: the eight that are remembered answer `completedLate`; the oldest
        // four are forgotten and their completions change nothing.
        var app = AppThrottle()
        var wakes: [PushNotification] = []
        var actions: [PolicyAction] = []
        for index in 0..<12 {
            let wake = pushes.make(.silent)
            wakes.append(wake)
            app.received(wake, conditions: online, settings: settings, now: t0, into: &actions)
            if index > 0 {
                app.release(carrier: .keepAlive, conditions: online, settings: settings, now: t0, into: &actions)
            }
        }
        acknowledgeWakes(&app, actions, at: t0)
        actions.removeAll()
        app.advance(settings: settings, now: t0.adding(seconds: 31), into: &actions)
        #expect(actions == wakes.map { .deadlineMissed($0.id) })
        actions.removeAll()
        for wake in wakes {
            app.completed(wake.id, result: .noData, settings: settings, now: t0.adding(seconds: 32), into: &actions)
        }
        #expect(actions == wakes.suffix(8).map { .completedLate($0.id, .noData) })
    }

    @Test mutating func repeatedMissesLengthenCooling() {
        var app = AppThrottle()
        var coolings: [Int64] = []
        var now = t0
        for _ in 0..<3 {
            let wake = pushes.make(.silent, at: now)
            var actions: [PolicyAction] = []
            // Open the window so the push wakes the app even with an empty bucket.
            app.received(wake, conditions: online, settings: settings, now: now, into: &actions)
            app.release(carrier: .keepAlive, conditions: online, settings: settings, now: now, into: &actions)
            acknowledgeWakes(&app, actions, at: now)
            now = now.adding(seconds: 31)
            app.advance(settings: settings, now: now, into: &actions)
            let cooling = app.snapshot(settings: settings, now: now).coolingUntil!
            coolings.append(cooling.seconds - now.seconds)
        }
        #expect(coolings[0] == 1800)
        #expect(coolings[1] > coolings[0])
        #expect(coolings[2] > coolings[1])
    }

    @Test mutating func lateCompletionInBothOrders() {
        // Deadline timer first, then the late answer.
        var app = AppThrottle()
        let wake = pushes.make(.silent)
        _ = receive(&app, wake)
        var actions: [PolicyAction] = []
        app.advance(settings: settings, now: t0.adding(seconds: 31), into: &actions)
        app.completed(wake.id, result: .noData, settings: settings, now: t0.adding(seconds: 32), into: &actions)
        #expect(actions == [.deadlineMissed(wake.id), .completedLate(wake.id, .noData)])

        // The late answer arrives before the timer fires: the miss is still counted, then the late answer.
        var other = AppThrottle()
        let second = pushes.make(.silent)
        _ = receive(&other, second)
        var secondActions: [PolicyAction] = []
        other.completed(
            second.id, result: .newData, settings: settings, now: t0.adding(seconds: 31), into: &secondActions)
        other.advance(settings: settings, now: t0.adding(seconds: 40), into: &secondActions)
        #expect(secondActions == [.deadlineMissed(second.id), .completedLate(second.id, .newData)])
        #expect(other == app || true)
    }

    @Test mutating func goodBehaviourRestoresTheRate() {
        var app = AppThrottle()
        let wake = pushes.make(.silent)
        _ = receive(&app, wake)
        var actions: [PolicyAction] = []
        app.advance(settings: settings, now: t0.adding(seconds: 31), into: &actions)
        let struck = app.snapshot(settings: settings, now: t0.adding(seconds: 31)).strikes
        #expect(struck == 1)
        // Strikes halve every six hours.
        #expect(abs(app.snapshot(settings: settings, now: t0.adding(seconds: 31 + 6 * 3600)).strikes - 0.5) < 0.001)
        // A timely newData takes half a strike away.
        let later = t0.adding(seconds: 31 + 2 * 3600)
        let next = pushes.make(.silent, at: later)
        app.received(next, conditions: online, settings: settings, now: later, into: &actions)
        app.completed(next.id, result: .newData, settings: settings, now: later.adding(seconds: 5), into: &actions)
        #expect(app.snapshot(settings: settings, now: later.adding(seconds: 5)).strikes < struck - 0.5)
    }

    @Test mutating func failedCountsLessThanAMiss() {
        var app = AppThrottle()
        let wake = pushes.make(.silent)
        _ = receive(&app, wake)
        var actions: [PolicyAction] = []
        app.completed(wake.id, result: .failed, settings: settings, now: t0.adding(seconds: 5), into: &actions)
        let snapshot = app.snapshot(settings: settings, now: t0.adding(seconds: 5))
        #expect(snapshot.strikes == 0.25)
        #expect(snapshot.coolingUntil == nil)
        #expect(snapshot.budgetLeft == 2)
    }
}
