import PushModel
import Testing

@testable import PushPolicy

/// iOS's Live Activity update budget, case by case with plain instants: priority 10 spends the
/// activity's budget, over it an update is degraded to opportunistic delivery (held for the device's
/// next window, never lost), priority 5 is opportunistic and free, each activity has its own bucket, and
/// a held update is replaced by a newer one for the same activity.
@Suite struct LiveActivityBudgetTests {
    var pushes = Pushes()
    var settings: PolicySettings = {
        var settings = PolicySettings()
        settings.liveActivityCapacity = 3
        settings.liveActivityRefillSeconds = 600
        settings.liveActivityFrequentCapacity = 6
        settings.liveActivityFrequentRefillSeconds = 60
        return settings
    }()
    let online = DeviceConditions()
    let game = DeviceToken(String(repeating: "1a", count: 32))!
    let ride = DeviceToken(String(repeating: "2b", count: 32))!

    mutating func receive(_ app: inout AppThrottle, _ push: PushNotification, at now: UnixTime = t0) -> [PolicyAction] {
        var actions: [PolicyAction] = []
        app.received(push, conditions: online, settings: settings, now: now, into: &actions)
        return actions
    }

    @Test func theBucketRefillsOnePerInterval() {
        let size = settings.liveActivityBudget(frequentPushes: false)
        var budget = TokenBucket(now: t0)
        #expect((0..<4).map { _ in budget.take(size, now: t0) } == [true, true, true, false])
        #expect(budget.left(size, now: t0.plus(minutes: 9)) == 0)
        #expect(budget.left(size, now: t0.plus(minutes: 10)) == 1)
        #expect(!budget.isFull(size, at: t0.plus(minutes: 29)))
        #expect(budget.isFull(size, at: t0.plus(minutes: 30)))
        #expect(budget.left(size, now: t0.plus(minutes: 600)) == 3, "never above capacity")
    }

    @Test mutating func frequentPushesGiveTheLargerBudget() {
        var app = AppThrottle()
        app.frequentPushesChanged(to: true)
        let rules = (0..<7).flatMap { _ in receive(&app, pushes.liveActivity(activity: game)).rules }
        #expect(rules == Array(repeating: .liveActivityOnBudget, count: 6) + [.liveActivityOverBudget])
        // One a minute comes back, not one in ten minutes.
        #expect(app.liveActivityBudgets(settings: settings, now: t0.plus(minutes: 2))[game] == 2)
        #expect(!app.isIdle(settings: settings, now: t0.plus(minutes: 600)), "the setting is state to keep")
    }

    @Test mutating func turnedOffTheBudgetShrinksToTheUsualOne() {
        var app = AppThrottle()
        app.frequentPushesChanged(to: true)
        _ = receive(&app, pushes.liveActivity(activity: game))  // 5 of 6 left
        app.frequentPushesChanged(to: false)
        #expect(app.liveActivityBudgets(settings: settings, now: t0)[game] == 3, "cut to the usual capacity")
        let rules = (0..<4).flatMap { _ in receive(&app, pushes.liveActivity(activity: game)).rules }
        #expect(
            rules == [.liveActivityOnBudget, .liveActivityOnBudget, .liveActivityOnBudget, .liveActivityOverBudget])
        #expect(app.liveActivityBudgets(settings: settings, now: t0.plus(minutes: 9))[game] == 0, "the slow refill")
        #expect(app.liveActivityBudgets(settings: settings, now: t0.plus(minutes: 300))[game] == 3, "never above it")
    }

    @Test mutating func priorityTenSpendsTheBudgetThenWaitsForTheNextWindow() {
        var app = AppThrottle()
        var rules: [Rule] = []
        for _ in 0..<3 { rules += receive(&app, pushes.liveActivity(activity: game)).rules }
        let fourth = pushes.liveActivity(activity: game)
        rules += receive(&app, fourth).rules
        #expect(
            rules == [.liveActivityOnBudget, .liveActivityOnBudget, .liveActivityOnBudget, .liveActivityOverBudget])
        #expect(app.held.map(\.notification.id) == [fourth.id])
        // Degraded, not lost: the device's next keep-alive carries it, spending nothing.
        var actions: [PolicyAction] = []
        app.release(
            carrier: .keepAlive, conditions: online, settings: settings, now: t0.plus(minutes: 1), into: &actions)
        #expect(actions.delivered.map(\.0) == [fourth.id])
        #expect(actions.delivered.map(\.1) == [.piggybackKeepAlive])
        #expect(actions.delivered.map(\.2) == [false], "a Live Activity update is no background wake")
        // Ten minutes later one update is back.
        #expect(
            receive(&app, pushes.liveActivity(activity: game), at: t0.plus(minutes: 10)).rules == [
                .liveActivityOnBudget
            ])
    }

    @Test mutating func priorityFiveIsOpportunisticAndFree() {
        var app = AppThrottle()
        let low = pushes.liveActivity(activity: game, priority: .conservePower)
        #expect(receive(&app, low).rules == [.opportunistic])
        // An alert is a window: the held update rides along.
        let alert = receive(&app, pushes.make(.alerting), at: t0.plus(minutes: 2))
        #expect(alert.delivered.map(\.1) == [.alerting, .piggybackAlert])
        #expect(alert.deliveredIDs.last == low.id)
        // Priority 5 spent nothing: three priority-10 updates still go at once.
        let rules = (0..<3).flatMap { _ in
            receive(&app, pushes.liveActivity(activity: game), at: t0.plus(minutes: 3)).rules
        }
        #expect(rules == [.liveActivityOnBudget, .liveActivityOnBudget, .liveActivityOnBudget])
    }

    @Test mutating func eachActivityHasItsOwnBudget() {
        var app = AppThrottle()
        for _ in 0..<3 { _ = receive(&app, pushes.liveActivity(activity: game)) }
        #expect(receive(&app, pushes.liveActivity(activity: game)).rules == [.liveActivityOverBudget])
        #expect(receive(&app, pushes.liveActivity(activity: ride)).rules == [.liveActivityOnBudget])
        let left = app.liveActivityBudgets(settings: settings, now: t0)
        #expect(left[game] == 0)
        #expect(left[ride] == 2)
    }

    @Test mutating func aNewerUpdateReplacesAHeldOneOfTheSameActivityOnly() {
        var app = AppThrottle()
        let older = pushes.liveActivity(activity: game, priority: .conservePower)
        let other = pushes.liveActivity(activity: ride, priority: .conservePower)
        let newer = pushes.liveActivity(activity: game, priority: .conservePower, at: t0.plus(minutes: 1))
        _ = receive(&app, older)
        _ = receive(&app, other)
        let actions = receive(&app, newer, at: t0.plus(minutes: 1))
        #expect(actions.rules == [.coalescedNewest, .opportunistic])
        if case .discard(let id, _) = actions.first { #expect(id == older.id) }
        #expect(Set(app.held.map(\.notification.id)) == [other.id, newer.id])
    }

    @Test mutating func aFullBudgetIsNothingToRemember() {
        var app = AppThrottle()
        _ = receive(&app, pushes.liveActivity(activity: game))
        #expect(!app.isIdle(settings: settings, now: t0.plus(minutes: 9)), "one update spent: kept")
        #expect(app.isIdle(settings: settings, now: t0.plus(minutes: 10)), "refilled: the state may be dropped")
    }

    @Test mutating func otherPushTypesStayImmediate() {
        var app = AppThrottle()
        let rules = (0..<5).flatMap { _ in receive(&app, pushes.make(.other)).rules }
        #expect(rules == Array(repeating: .immediate, count: 5))
    }
}
