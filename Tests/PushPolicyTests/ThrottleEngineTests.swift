import Foundation
import PushModel
import Testing

@testable import PushPolicy

@Suite struct ThrottleEngineTests {
    var pushes = Pushes()

    @Test mutating func alertPiggybackCoversAllAppsOrOnlyItsOwn() {
        for scope in PolicySettings.PiggybackScope.allCases {
            var settings = PolicySettings()
            settings.alertPiggybackScope = scope
            var engine = ThrottleEngine(settings: settings)
            for _ in 0..<4 { _ = engine.received(pushes.make(.silent, bundle: "com.a"), device: 1, now: t0) }
            for _ in 0..<4 { _ = engine.received(pushes.make(.silent, bundle: "com.b"), device: 1, now: t0) }
            let actions = engine.received(pushes.make(.alerting, bundle: "com.a"), device: 1, now: t0.plus(minutes: 1))
            let released = actions.delivered.filter { $0.1 == .piggybackAlert }.count
            #expect(released == (scope == .allApps ? 2 : 1), "\(scope)")
        }
    }

    /// Found by a forecast: an alert to an app that has no throttle state of its own (a full budget,
    /// nothing held: its state is dropped as idle) must still carry the device's other apps' held pushes.
    @Test mutating func anAlertToAnAppWithoutStateCarriesTheOtherAppsHeldPushes() {
        var engine = ThrottleEngine()
        for _ in 0..<4 { _ = engine.received(pushes.make(.silent, bundle: "com.news"), device: 1, now: t0) }
        #expect(engine.counters.heldNow == 1)
        let actions = engine.received(pushes.make(.alerting, bundle: "com.chat"), device: 1, now: t0.plus(minutes: 1))
        #expect(actions.delivered.map(\.1) == [.alerting, .piggybackAlert])
        #expect(engine.counters.heldNow == 0)
    }

    /// The store writes a device's budgets when what it holds of them changes, and only then: an alert
    /// to an app without throttle state leaves none (nothing to write), a wake spends a token, and a
    /// state that becomes idle is dropped (its row to delete).
    @Test mutating func onlyAChangedBudgetMarksTheDeviceForTheStore() {
        var engine = ThrottleEngine()
        engine.tracksChanges = true
        _ = engine.received(pushes.make(.alerting), device: 1, now: t0)
        #expect(engine.takeChangedDevices() == ChangedBudgets())
        let wake = pushes.make(.silent)
        #expect(engine.received(wake, device: 1, now: t0).deliveredIDs == [wake.id])
        #expect(engine.takeChangedDevices() == ChangedBudgets(devices: [1]), "a changed budget, no app lost")
        #expect(engine.budgets(of: 1).count == 1)
        _ = engine.completed(device: 1, bundleID: "com.example.app", id: wake.id, result: .newData, now: t0)
        _ = engine.takeChangedDevices()
        // Hours later the bucket is full again: the next event drops the idle state, and the store its row.
        _ = engine.received(pushes.make(.alerting), device: 1, now: t0.plus(minutes: 24 * 60))
        #expect(engine.budgets(of: 1).isEmpty)
        #expect(engine.takeChangedDevices() == ChangedBudgets(devices: [1], pruned: [1]))
        _ = engine.received(pushes.make(.alerting), device: 1, now: t0.plus(minutes: 24 * 60 + 1))
        #expect(engine.takeChangedDevices() == ChangedBudgets())
    }

    /// A silent push's budget is written once, at its wake: a timely completion that leaves no strikes
    /// changes only the refill since (what a reader of the wake's budget computes the same), so the
    /// device is not marked again; a failed one adds a strike, and is.
    @Test mutating func aCompletionThatLeavesNoStrikesWritesNothing() {
        let bundle = "com.example.app"
        for (result, written) in [(CompletionResult.newData, false), (.noData, false), (.failed, true)] {
            var engine = ThrottleEngine()
            engine.tracksChanges = true
            let wake = pushes.make(.silent)
            #expect(engine.received(wake, device: 1, now: t0).deliveredIDs == [wake.id])
            #expect(engine.takeChangedDevices() == ChangedBudgets(devices: [1]))
            let atWake = engine.budgets(of: 1).first!.budget
            engine.acknowledged(
                wake.id, device: 1, bundleID: bundle, wake: true, now: UnixTime(milliseconds: t0.milliseconds + 50))
            let done = t0.adding(seconds: 2)
            _ = engine.completed(device: 1, bundleID: bundle, id: wake.id, result: result, now: done)
            #expect(
                engine.takeChangedDevices() == (written ? ChangedBudgets(devices: [1]) : ChangedBudgets()), "\(result)")
            let now = engine.budgets(of: 1).first!.budget
            if !written {
                #expect(now.settledAt == done.milliseconds, "the completion settled the bucket")
                #expect(AppThrottle.settled(atWake, to: done, settings: PolicySettings()) == now)
            }
            // Its deadline's timer, later, changes nothing the store holds either.
            _ = engine.advance(to: t0.adding(seconds: 40))
            #expect(engine.takeChangedDevices() == ChangedBudgets(), "\(result)")
        }
    }

    /// A push the store could not write is forgotten: a held one is never released, a wake paid for
    /// gives its token back, and the decision log says why.
    @Test mutating func aWithdrawnPushIsNeverReleasedAndAWakeGivesItsTokenBack() {
        var engine = ThrottleEngine()
        let silent = (0..<4).map { _ in pushes.make(.silent, bundle: "com.news") }
        var woken: [APNsID] = []
        for push in silent { woken += engine.received(push, device: 1, now: t0).deliveredIDs }
        #expect(engine.counters.heldNow == 1)
        let held = silent.first { !woken.contains($0.id) }!
        engine.withdraw(held.id, device: 1, bundleID: "com.news", now: t0)
        #expect(engine.counters.heldNow == 0)
        let actions = engine.received(pushes.make(.alerting, bundle: "com.news"), device: 1, now: t0.plus(minutes: 1))
        #expect(!actions.deliveredIDs.contains(held.id), "withdrawn: never released")
        #expect(engine.log.journey(of: held.id).last?.event == .notStored)

        // A wake withdrawn before it was written: its token is back, so the next silent push wakes too.
        engine.withdraw(woken[0], device: 1, bundleID: "com.news", now: t0.plus(minutes: 1))
        let next = engine.received(pushes.make(.silent, bundle: "com.news"), device: 1, now: t0.plus(minutes: 1))
        #expect(next.delivered.map(\.1) == [.onBudget])
    }

    @Test mutating func aReleasedDeviceHandsOverItsHeldPushesAndStartsAfresh() {
        var engine = ThrottleEngine()
        let silent = (0..<5).map { _ in pushes.make(.silent) }
        let other = pushes.make(.silent, bundle: "com.other")
        for push in silent + [other] { _ = engine.received(push, device: 3, now: t0) }
        #expect(engine.counters.heldNow == 1, "three of five woke the app; the newest of the other two is held")

        let handed = engine.release(device: 3)
        #expect(handed.map(\.notification.id) == [silent[4].id])
        #expect(engine.counters.heldNow == 0)
        #expect(engine.stateCount == 0)
        #expect(engine.budgets(of: 3).isEmpty)
        // Its timers (the wakes' deadlines) find nothing when they fire.
        #expect(engine.advance(to: t0.plus(minutes: 5)).isEmpty)
        #expect(engine.received(pushes.make(.silent), device: 3, now: t0.plus(minutes: 6)).rules == [.onBudget])
    }

    @Test mutating func keepAliveReconnectAndConditions() {
        var engine = ThrottleEngine()
        for _ in 0..<4 { _ = engine.received(pushes.make(.silent), device: 7, now: t0) }
        #expect(engine.keepAliveReleases(device: 7, now: t0))
        #expect(engine.keepAlive(device: 7, now: t0.plus(minutes: 1)).delivered.map(\.1) == [.piggybackKeepAlive])
        #expect(!engine.keepAliveReleases(device: 7, now: t0))

        engine.disconnected(device: 7, now: t0.plus(minutes: 2))
        let stored = pushes.make(.alerting)
        #expect(engine.received(stored, device: 7, now: t0.plus(minutes: 3)).rules == [.offline])
        #expect(engine.connected(device: 7, now: t0.plus(minutes: 4)).deliveredIDs == [stored.id])

        _ = engine.conditionsChanged(
            device: 7, lowPowerMode: true, backgroundAppRefreshOff: false, now: t0.plus(minutes: 5))
        let silent = pushes.make(.silent)
        #expect(engine.received(silent, device: 7, now: t0.plus(minutes: 5)).rules == [.lowPowerMode])
        #expect(!engine.keepAliveReleases(device: 7, now: t0))
        #expect(engine.keepAlive(device: 7, now: t0.plus(minutes: 6)).isEmpty)
        let ended = engine.conditionsChanged(
            device: 7, lowPowerMode: false, backgroundAppRefreshOff: false, now: t0.plus(minutes: 7))
        #expect(ended.delivered.map(\.1) == [.conditionEnded])
    }

    /// A wake the device did not run is forgotten: no deadline passes for it, no strike, no cooling; a
    /// second word of it (or one about another push) changes nothing.
    @Test mutating func aWakeTheDeviceDidNotRunIsForgottenWithoutAPenalty() {
        var engine = ThrottleEngine()
        let wake = pushes.make(.silent)
        #expect(engine.received(wake, device: 1, now: t0).rules == [.onBudget])
        engine.acknowledged(wake.id, device: 1, bundleID: "com.example.app", wake: true, now: t0)
        let refused = engine.notWoken(
            device: 1, bundleID: "com.example.app", id: wake.id, reason: .noSilentPushes, now: t0)
        #expect(refused == [.notWoken(wake.id, .noSilentPushes)])
        #expect(
            engine.notWoken(device: 1, bundleID: "com.example.app", id: wake.id, reason: .forceQuit, now: t0).isEmpty)
        #expect(engine.advance(to: t0.adding(seconds: 60)).isEmpty, "no deadline to miss")
        #expect(engine.counters.notWoken == 1)
        #expect(engine.counters.deadlinePenalties == 0)
        #expect(
            engine.snapshot(device: 1, bundleID: "com.example.app", now: t0.adding(seconds: 60))?.coolingUntil == nil)
        #expect(engine.log.journey(of: wake.id).last?.event == .notWoken(.noSilentPushes))
    }

    @Test mutating func timersFireDeadlinesAndCountersAndLogAgree() {
        var engine = ThrottleEngine()
        let wake = pushes.make(.silent)
        _ = engine.received(wake, device: 1, now: t0)
        #expect(engine.nextTimer == nil, "no deadline before the device acknowledges the wake")
        engine.acknowledged(wake.id, device: 1, bundleID: "com.example.app", wake: true, now: t0)
        #expect(engine.nextTimer == t0.adding(seconds: 30), "the second the deadline falls in")
        #expect(engine.advance(to: t0.adding(seconds: 30)).isEmpty)
        #expect(engine.advance(to: t0.adding(seconds: 31)) == [.deadlineMissed(wake.id)])
        _ = engine.completed(
            device: 1, bundleID: "com.example.app", id: wake.id, result: .noData, now: t0.adding(seconds: 40))
        #expect(engine.counters.silentAccepted == 1)
        #expect(engine.counters.wokenOnBudget == 1)
        #expect(engine.counters.deadlinePenalties == 1)
        #expect(engine.counters.completedLate == 1)
        #expect(
            engine.log.journey(of: wake.id).map(\.event.description) == [
                "accepted silent", "woken", "acknowledged by the device", "deadline missed", "completed late noData",
            ])
        #expect(engine.log.journey(of: wake.id)[1].rule == .onBudget)
        let snapshot = engine.snapshot(device: 1, bundleID: "com.example.app", now: t0.adding(seconds: 40))
        #expect(snapshot?.budgetLeft == 0)
        #expect(abs((snapshot?.strikes ?? 0) - 1) < 0.01)
    }

    @Test mutating func aPushTypeMismatchIsInTheJourney() {
        var engine = ThrottleEngine()
        let push = pushes.make(.silent, mismatch: .backgroundWithVisibleContent)
        _ = engine.received(push, device: 1, now: t0)
        #expect(
            engine.log.journey(of: push.id).map(\.event.description).prefix(2) == [
                "accepted silent", "push type mismatch: background push with an alert, sound or badge",
            ])
    }

    @Test mutating func aWakesDeadlineRunsFromItsAcknowledgement() {
        var engine = ThrottleEngine()
        let wake = pushes.make(.silent)
        #expect(engine.received(wake, device: 3, now: t0).delivered.map(\.1) == [.onBudget])
        // Not acknowledged (the connection ended, the device is away): no deadline runs.
        #expect(engine.advance(to: t0.adding(seconds: 600)).isEmpty, "no miss for a wake that never reached the app")
        // Acknowledged when written again, ten minutes later: the 30 seconds start now.
        let acked = t0.adding(seconds: 600)
        engine.acknowledged(wake.id, device: 3, bundleID: "com.example.app", wake: true, now: acked)
        #expect(engine.advance(to: acked.adding(seconds: 30)).isEmpty)
        #expect(engine.advance(to: acked.adding(seconds: 31)) == [.deadlineMissed(wake.id)])
        // Acknowledged twice (written twice): the deadline is not moved again.
        engine.acknowledged(wake.id, device: 3, bundleID: "com.example.app", wake: true, now: acked.adding(seconds: 40))
        #expect(engine.counters.deadlinePenalties == 1)
    }

    @Test mutating func aWakeCompletedBeforeItsAcknowledgementIsInTime() {
        var engine = ThrottleEngine()
        let wake = pushes.make(.silent)
        _ = engine.received(wake, device: 3, now: t0)
        let done = engine.completed(
            device: 3, bundleID: "com.example.app", id: wake.id, result: .newData, now: t0.adding(seconds: 90))
        #expect(done == [.completed(wake.id, .newData)])
        engine.acknowledged(wake.id, device: 3, bundleID: "com.example.app", wake: true, now: t0.adding(seconds: 91))
        #expect(engine.advance(to: t0.adding(seconds: 200)).isEmpty, "a late acknowledgement starts no deadline")
    }

    @Test mutating func restoredSentWakesAreNotChargedAgain() {
        var engine = ThrottleEngine()
        let wake = pushes.make(.silent)
        var spent = ThrottleBudget.untouched
        spent.tokens = 0
        _ = engine.restore(device: 2, bundleID: "com.example.app", budget: spent, held: [], sentWakes: [wake.id])
        #expect(engine.snapshot(device: 2, bundleID: "com.example.app", now: t0)?.awaitingCompletion == [wake.id])
        engine.acknowledged(wake.id, device: 2, bundleID: "com.example.app", wake: true, now: t0)
        let done = engine.completed(
            device: 2, bundleID: "com.example.app", id: wake.id, result: .noData, now: t0.adding(seconds: 5))
        #expect(done == [.completed(wake.id, .noData)])
    }

    @Test mutating func idleStatesAreDropped() {
        var engine = ThrottleEngine()
        let wake = pushes.make(.silent)
        _ = engine.received(wake, device: 1, now: t0)
        #expect(engine.stateCount == 1)
        _ = engine.completed(
            device: 1, bundleID: "com.example.app", id: wake.id, result: .newData, now: t0.adding(seconds: 1))
        #expect(engine.stateCount == 1, "the bucket is not full yet")
        _ = engine.received(pushes.make(.alerting), device: 1, now: t0.plus(minutes: 21))
        #expect(engine.stateCount == 0)
    }
}

/// A day of random traffic in virtual time (a second or two of real time), checking the invariants.
@Suite struct ThrottleSimulationTests {
    struct App: Hashable {
        var device: DeviceSlot
        var bundle: String
    }

    @Test(arguments: [1, 2, 3] as [UInt64], [PolicySettings.HeldStorage.newestOnly, .upTo(5)])
    func aDayOfRandomTraffic(seed: UInt64, storage: PolicySettings.HeldStorage) {
        var random = SimulationRandom(seed: seed)
        var settings = PolicySettings()
        settings.heldStorage = storage
        var engine = ThrottleEngine(settings: settings, decisionLogCapacity: 0)
        let bundles = ["com.a", "com.b", "com.c"]
        let devices: [DeviceSlot] = Array(1...40)
        var appState: [App: AppState] = [:]
        var conditions: [DeviceSlot: DeviceConditions] = [:]
        var outcome: [APNsID: String] = [:]  // terminal outcome per accepted push
        var accepted: [APNsID: (App, NotificationClass)] = [:]
        var onBudget: [App: Int] = [:]
        var awaiting: [(App, APNsID)] = []
        var failures: [String] = []
        var now = t0
        var counter = 0

        func check(_ actions: [PolicyAction], _ now: UnixTime) {
            for action in actions {
                switch action {
                case .deliver(let push, let rule, let wake):
                    let app = accepted[push.id]!.0
                    if outcome[push.id] != nil { failures.append("\(push.id) delivered twice") }
                    outcome[push.id] = "delivered"
                    if wake {
                        if appState[app] == .forceQuit { failures.append("woke force-quit \(app)") }
                        let state = conditions[app.device] ?? DeviceConditions()
                        if state.lowPowerMode || state.backgroundAppRefreshOff {
                            failures.append("woke in power saving")
                        }
                        if !state.online { failures.append("delivered to offline device") }
                        awaiting.append((app, push.id))
                    }
                    if rule == .onBudget { onBudget[app, default: 0] += 1 }
                case .discard(let id, _):
                    if outcome[id] != nil { failures.append("\(id) discarded after an outcome") }
                    outcome[id] = "discarded"
                default: break
                }
            }
        }

        let end = t0.adding(seconds: 86_400)
        while now < end {
            now = now.adding(milliseconds: Int64(random.next(upTo: 120_000)))
            check(engine.advance(to: now), now)
            let device = devices[random.next(upTo: devices.count)]
            let app = App(device: device, bundle: bundles[random.next(upTo: bundles.count)])
            let roll = random.next(upTo: 100)
            switch roll {
            case 0..<40, 40..<55:
                counter += 1
                let kind: NotificationClass = roll < 40 ? .silent : (random.next(upTo: 5) == 0 ? .other : .alerting)
                let priority: Priority = [Priority.immediate, .conservePower, .low][random.next(upTo: 3)]
                let expiration: Expiration =
                    [
                        Expiration.storeByDefault, .immediateOnly,
                        .at(unixSeconds: now.seconds + Int64(random.next(upTo: 7200))),
                    ][random.next(upTo: 3)]
                let push = PushNotification(
                    id: APNsID(header: String(format: "00000000-0000-4000-8000-%012d", counter))!,
                    deviceToken: DeviceToken(String(format: "%064x", device))!, topic: Topic(app.bundle)!,
                    bundleID: app.bundle,
                    pushType: kind == .silent ? .background : .alert,
                    priority: kind == .silent && priority == .immediate ? .conservePower : priority,
                    expiration: expiration,
                    collapseID: random.next(upTo: 4) == 0 ? CollapseID(header: "c\(random.next(upTo: 3))") : nil,
                    notificationClass: kind, payload: [], teamID: nil, receivedAt: now)
                accepted[push.id] = (app, kind)
                let actions = engine.received(push, device: device, now: now)
                let online = (conditions[device] ?? DeviceConditions()).online
                if kind == .alerting, push.priority == .immediate, online,
                    !actions.contains(where: {
                        if case .deliver(let p, .alerting, _) = $0 { return p.id == push.id }
                        return false
                    })
                {
                    failures.append("alert \(push.id) to an online device not delivered at once")
                }
                check(actions, now)
            case 55..<70:
                if (conditions[device] ?? DeviceConditions()).online {
                    // A forecast sends only the keep-alives said to release something; the others must
                    // change nothing but expired pushes (the policy timer's anyway).
                    let releases = engine.keepAliveReleases(device: device, now: now)
                    let actions = engine.keepAlive(device: device, now: now)
                    if !releases,
                        actions.contains(where: { if case .discard(_, .expired) = $0 { false } else { true } })
                    {
                        failures.append("a keep-alive said to release nothing did: \(actions)")
                    }
                    if releases, actions.delivered.isEmpty,
                        !actions.contains(where: { if case .discard = $0 { true } else { false } })
                    {
                        failures.append("a keep-alive said to release something did nothing")
                    }
                    check(actions, now)
                }
            case 70..<82:
                if !awaiting.isEmpty {
                    let index = random.next(upTo: awaiting.count)
                    let (wakeApp, id) = awaiting.remove(at: index)
                    let late = random.next(upTo: 10) == 0 ? Int64(40_000) : Int64(random.next(upTo: 25_000))
                    let result = [CompletionResult.newData, .noData, .failed][random.next(upTo: 3)]
                    if random.next(upTo: 8) != 0 {  // some apps never call the completion handler
                        check(
                            engine.completed(
                                device: wakeApp.device, bundleID: wakeApp.bundle, id: id, result: result,
                                now: now.adding(milliseconds: late)), now)
                    }
                }
            case 82..<90:
                let state = [AppState.forceQuit, .foreground, .background, .suspended][random.next(upTo: 4)]
                appState[app] = state
                check(engine.appStateChanged(device: device, bundleID: app.bundle, to: state, now: now), now)
            case 90..<95:
                var state = conditions[device] ?? DeviceConditions()
                if random.next(upTo: 2) == 0 {
                    state.lowPowerMode.toggle()
                } else {
                    state.backgroundAppRefreshOff.toggle()
                }
                conditions[device] = state
                check(
                    engine.conditionsChanged(
                        device: device, lowPowerMode: state.lowPowerMode,
                        backgroundAppRefreshOff: state.backgroundAppRefreshOff, now: now), now)
            default:
                var state = conditions[device] ?? DeviceConditions()
                state.online.toggle()
                conditions[device] = state
                if state.online {
                    check(engine.connected(device: device, now: now), now)
                } else {
                    engine.disconnected(device: device, now: now)
                }
            }
        }

        // End of day: every device back online, conditions off, apps opened; one keep-alive each.
        for device in devices {
            conditions[device] = DeviceConditions()
            check(engine.connected(device: device, now: now), now)
            check(
                engine.conditionsChanged(device: device, lowPowerMode: false, backgroundAppRefreshOff: false, now: now),
                now)
            for bundle in bundles {
                appState[App(device: device, bundle: bundle)] = .foreground
                check(engine.appStateChanged(device: device, bundleID: bundle, to: .foreground, now: now), now)
            }
            check(engine.keepAlive(device: device, now: now), now)
        }

        #expect(failures.isEmpty, "\(failures.prefix(5))")
        let unaccounted = accepted.keys.filter { outcome[$0] == nil }
        #expect(
            unaccounted.isEmpty, "every accepted push is delivered or discarded with a cause: \(unaccounted.count) left"
        )
        let elapsed = end.milliseconds - t0.milliseconds
        let ceiling = settings.budgetCapacity + Int(elapsed / (settings.refillIntervalSeconds * 1000)) + 1
        for (app, count) in onBudget { #expect(count <= ceiling, "\(app) woke \(count) times on budget") }
        let counters = engine.counters
        #expect(counters.silentAccepted + counters.alertingAccepted + counters.otherAccepted == accepted.count)
        #expect(accepted.count > 200)
    }
}

struct SimulationRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func next(upTo bound: Int) -> Int {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        return Int(state % UInt64(bound))
    }
}
