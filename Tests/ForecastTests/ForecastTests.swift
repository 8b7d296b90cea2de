import DeviceRuntime
import Foundation
import PushModel
import PushPolicy
import Testing

@testable import Forecast

/// The discrete-event core: its order, its determinism, and hand-made scenarios whose counts follow from
/// the policy's and the runtime's rules alone. Virtual time only: nothing here waits.
@Suite struct ForecastTests {
    static let midnight = UnixTime(milliseconds: 1_767_571_200_000)

    /// One app on iOS 17 whose users never open it, so only the rules under test act.
    static func kind(
        _ name: String = "one", announce: AppProfile.Announcement = .silent, fetch: String = "never",
        users: UserProfile? = nil, devices: Int = 1
    ) -> ForecastScenario.Kind {
        var app = AppProfile(bundle_id: "com.example.\(name)")
        app.announce = announce
        app.fetch = fetch
        app.forgets_completion = 0
        app.forgets_ending_task = 0
        app.forgets_session_handler = 0
        var quiet = UserProfile()
        quiet.habit_hours = []
        quiet.extra_opens_per_day = 0
        quiet.refresh_off_share = 0
        quiet.low_power_hours_per_day = 0
        quiet.location_changes_per_day = 0
        return ForecastScenario.Kind(
            name: name, profile: IPhoneProfile(ios: 17, apps: [app], users: users ?? quiet), devices: devices)
    }

    @Test func simultaneousEventsRunInTheOrderTheyWereScheduled() {
        var queue = EventQueue()
        queue.schedule(at: 20, .deadline, target: 1)
        queue.schedule(at: 10, .keepAlive, target: 2)
        queue.schedule(at: 20, .transferEnd, target: 3)
        queue.schedule(at: 10, .publish, target: 4)
        queue.schedule(at: 20, .deadline, target: 5)
        var order: [UInt32] = []
        while let entry = queue.pop() { order.append(entry.target) }
        #expect(order == [2, 4, 1, 3, 5])
    }

    /// A device's deadline is one entry, moved in place: popped once, at its latest time, in (time,
    /// sequence) order with everything else; removed, never popped.
    @Test func aDeadlineThatMovesIsPoppedOnceWhereItNowIs() {
        var queue = EventQueue()
        for device: UInt32 in 0..<50 { queue.setDeadline(device, at: Int64(1000 - device)) }
        queue.schedule(at: 500, .keepAlive, target: 7)
        for device: UInt32 in 0..<50 where device % 2 == 0 { queue.setDeadline(device, at: Int64(2000 + device)) }
        queue.setDeadline(3, at: 500)  // the same millisecond as the keep-alive, set after it
        queue.setDeadline(5, at: nil)
        #expect(queue.count == 50)
        var popped: [(Int64, UInt32, EventQueue.Kind)] = []
        while let entry = queue.pop() { popped.append((entry.time, entry.target, entry.kind)) }
        #expect(popped.count == 50)
        #expect(popped[0].0 == 500 && popped[0].2 == .keepAlive && popped[1].0 == 500 && popped[1].1 == 3)
        #expect(popped.map(\.0) == popped.map(\.0).sorted())
        #expect(!popped.contains { $0.1 == 5 && $0.2 == .deadline })
        let deadlines = popped.filter { $0.2 == .deadline }
        #expect(Set(deadlines.map(\.1)).count == deadlines.count, "each device once")
        #expect(deadlines.filter { $0.1 % 2 == 0 }.allSatisfy { $0.0 == 2000 + Int64($0.1) })
        #expect(queue.isEmpty)
    }

    @Test func aSilentPushPerPublicationWithBudgetThreeWakesExactlyThreeTimes() async {
        var policy = PolicySettings()
        policy.budgetCapacity = 3
        policy.refillIntervalSeconds = 86_400  // no refill within the run
        // No keep-alive within two hours: held pushes wait (a keep-alive would carry them).
        let scenario = ForecastScenario(
            kinds: [Self.kind()], start: Self.midnight, hours: 2,
            publications: PublicationSchedule(everySeconds: 600), policy: policy, keepAliveSeconds: 86_400)
        let result = await Forecast.run(scenario)
        let row = result.report.rows[0]
        let cost = result.costs[0]
        // 12 versions in two hours, each announced (the first too, as a real run does once devices have
        // their tokens): 12 silent pushes.
        #expect(result.versionsPublished == 12)
        #expect(cost.silentSent == 12)
        #expect(row.silentWakes == 3)
        // The other 9 were held over budget; each newer one replaced the one held (collapse id), and the
        // last is still held.
        #expect(cost.held == 9)
        #expect(cost.coalesced == 8)
        #expect(cost.piggybacked == 0)
    }

    /// The device-wide daily budget alone decides (issue 51): three apps on one device, each sent a silent
    /// push per publication for a day, share a budget of five — exactly five wakes among them in the
    /// device's 24-hour period (device 0 resets at midnight UTC), however often keep-alives come.
    @Test func threeAppsSharingADailyBudgetOfFiveWakeFiveTimesADay() async {
        var policy = PolicySettings()
        policy.budgetModel = .deviceDaily
        policy.deviceDailyCapacity = 5
        var kind = Self.kind()
        for name in ["two", "three"] { kind.profile.apps.append(Self.kind(name).profile.apps[0]) }
        let scenario = ForecastScenario(
            kinds: [kind], start: Self.midnight, hours: 24, publications: PublicationSchedule(everySeconds: 600),
            policy: policy, keepAliveSeconds: 60)
        let result = await Forecast.run(scenario)
        #expect(result.costs[0].silentSent == 3 * 144)
        #expect(result.report.rows[0].silentWakes == 5)
        #expect(result.costs[0].deadlineMisses == 0)
    }

    /// A widget or control push per version (issue 51): the surface reloads within the app's daily
    /// reload budget and is seen fresh while it lasts; past it the pushes wait (held_reload_budget) and
    /// what the users see grows old. Without the budget every version reloads it.
    @Test(arguments: WidgetKitSurface.allCases)
    func aSurfaceReloadsWithinItsDailyBudgetAndIsSeenAtEveryScreenOn(_ surface: WidgetKitSurface) async {
        var users = UserProfile()
        users.habit_hours = [6, 12, 18, 23]
        users.extra_opens_per_day = 6
        users.refresh_off_share = 0
        var kind = Self.kind(announce: .none, users: users, devices: 2)
        kind.profile.ios = surface.since
        kind.profile.apps[0].widget = surface == .widget
        kind.profile.apps[0].control = surface == .control
        func day(_ budget: Int) async -> ForecastResult {
            var policy = PolicySettings()
            policy.widgetDailyBudget = surface == .widget ? budget : 0
            policy.controlDailyBudget = surface == .control ? budget : 0
            return await Forecast.run(
                ForecastScenario(
                    kinds: [kind], start: Self.midnight, hours: 24,
                    publications: PublicationSchedule(everySeconds: 600),
                    policy: policy, keepAliveSeconds: 60))
        }
        let budgeted = await day(70)
        #expect(budgeted.costs[0].reloadPushes(surface).sent == 2 * 144)
        #expect(
            budgeted.report.rows[0].figures(surface).reloads == 2 * 70,
            "the first window's 70 reloads, no more within the day")
        #expect(budgeted.costs[0].reloadPushes(surface).notDelivered == 2 * (144 - 70))
        #expect(budgeted.report.rows[0].figures(surface).views > 0)
        let unbudgeted = await day(0)
        #expect(unbudgeted.report.rows[0].figures(surface).reloads == 2 * 144)
        #expect(
            unbudgeted.report.rows[0].figures(surface).freshAtView!
                > budgeted.report.rows[0].figures(surface).freshAtView!)
        #expect(
            budgeted.report.text.contains(
                "| profile | widget or control | seen | fresh when seen | age p50 | reloads |"))
        #expect(budgeted.report.text.contains("| \(kind.name) | \(surface.rawValue) |"))
        #expect(budgeted.costText.contains("| profile | widget or control | pushes | delivered |"))
        #expect(budgeted.costText.contains("| \(kind.name) | \(surface.rawValue) | 288 | 140 | 148 |"))
        for other in WidgetKitSurface.allCases where other != surface {
            #expect(budgeted.report.rows[0].surfaces[other.rawValue] == nil, "the app has no \(other.rawValue)")
        }
    }

    @Test func heldSilentPushesRideTheNextAlert() async {
        var policy = PolicySettings()
        policy.budgetCapacity = 3
        policy.refillIntervalSeconds = 86_400
        // Two apps on one device: the news app's silent push is held once its budget is spent, and the
        // chat app's alert of the same publication carries it (piggyback), so every announcement wakes.
        var kind = Self.kind()
        var chat = AppProfile(bundle_id: "com.example.chat")
        chat.announce = .alert
        kind.profile.apps.append(chat)
        let scenario = ForecastScenario(
            kinds: [kind], start: Self.midnight, hours: 2, publications: PublicationSchedule(everySeconds: 600),
            policy: policy, keepAliveSeconds: 86_400)
        let result = await Forecast.run(scenario)
        #expect(result.report.rows[0].silentWakes == 12)
        #expect(result.costs[0].held == 9)
        #expect(result.costs[0].piggybacked == 9)
    }

    @Test func keepAlivesCarryHeldPushes() async {
        var policy = PolicySettings()
        policy.budgetCapacity = 3
        policy.refillIntervalSeconds = 86_400
        let scenario = ForecastScenario(
            kinds: [Self.kind()], start: Self.midnight, hours: 2, publications: PublicationSchedule(everySeconds: 600),
            policy: policy, keepAliveSeconds: 60)
        let result = await Forecast.run(scenario)
        // Every held push goes with the device's next keep-alive (within a minute, before the next
        // publication): all 12 wake the app, 9 of them piggybacked.
        #expect(result.report.rows[0].silentWakes == 12)
        #expect(result.costs[0].piggybacked == 9)
        #expect(result.costs[0].coalesced == 0)
    }

    @Test func aFetchAtMinimumWithALaunchHabitFiresTenMinutesBeforeTheHabitualOpen() async throws {
        var users = UserProfile()
        users.habit_hours = [12]
        users.habit_shift_hours = 0
        users.habit_jitter_minutes = 0
        users.extra_opens_per_day = 0
        users.force_quit_share = 0
        users.refresh_off_share = 0
        users.location_changes_per_day = 0
        var scenario = ForecastScenario(
            kinds: [Self.kind(announce: .none, fetch: "minimum", users: users)], start: Self.midnight, hours: 96,
            publications: PublicationSchedule(everySeconds: 3600))
        scenario.traced = [0]
        let result = await Forecast.run(scenario)
        let lines = result.trace
        let opens = lines.filter { $0.event == "opened" }.map(\.t)
        #expect(opens == [43_200, 129_600, 216_000, 302_400])
        // Three opens make a habit: on the fourth day the system fetches at 11:50.
        let habitual = lines.filter { $0.event == "woken" && $0.fetchPlannedBy == "launch_habit" }.map(\.t)
        #expect(habitual.contains(302_400 - 600))
        #expect(!habitual.contains { $0 < 216_000 })
    }

    @Test func aDiscretionaryDownloadFinishesAtTheComputedTime() async throws {
        var scenario = ForecastScenario(
            kinds: [Self.kind()], start: Self.midnight, hours: 1, publications: PublicationSchedule(everySeconds: 1800),
            link: LinkModel(bytesPerSecond: 1_000_000, latencyMilliseconds: 100), itemBytes: 200_000)
        scenario.traced = [0]
        let result = await Forecast.run(scenario)
        let lines = result.trace
        // Version 2's push (version 1's, at the start, is downloaded the same way).
        let push = try #require(lines.first { $0.event == "push" && $0.version == 2 }?.t)
        #expect(push == 1800)
        let started = try #require(
            lines.first { $0.event == "transfer_started" && $0.session == "background_discretionary" && $0.t >= push })
        let id = try #require(started.transfer)
        let begun = started.t
        // R9: a discretionary transfer waits 300 s (iOS 17) before the system starts it …
        #expect(begun >= push + 300)
        #expect(begun < push + 301)
        // … then moves 200,000 bytes 4× slower than a 1 MB/s link, after 100 ms of latency: 0.9 s.
        let finished = try #require(lines.first { $0.event == "transfer_finished" && $0.transfer == id }?.t)
        #expect(abs(finished - begun - 0.9) < 0.0005)
        let updated = try #require(lines.first { $0.event == "content_updated" && $0.version == 2 })
        #expect(updated.t >= finished)
    }

    /// Live Activities: each version goes to the activity on a channel as one broadcast, written at once
    /// and outside the budget; the activity updated by token spends its budget (three here, never
    /// refilled), then its updates are held and each newer one replaces the one held.
    @Test func tokenUpdatesSpendTheBudgetAndBroadcastsDoNot() async {
        var policy = PolicySettings()
        policy.liveActivityCapacity = 3
        policy.liveActivityRefillSeconds = 86_400
        var kind = Self.kind(announce: AppProfile.Announcement.none, devices: 2)
        kind.profile.apps[0].live_activities = 2
        kind.profile.apps[0].channels = 1
        let scenario = ForecastScenario(
            kinds: [kind], start: Self.midnight, hours: 2, publications: PublicationSchedule(everySeconds: 600),
            policy: policy, keepAliveSeconds: 86_400)
        let result = await Forecast.run(scenario)
        let cost = result.costs[0]
        #expect(result.versionsPublished == 12)
        #expect(cost.broadcastsSent == 12, "one POST per version per channel, whatever the devices")
        #expect(cost.broadcastWrites == 24)
        #expect(cost.liveActivityUpdatesSent == 24)
        #expect(cost.liveActivityOverBudget == 18)
        #expect(cost.liveActivityUpdatesDropped == 16, "each newer held update replaced the one held")
        // Applied: every broadcast, and the three token updates on budget, per device.
        #expect(result.report.rows[0].activityUpdates == 2 * (12 + 3))

        // With frequent updates the larger budget takes them all.
        var frequent = scenario
        frequent.kinds[0].profile.apps[0].frequent_pushes = true
        frequent.policy.liveActivityFrequentCapacity = 12
        frequent.policy.liveActivityFrequentRefillSeconds = 86_400
        let roomy = await Forecast.run(frequent)
        #expect(roomy.costs[0].liveActivityOverBudget == 0)
        #expect(roomy.report.rows[0].activityUpdates == 2 * 24)
    }

    /// What the user sees: at every screen-on each activity; one on a channel shows the newest version,
    /// one over its budget falls behind.
    @Test func theUserSeesHowFreshEachActivityIs() async {
        var policy = PolicySettings()
        policy.liveActivityCapacity = 1
        policy.liveActivityRefillSeconds = 86_400
        var users = UserProfile()
        users.extra_opens_per_day = 48
        users.habit_hours = []
        users.low_power_hours_per_day = 0
        users.refresh_off_share = 0
        var channel = Self.kind("channel", announce: AppProfile.Announcement.none, users: users, devices: 20)
        channel.profile.apps[0].live_activities = 1
        channel.profile.apps[0].channels = 1
        var token = Self.kind("token", announce: AppProfile.Announcement.none, users: users, devices: 20)
        token.profile.apps[0].live_activities = 1
        let scenario = ForecastScenario(
            kinds: [channel, token], start: Self.midnight, hours: 6,
            publications: PublicationSchedule(everySeconds: 900),
            policy: policy, keepAliveSeconds: 86_400)
        let result = await Forecast.run(scenario)
        let rows = Dictionary(uniqueKeysWithValues: result.report.rows.map { ($0.profile, $0) })
        #expect(rows["channel"]!.activityViews > 50)
        #expect(rows["channel"]!.activityFreshAtView == 1)
        #expect(rows["token"]!.activityFreshAtView ?? 1 < 0.1, "one update, then nothing new")
        #expect(rows["token"]!.activityAgeP50Seconds ?? 0 > rows["channel"]!.activityAgeP50Seconds ?? .infinity)
    }

    /// The shipped kinds over six hours, in slices of 37 devices.
    static func mixed(devices: Int) -> ForecastScenario {
        var users = UserProfile()
        users.extra_opens_per_day = 24
        var kinds = [Self.kind("news", announce: .silent, fetch: "minimum", users: users, devices: devices / 2)]
        kinds.append(Self.kind("chat", announce: .alert, users: users, devices: devices - devices / 2))
        // Live Activities too: one on a channel, one by token with a budget it outruns.
        kinds[1].profile.apps[0].live_activities = 2
        kinds[1].profile.apps[0].channels = 1
        return ForecastScenario(
            kinds: kinds, start: Self.midnight.adding(seconds: 6 * 3600), hours: 6,
            publications: PublicationSchedule(everySeconds: 900), seed: 42)
    }

    @Test func theSameSeedGivesTheSameResultOnOneThreadOrSeveral() async throws {
        let scenario = Self.mixed(devices: 200)
        let one = await Forecast.run(scenario, threads: 1, shardSize: 37)
        let again = await Forecast.run(scenario, threads: 1, shardSize: 37)
        let several = await Forecast.run(scenario, threads: 4, shardSize: 37)
        let whole = await Forecast.run(scenario, threads: 1, shardSize: 10_000)
        #expect(one.report.rows.first?.opens ?? 0 > 100)
        for other in [again, several, whole] {
            #expect(other.report == one.report)
            #expect(other.hourly == one.hourly)
            #expect(other.costs == one.costs)
        }
        // Publications and the policy's timers are events of each slice: the count follows the slicing,
        // not the threads.
        #expect(several.events == one.events)
        var reseeded = scenario
        reseeded.seed = 43
        #expect(await Forecast.run(reseeded).report != one.report)
    }

    /// A spread link: each transfer's latency drawn from the device's and transfer's numbers, so the same in
    /// every run; across many, the median and the 90th percentile asked for. Without a p90, the median.
    @Test func aSpreadLinksLatenciesHaveTheMedianAndP90AskedFor() {
        let link = LinkModel(bytesPerSecond: 0, latencyMilliseconds: 400, latencyP90Milliseconds: 2_000)
        var drawn: [Int64] = []
        for device in 0..<100 {
            for transfer in 0..<100 { drawn.append(link.latency(device: device, transfer: transfer, seed: 7)) }
        }
        #expect(
            drawn
                == (0..<100).flatMap { device in
                    (0..<100).map { link.latency(device: device, transfer: $0, seed: 7) }
                })
        drawn.sort()
        #expect(abs(drawn[drawn.count / 2] - 400) <= 20, "median \(drawn[drawn.count / 2])")
        #expect(abs(drawn[drawn.count * 9 / 10] - 2_000) <= 150, "p90 \(drawn[drawn.count * 9 / 10])")
        #expect(drawn.first ?? 0 > 0)
        #expect(link.latency(device: 0, transfer: 0, seed: 8) != link.latency(device: 0, transfer: 0, seed: 7))
        let fixed = LinkModel(bytesPerSecond: 0, latencyMilliseconds: 400)
        #expect(fixed.latency(device: 3, transfer: 9, seed: 7) == 400)
        #expect(fixed.milliseconds(bytes: 1_000_000, slowdown: 1, latency: 400) == 400)
    }

    /// The recommendation across assumptions: the strategy with the best worst case, the best on average
    /// (fresher first, then cheaper), the best under each, and whether that changes with the assumption.
    @Test func aRobustChoiceNamesTheBestWorstCaseTheBestAverageAndWhereTheyDiffer() {
        // Three strategies under three assumptions.
        let choice = RobustChoice(
            freshness: [[0.30, 0.30, 0.30], [0.50, 0.20, 0.45], [0.40, 0.25, 0.10]],
            cost: [[100, 100, 100], [200, 200, 200], [50, 50, 50]])
        #expect(choice.bestWorstCase == 0, "30 % at worst beats 20 % and 10 %")
        #expect(choice.bestOnAverage == 1, "38 % on average")
        #expect(choice.bestUnder == [1, 0, 1])
        #expect(!choice.holdsUnderEveryAssumption)
        let text = choice.text(
            strategies: ["steady", "bold", "cheap"], assumptions: ["a", "b", "c"], objective: "news")
        #expect(text.contains("| steady ◆ | 30 % (100.0) | 30 % (100.0) | 30 % (100.0) | 30 % | 30 % |"))
        #expect(text.contains("◆ Best worst case: steady — 30 % at worst. ● Best on average: bold — 38 %."))
        #expect(text.contains("The recommendation changes with the assumption: steady under b; bold under a, c."))
        // At equal freshness the cheaper wins, whatever its place.
        let tie = RobustChoice(freshness: [[0.3, 0.4], [0.3, 0.4]], cost: [[90, 90], [10, 10]])
        #expect(tie.bestWorstCase == 1 && tie.bestOnAverage == 1 && tie.bestUnder == [1, 1])
        #expect(tie.holdsUnderEveryAssumption)
    }

    /// An objective counts the opens and the devices of its kinds only; the fleet's is the last row.
    @Test func anObjectiveCountsItsKindsOpensAndDevices() async {
        var users = UserProfile()
        users.habit_hours = [8, 12, 20]
        users.extra_opens_per_day = 4
        users.refresh_off_share = 0
        let scenario = ForecastScenario(
            kinds: [
                Self.kind("news", users: users, devices: 3),
                Self.kind("chat", announce: .none, users: users, devices: 2),
            ],
            start: Self.midnight, hours: 24, publications: PublicationSchedule(everySeconds: 600))
        let result = await Forecast.run(scenario)
        let news = result.report.rows.first { $0.profile == "news" }!
        #expect(ForecastObjective(kinds: ["news"]).freshness(result) == Double(news.freshOpens) / Double(news.opens))
        #expect(ForecastObjective.fleet.freshness(result) == result.report.rows.last!.freshAtOpen)
        let costs = result.costs.filter { $0.profile != "all" }
        let weighted = costs.map { $0.awakeSecondsPerDeviceDay * Double($0.devices) }.reduce(0, +) / 5
        #expect(abs(ForecastObjective(kinds: ["news", "chat"]).cost(result) - weighted) < 1e-9)
        #expect(ForecastObjective(kinds: ["news", "chat"]).name == "chat, news")
    }

    @Test func theParetoFrontKeepsWhatNothingBeats() {
        let points: [(freshness: Double, cost: Double)] = [(0.5, 10), (0.6, 20), (0.4, 30), (0.6, 15), (0.2, 1)]
        #expect(ParetoFront.indices(points) == [0, 3, 4])
    }

    @Test func publicationsKeepToTheirHours() {
        let schedule = PublicationSchedule(everySeconds: 3600, hours: (start: 22, end: 2))
        let times = schedule.times(from: Self.midnight, until: Self.midnight.adding(seconds: 86_400))
        let hours = times.map { ($0 - Self.midnight.milliseconds) / 3_600_000 }
        // The first at the start, then 22:00, 23:00 and 00:00, 01:00 (the window wraps past midnight).
        #expect(hours == [0, 1, 22, 23])
    }
}
