import PushModel
import Testing

@testable import PushPolicy

/// The throttle as Apple's engineers describe it in the field (issue 51; docs/throttling.md, "The throttle
/// in the field"), with plain instants: a device-wide daily budget shared by every app and drawn on by the
/// device's other apps, a debugger that turns the throttle off, the herd window after a reboot, and apps
/// not launched for a while. Each held wake names its reason.
@Suite struct FieldThrottleTests {
    var pushes = Pushes()
    static let apps = ["com.example.news", "com.example.chat", "com.example.podcast"]

    /// The start of device 1's next budget period after t0 (each device resets at its own time of day).
    static let period = DeviceDailyBudget().resetsAt(device: 1, now: t0)

    func settings(_ model: PolicySettings.BudgetModel, daily: Int = 4) -> PolicySettings {
        var settings = PolicySettings()
        settings.budgetModel = model
        settings.deviceDailyCapacity = daily
        return settings
    }

    /// Wakes given, and the rules of everything decided, for a silent push to each app every ten minutes
    /// for `hours` from `start`, with a keep-alive before each round.
    mutating func day(
        _ engine: inout ThrottleEngine, device: DeviceSlot = 1, from start: UnixTime = Self.period, hours: Int64 = 24
    ) -> (wakes: Int, rules: [Rule]) {
        var wakes = 0
        var rules: [Rule] = []
        for round in 0..<(hours * 6) {
            let now = start.plus(minutes: round * 10)
            var actions = engine.keepAlive(device: device, now: now)
            for app in Self.apps {
                actions += engine.received(pushes.make(.silent, bundle: app, at: now), device: device, now: now)
            }
            for case .deliver(let push, _, true) in actions {
                wakes += 1
                // The app answers at once: no deadline is missed.
                actions += engine.completed(
                    device: device, bundleID: push.bundleID, id: push.id, result: .newData, now: now)
            }
            rules += actions.rules
        }
        return (wakes, rules)
    }

    /// Three apps on one device sharing a daily budget of four: four wakes in a day among them, whatever
    /// each app's own bucket would allow; the rest wait with the budget's reason.
    @Test mutating func threeAppsShareTheDevicesDailyBudget() {
        var engine = ThrottleEngine(settings: settings(.deviceDaily))
        let first = day(&engine)
        #expect(first.wakes == 4)
        #expect(first.rules.contains(.deviceBudget))
        #expect(!first.rules.contains(.overBudget), "no per-app bucket in this model")
        // The next 24 hours: four more.
        #expect(day(&engine, from: Self.period.plus(minutes: 24 * 60)).wakes == 4)
        // Per app alone: each app's bucket (three, one more every twenty minutes) is the only bound.
        var perApp = ThrottleEngine(settings: settings(.perApp))
        #expect(day(&perApp).wakes > 4 * 3)
        // Both: the smaller bound wins.
        var both = ThrottleEngine(settings: settings(.both))
        #expect(day(&both).wakes == 4)
    }

    /// The device's other apps draw from the same budget, evenly over the day: with 48 of their wakes a
    /// day against a budget of 12, the gateway's apps get what is left, and none once the others have
    /// used it; a held wake goes with the first keep-alive after the budget's reset.
    @Test mutating func otherAppsDrawOnTheSameBudget() {
        var engine = ThrottleEngine(settings: settings(.deviceDaily, daily: 12))
        _ = engine.conditionsChanged(
            device: 1, lowPowerMode: false, backgroundAppRefreshOff: false, otherAppsWakesPerDay: 48, now: t0)
        let result = day(&engine, hours: 24)
        #expect(result.wakes < 12, "the others took their share")
        #expect(result.wakes > 0)
        let late = Self.period.plus(minutes: 23 * 60)
        #expect(!engine.keepAliveReleases(device: 1, now: late))
        let reset = try! #require(engine.nextReleasingKeepAlive(device: 1, now: late))
        #expect(reset > late && reset <= late.plus(minutes: 24 * 60))
        #expect(engine.keepAlive(device: 1, now: reset).delivered.allSatisfy { $0.1 == .piggybackKeepAlive && $0.2 })
    }

    /// With a debugger attached the throttle is off: every silent push wakes its app, no budget is spent,
    /// and attaching it releases what was held; the device's own conditions still apply.
    @Test mutating func aDebuggerTurnsTheThrottleOff() {
        var engine = ThrottleEngine(settings: settings(.both, daily: 2))
        for _ in 0..<4 { _ = engine.received(pushes.make(.silent), device: 1, now: t0) }
        let attached = engine.conditionsChanged(
            device: 1, lowPowerMode: false, backgroundAppRefreshOff: false, debuggerAttached: true, now: t0)
        #expect(attached.delivered.map(\.1) == [.conditionEnded])
        for _ in 0..<10 {
            #expect(engine.received(pushes.make(.silent), device: 1, now: t0).rules == [.debuggerAttached])
        }
        // Two wakes spent the device's budget before; the app's own bucket kept one.
        #expect(engine.snapshot(device: 1, bundleID: "com.example.app", now: t0)?.budgetLeft == 1, "as before")
        _ = engine.conditionsChanged(
            device: 1, lowPowerMode: true, backgroundAppRefreshOff: false, debuggerAttached: true, now: t0)
        #expect(engine.received(pushes.make(.silent), device: 1, now: t0).rules == [.lowPowerMode])
        // Detached (the same message without it): the throttle again.
        _ = engine.conditionsChanged(
            device: 1, lowPowerMode: false, backgroundAppRefreshOff: false, debuggerAttached: false, now: t0)
        #expect(engine.received(pushes.make(.silent), device: 1, now: t0.plus(minutes: 1)).rules.last == .deviceBudget)
    }

    /// After a reboot silent wakes wait out the herd window; the first keep-alive after it takes them.
    @Test mutating func aRebootHoldsSilentWakesForTheHerdWindow() {
        var engine = ThrottleEngine()
        engine.rebooted(device: 1, now: t0)
        let push = pushes.make(.silent)
        #expect(engine.received(push, device: 1, now: t0.adding(seconds: 10)).rules == [.thunderingHerd])
        #expect(engine.received(pushes.make(.alerting), device: 1, now: t0.adding(seconds: 20)).rules == [.alerting])
        #expect(engine.keepAlive(device: 1, now: t0.adding(seconds: 100)).isEmpty)
        #expect(engine.nextReleasingKeepAlive(device: 1, now: t0.adding(seconds: 100)) == t0.adding(seconds: 300))
        #expect(engine.keepAlive(device: 1, now: t0.adding(seconds: 300)).deliveredIDs == [push.id])
        var off = PolicySettings()
        off.herdSeconds = 0
        var without = ThrottleEngine(settings: off)
        without.rebooted(device: 1, now: t0)
        #expect(without.received(pushes.make(.silent), device: 1, now: t0).rules == [.onBudget])
    }

    /// An app the user has not opened for `inactiveAppDays` is not woken until it is opened; one the
    /// policy never saw opened is not held for it; 0 turns the rule off.
    @Test mutating func anAppNotLaunchedForAWhileIsNotWoken() {
        var engine = ThrottleEngine()
        _ = engine.appStateChanged(device: 1, bundleID: "com.example.app", to: .foreground, now: t0)
        _ = engine.appStateChanged(device: 1, bundleID: "com.example.app", to: .background, now: t0.plus(minutes: 5))
        let later = t0.plus(minutes: 15 * 24 * 60)
        let push = pushes.make(.silent)
        #expect(engine.received(push, device: 1, now: later).rules == [.appInactive])
        #expect(engine.keepAlive(device: 1, now: later.plus(minutes: 1)).isEmpty)
        let opened = engine.appStateChanged(
            device: 1, bundleID: "com.example.app", to: .foreground, now: later.plus(minutes: 2))
        #expect(opened.delivered.map(\.0) == [push.id])
        #expect(opened.delivered.map(\.1) == [.appOpened])
        #expect(
            engine.received(pushes.make(.silent, bundle: "com.example.other"), device: 1, now: later).rules == [
                .onBudget
            ])
        var off = PolicySettings()
        off.inactiveAppDays = 0
        var without = ThrottleEngine(settings: off)
        _ = without.appStateChanged(device: 1, bundleID: "com.example.app", to: .foreground, now: t0)
        #expect(without.received(pushes.make(.silent), device: 1, now: later).rules == [.onBudget])
    }
}
