import PushModel
import Testing

@testable import PushPolicy

/// Widget and control pushes with plain instants: a daily reload budget per (device, app), the newest
/// held past it, released by the first delivery window after the 24-hour window ends; controls unbudgeted
/// unless a number says otherwise.
@Suite struct ReloadBudgetTests {
    var pushes = Pushes()

    mutating func push(_ type: PushType, at now: UnixTime = t0) -> PushNotification {
        let base = pushes.make(.other, at: now)
        let suffix = type.topicSuffix ?? ""
        return PushNotification(
            id: base.id, deviceToken: base.deviceToken, topic: Topic("com.example.app" + suffix)!,
            bundleID: "com.example.app", pushType: type, priority: .immediate, expiration: .storeByDefault,
            collapseID: nil, notificationClass: .other, payload: [], teamID: nil, receivedAt: now)
    }

    @Test mutating func widgetReloadsKeepToTheirDailyBudget() {
        var settings = PolicySettings()
        settings.widgetDailyBudget = 2
        var engine = ThrottleEngine(settings: settings)
        var rules: [Rule] = []
        for minute in 0..<4 {
            rules += engine.received(push(.widgets), device: 1, now: t0.plus(minutes: Int64(minute))).rules
        }
        #expect(rules == [.reloadOnBudget, .reloadOnBudget, .reloadBudget, .coalescedNewest, .reloadBudget])
        // A window within the 24 hours takes nothing; the first after it, the newest.
        #expect(engine.keepAlive(device: 1, now: t0.plus(minutes: 60)).isEmpty)
        #expect(!engine.keepAliveReleases(device: 1, now: t0.plus(minutes: 60)))
        let next = t0.plus(minutes: 24 * 60)
        #expect(engine.keepAliveReleases(device: 1, now: next))
        #expect(engine.keepAlive(device: 1, now: next).delivered.map(\.1) == [.piggybackKeepAlive])
        // The new window counted that one: one more on budget, then held.
        #expect(engine.received(push(.widgets), device: 1, now: next).rules == [.reloadOnBudget])
        #expect(engine.received(push(.widgets), device: 1, now: next).rules == [.reloadBudget])
    }

    @Test mutating func controlsHaveNoBudgetUnlessOneIsSet() {
        var engine = ThrottleEngine()
        for _ in 0..<5 { #expect(engine.received(push(.controls), device: 1, now: t0).rules == [.immediate]) }
        var settings = PolicySettings()
        settings.controlDailyBudget = 1
        settings.widgetDailyBudget = 0
        var budgeted = ThrottleEngine(settings: settings)
        #expect(budgeted.received(push(.controls), device: 1, now: t0).rules == [.reloadOnBudget])
        #expect(budgeted.received(push(.controls), device: 1, now: t0).rules == [.reloadBudget])
        // Widgets' budget off: at once, however many.
        for _ in 0..<5 { #expect(budgeted.received(push(.widgets), device: 1, now: t0).rules == [.immediate]) }
    }
}
