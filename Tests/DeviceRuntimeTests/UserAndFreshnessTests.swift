import DeviceRuntime
import PushModel
import Testing

/// The apps of the tests' devices, by slot.
private let a: AppSlot = 0
private let b: AppSlot = 1

/// The user model (opens around habits, leaves, force-quits, Low Power Mode) and the freshness ledger.
@Suite struct UserAndFreshnessTests {
    let start = UnixTime(milliseconds: 20_000 * 86_400_000)

    /// Runs a user for `days`, collecting its events with their times.
    func run(_ profile: UserProfile, days: Int, seed: UInt64 = 3) -> [(UnixTime, RuntimeEvent)] {
        var user = UserModel(profile: profile, apps: [a], seed: seed, now: start)
        var events: [(UnixTime, RuntimeEvent)] = []
        let end = start.adding(seconds: Int64(days) * 86_400)
        while let at = user.nextAt, at <= end {
            for event in user.fire(at: at) { events.append((at, event)) }
        }
        return events
    }

    @Test func opensComeNearTheHabitualHoursAndEachIsLeft() {
        var profile = UserProfile()
        profile.habit_hours = [8]
        profile.habit_shift_hours = 0
        profile.habit_jitter_minutes = 10
        profile.extra_opens_per_day = 0
        profile.force_quit_share = 0
        let events = run(profile, days: 10)
        let opens = events.filter { $0.1 == .userOpened(app: a) }
        #expect(opens.count == 10)
        for (at, _) in opens {
            let minute = (at.milliseconds % 86_400_000) / 60_000
            #expect((470...490).contains(minute), "08:00 ± 10 min, got minute \(minute)")
        }
        #expect(events.filter { $0.1 == .userLeft(app: a) }.count == 10)
        #expect(events.filter { $0.1 == .screen(on: true) }.count == 10)
    }

    @Test func aShareOfVisitsEndsInAForceQuit() {
        var profile = UserProfile()
        profile.extra_opens_per_day = 20
        profile.force_quit_share = 0.3
        let events = run(profile, days: 30)
        let quits = events.filter { $0.1 == .userForceQuit(app: a) }.count
        let leaves = events.filter { $0.1 == .userLeft(app: a) }.count
        let share = Double(quits) / Double(quits + leaves)
        #expect((0.2...0.4).contains(share), "\(quits) force-quits of \(quits + leaves) visits")
    }

    @Test func lowPowerModeComesOnceADayForItsHours() {
        var profile = UserProfile()
        profile.low_power_hours_per_day = 2
        let events = run(profile, days: 5)
        let on = events.filter { $0.1 == .lowPowerMode(true) }
        let off = events.filter { $0.1 == .lowPowerMode(false) }
        #expect((4...5).contains(on.count))
        for (start, end) in zip(on, off) { #expect(end.0.milliseconds - start.0.milliseconds == 2 * 3_600_000) }
    }

    @Test func theSameSeedGivesTheSameDay() {
        let first = run(UserProfile(), days: 2, seed: 11).map { "\($0.0.milliseconds) \($0.1)" }
        let second = run(UserProfile(), days: 2, seed: 11).map { "\($0.0.milliseconds) \($0.1)" }
        #expect(first == second)
        #expect(first != run(UserProfile(), days: 2, seed: 12).map { "\($0.0.milliseconds) \($0.1)" })
    }

    /// An alert seen while the user is not in an app: opened for `alert_open_share` of alerts, after a
    /// reaction time, unless an open was due sooner; not while the user is in an app.
    @Test func aShareOfAlertsIsOpenedForAfterAReactionTime() {
        var profile = UserProfile()
        profile.habit_hours = [8]
        profile.extra_opens_per_day = 0
        profile.alert_open_seconds = 60
        profile.alert_open_share = 1
        let noon = start.adding(seconds: 12 * 3600)
        var user = UserModel(profile: profile, apps: [a, b], seed: 5, now: noon)
        let planned = user.nextAt!
        let reacted = user.alertShown(b, at: noon)
        #expect(reacted)
        let open = user.nextAt!
        #expect(open < planned && open.milliseconds - noon.milliseconds >= 1000)
        let events = user.fire(at: open)
        #expect(events.contains(.userOpened(app: b)))
        let inApp = user.alertShown(a, at: open)
        #expect(!inApp, "in an app: the alert is not opened for")
        let elsewhere = user.alertShown(AppSlot(2), at: open)
        #expect(!elsewhere, "not an app of this device")

        profile.alert_open_share = 0
        var never = UserModel(profile: profile, apps: [a], seed: 5, now: noon)
        let habit = never.nextAt
        for second: Int64 in 1...100 { never.alertShown(a, at: noon.adding(seconds: second)) }
        #expect(never.nextAt == habit)

        profile.alert_open_share = 0.3
        var some = 0
        for seed: UInt64 in 1...400 {
            var user = UserModel(profile: profile, apps: [a], seed: seed, now: noon)
            if user.alertShown(a, at: noon) { some += 1 }
        }
        #expect((80...160).contains(some), "\(some) of 400 alerts opened for, 30 % asked")
    }

    /// The user's own opens follow from the seed and the start alone: alerts, however many and whenever
    /// they come, add prompted opens (from a stream of their own) but move none of the user's own — so a
    /// real run and a forecast, whose alerts arrive milliseconds apart, see the same own opens.
    @Test func alertsAddOpensButMoveNoneOfTheUsersOwn() {
        var profile = UserProfile()
        profile.extra_opens_per_day = 30
        profile.alert_open_share = 0.5
        profile.alert_open_seconds = 30
        let end = start.adding(seconds: 2 * 86_400)
        func opens(alertEvery seconds: Int64?) -> [Int64] {
            var user = UserModel(profile: profile, apps: [a, b], seed: 21, now: start)
            var opened: [Int64] = []
            var nextAlert = seconds.map { start.adding(seconds: $0) }
            while let due = user.nextAt, due <= end {
                if let alert = nextAlert, alert < due {
                    user.alertShown(b, at: alert)
                    nextAlert = alert.adding(seconds: seconds!)
                    continue
                }
                for event in user.fire(at: due) {
                    if case .userOpened = event { opened.append(due.milliseconds) }
                }
            }
            return opened
        }
        let own = opens(alertEvery: nil)
        #expect(own.count > 40)
        for every: Int64 in [97, 600, 3_607] {
            let busy = opens(alertEvery: every)
            let moved = Set(own).subtracting(busy)
            #expect(moved.isEmpty, "alerts every \(every) s moved \(moved.count) of \(own.count) own opens")
            #expect(busy.count > own.count, "alerts every \(every) s prompted no open")
        }
    }

    /// The user's significant location changes wake the apps that monitor them, at the profile's rate.
    @Test func locationChangesComeAtTheirRateToTheAppsThatMonitorThem() {
        var profile = UserProfile()
        profile.location_changes_per_day = 24
        var user = UserModel(profile: profile, apps: [a, b], locationApps: [b], seed: 9, now: start)
        var changes: [RuntimeEvent] = []
        let end = start.adding(seconds: 10 * 86_400)
        while let at = user.nextAt, at <= end {
            changes += user.fire(at: at).filter { if case .locationChanged = $0 { true } else { false } }
        }
        #expect((180...300).contains(changes.count), "\(changes.count) in 10 days at 24 a day")
        #expect(changes.allSatisfy { $0 == .locationChanged(app: b) })
        let none = run(profile, days: 3).filter { if case .locationChanged = $0.1 { true } else { false } }
        #expect(none.isEmpty, "no app monitors them")
    }

    /// The phone restarts at its rate, from a stream of its own: the user's other events are those of the
    /// same seed without restarts.
    @Test func rebootsComeAtTheirRateAndMoveNoOtherEvent() {
        var profile = UserProfile()
        profile.reboots_per_day = 2
        let events = run(profile, days: 10)
        let reboots = events.filter { $0.1 == .rebooted }
        #expect((8...35).contains(reboots.count), "\(reboots.count) in 10 days at 2 a day")
        let others = events.filter { $0.1 != .rebooted }
        let without = run(UserProfile(), days: 10)
        #expect(others.map(\.0) == without.map(\.0))
        #expect(others.map(\.1) == without.map(\.1))
    }

    @Test func profilesWithProblemsNameTheKey() {
        var profile = UserProfile()
        profile.habit_hours = [25]
        #expect(profile.problem()?.contains("habit_hours") == true)
        profile = UserProfile()
        profile.force_quit_share = 2
        #expect(profile.problem()?.contains("force_quit_share") == true)
        profile = UserProfile()
        profile.habit_hours = []
        profile.extra_opens_per_day = 0
        // Valid on its own (a command's --opens-per-hour may open it); the mix refuses it without.
        #expect(profile.problem() == nil)
        #expect(profile.neverOpens)
        profile = UserProfile()
        profile.alert_open_share = -0.1
        #expect(profile.problem()?.contains("alert_open_share") == true)
        profile = UserProfile()
        profile.alert_open_seconds = 0
        #expect(profile.problem()?.contains("alert_open_seconds") == true)
        #expect(UserProfile().problem() == nil)
    }

    /// A ledger that folds opens as they come (a forecast's, the publications known in advance) reports
    /// exactly what one that keeps every open does, merged from slices or not.
    @Test func aFoldingLedgerReportsWhatAKeepingOneDoes() {
        let start: Int64 = 86_400_000
        let times: [Int64] = (0..<12).map { start + 600_000 * $0 }
        var versions: [Int: Int64] = [:]
        for (index, at) in times.enumerated() { versions[index + 1] = at }
        var keeping = FreshnessLedger()
        var slices = [0, 1, 2].map { _ in FreshnessLedger(publishTimes: times, start: start, hours: 3) }
        var random = FastRandom(seed: 5)
        for n in 0..<3_000 {
            let at = start - 300_000 + Int64(random.next() % 10_800_000)
            let newest = times.filter { $0 <= at }.count
            let held: Int? = random.next() % 5 == 0 ? nil : max(1, newest - Int(random.next() % 3))
            // Every fourth a Live Activity seen rather than an app opened: reported apart, folded alike.
            let action =
                n % 4 == 0
                ? RuntimeAction.activityViewed(app: a, activity: n % 2, contentVersion: newest == 0 ? nil : held)
                : RuntimeAction.opened(app: a, contentVersion: newest == 0 ? nil : held)
            let profile = ["news", "chat", "podcast"][n % 3]
            keeping.record(action, at: UnixTime(milliseconds: at), profile: profile)
            slices[n % 3].record(action, at: UnixTime(milliseconds: at), profile: profile)
        }
        var folded = FreshnessLedger(publishTimes: times, start: start, hours: 3)
        for slice in slices { folded.merge(slice) }
        let apps = ["news": 1, "chat": 1, "podcast": 1]
        #expect(folded.openCount == keeping.openCount)
        #expect(
            folded.report(versions: versions, hours: 3, apps: apps)
                == keeping.report(versions: versions, hours: 3, apps: apps))
        #expect(
            folded.hourly(versions: versions, start: start, hours: 3)
                == keeping.hourly(versions: versions, start: start, hours: 3))
    }

    /// A Live Activity seen when the screen came on is counted like an open, in its own columns: fresh
    /// when it showed the newest version published by then, its age from that version's publish time;
    /// applied updates counted.
    @Test func liveActivityViewsAddUpApartFromOpens() {
        var ledger = FreshnessLedger()
        let versions: [Int: Int64] = [1: 1_000_000, 2: 2_000_000]
        func view(_ at: Int64, _ shown: Int?) {
            ledger.record(
                .activityViewed(app: a, activity: 0, contentVersion: shown), at: UnixTime(milliseconds: at),
                profile: "sports")
        }
        view(1_500_000, 1)  // fresh, 500 s old
        view(2_500_000, 1)  // stale, 1,500 s old
        view(2_600_000, 2)  // fresh, 600 s old
        view(2_700_000, nil)  // nothing shown yet
        ledger.record(
            .activityUpdated(app: a, activity: 0, version: 2), at: UnixTime(milliseconds: 0), profile: "sports")
        ledger.record(.opened(app: a, contentVersion: 2), at: UnixTime(milliseconds: 2_100_000), profile: "sports")
        let row = ledger.report(versions: versions, hours: 1, apps: ["sports": 1]).rows[0]
        #expect(row.opens == 1 && row.freshAtOpen == 1, "opens apart from views")
        #expect(row.activityViews == 4)
        #expect(row.activityFreshAtView == 0.5)
        #expect(row.activityViewsWithoutContent == 1)
        #expect(row.activityAgeP50Seconds == 600)
        #expect(row.activityAgeP99Seconds == 1500)
        #expect(row.activityUpdates == 1)
        #expect(ledger.openCount == 1)
        #expect(ledger.report(versions: versions, hours: 1, apps: ["sports": 1]).text.contains("| sports | 4 | 50 % |"))
    }

    /// Every open counted once: fresh when the app held the newest version published by then; its age
    /// from the held version's publish time.
    @Test func freshnessAddsUp() {
        var ledger = FreshnessLedger()
        let versions: [Int: Int64] = [1: 1_000_000, 2: 2_000_000]
        func open(_ at: Int64, _ held: Int?, _ profile: String = "news") {
            ledger.record(
                .opened(app: a, contentVersion: held), at: UnixTime(milliseconds: at), profile: profile)
        }
        open(500_000, nil)  // nothing published yet: fresh
        open(1_500_000, 1)  // newest is 1: fresh, 500 s old
        open(2_500_000, 1)  // newest is 2: stale, 1,500 s old
        open(2_600_000, 2)  // fresh, 600 s old
        open(2_700_000, nil, "chat")  // no content at all
        ledger.record(
            .woken(app: a, kind: .silentPush(apnsID: .x)), at: UnixTime(milliseconds: 0), profile: "news")
        ledger.record(
            .woken(app: a, kind: .silentPush(apnsID: .y)), at: UnixTime(milliseconds: 0), profile: "news")
        ledger.record(
            .contentUpdated(app: a, version: 2, by: .silentPush(apnsID: .x)), at: UnixTime(milliseconds: 0),
            profile: "news")
        ledger.record(.terminated(app: a, cause: .wakeOverrun), at: UnixTime(milliseconds: 0), profile: "news")
        ledger.recordTransfer(background: true, bytes: 2_000_000, milliseconds: 4000, succeeded: true, profile: "news")
        ledger.recordTransfer(background: false, bytes: 500, milliseconds: 100, succeeded: false, profile: "news")
        let report = ledger.report(versions: versions, hours: 1, apps: ["news": 2, "chat": 2])
        let news = report.rows.first { $0.profile == "news" }!
        #expect(news.opens == 4)
        #expect(news.freshAtOpen == 0.75)
        #expect(news.ageP50Seconds == 600)
        #expect(news.ageP99Seconds == 1500)
        #expect(news.silentWakes == 2 && news.silentWakesWithNewContent == 1)
        #expect(news.wakesPerAppHour["silent_push"] == 1)
        #expect(news.backgroundBytes == 2_000_000 && news.foregroundBytes == 500 && news.failedTransfers == 1)
        #expect(news.transferP50Seconds == 4 && news.transferP90Seconds == 4)
        #expect(news.terminations == ["wake_overrun": 1])
        let chat = report.rows.first { $0.profile == "chat" }!
        #expect(chat.opens == 1 && chat.freshAtOpen == 0 && chat.opensWithoutContent == 1)
        let all = report.rows.last!
        #expect(all.profile == "all" && all.opens == 5)
        #expect(report.text.contains("| news | – | 4 | 75 % |"))
        #expect(report.text.contains("| 0.0 / 2.0 | 4.0 s / 4.0 s |"))
    }
}
