import PushModel
import Testing

@testable import DeviceRuntime

/// R6 (background fetch) and R8 (location wakes).
@Suite struct FetchAndLocationTests {
    let app: AppSlot = 0

    func fetches(_ actions: [RuntimeAction]) -> Int {
        actions.filter { $0 == .woken(app: app, kind: .fetch) }.count
    }

    @Test func neverIsTheDefault() {
        var rig = Rig(.ios17)
        #expect(fetches(rig.advance(seconds: 86_400)) == 0)
    }

    @Test func minimumFetchesAfterTheSystemsIntervalAndBacksOffAfterAFailure() throws {
        var rig = Rig(.ios17, .with { $0.fetchInterval = .minimum })
        #expect(fetches(rig.advance(seconds: 899)) == 0)
        let first = rig.advance(seconds: 1)
        #expect(fetches(first) == 1)
        let manifest = try #require(rig.started(first).first)
        rig.send(.transferFinished(id: manifest.id, result: .failed(bytesSoFar: 0)))
        rig.advance(seconds: 1)  // failed: the next one four intervals later
        #expect(fetches(rig.advance(seconds: 3590)) == 0)
        #expect(fetches(rig.advance(seconds: 20)) == 1)
    }

    @Test func aCustomIntervalLongerThanTheMinimumIsKept() {
        var rig = Rig(.ios17, .with { $0.fetchInterval = .custom(seconds: 3600) })
        #expect(fetches(rig.advance(seconds: 3599)) == 0)
        #expect(fetches(rig.advance(seconds: 1)) == 1)
    }

    @Test func aFetchThatOverrunsThirtySecondsTerminatesTheApp() {
        var rig = Rig(.ios17, .with { $0.fetchInterval = .minimum })
        rig.advance(seconds: 900)
        #expect(rig.terminations(rig.advance(seconds: 30)) == [.wakeOverrun])
    }

    @Test(arguments: ["force-quit", "low power", "refresh off", "ios 6"])
    func noFetchWhenNotAllowed(_ condition: String) {
        var rig = Rig(condition == "ios 6" ? .ios6 : .ios17, .with { $0.fetchInterval = .minimum })
        switch condition {
        case "force-quit":
            rig.send(.userOpened(app: app))
            rig.send(.userForceQuit(app: app))
        case "low power": rig.send(.lowPowerMode(true))
        case "refresh off": rig.send(.backgroundAppRefresh(enabled: false))
        default: break
        }
        #expect(fetches(rig.advance(seconds: 86_400)) == 0)
    }

    /// The system learns when the user opens the app and fetches shortly before.
    @Test func aLaunchHabitPullsTheFetchToJustBeforeTheUsualOpen() {
        let day: Int64 = 86_400_000
        let start = UnixTime(milliseconds: 20_000 * day)
        var schedule = FetchSchedule()
        for n in 0..<3 { schedule.recordLaunch(at: start.adding(milliseconds: Int64(n) * day + 8 * 3_600_000)) }
        // At 02:00 the plain interval (4 h) would fetch at 06:00; the habitual open at 08:00 comes within
        // one more interval, so the fetch lands 10 minutes before it.
        let night = start.adding(milliseconds: 3 * day + 2 * 3_600_000)
        schedule.schedule(after: night, interval: .custom(seconds: 4 * 3600), profile: .ios17)
        #expect(schedule.nextFetchAt == start.adding(milliseconds: 3 * day + 8 * 3_600_000 - 600_000))
        // At 12:00 the next habitual open is a day away: the plain interval holds.
        let noon = start.adding(milliseconds: 3 * day + 12 * 3_600_000)
        schedule.schedule(after: noon, interval: .custom(seconds: 4 * 3600), profile: .ios17)
        #expect(schedule.nextFetchAt == noon.adding(seconds: 4 * 3600))
        // Two habits are not yet a habit.
        var young = FetchSchedule()
        for n in 0..<2 { young.recordLaunch(at: start.adding(milliseconds: Int64(n) * day + 8 * 3_600_000)) }
        young.schedule(after: night, interval: .custom(seconds: 4 * 3600), profile: .ios17)
        #expect(young.nextFetchAt == night.adding(seconds: 4 * 3600))
    }

    @Test func newDataIsFetchedSoonerThanNoDataAndFailedLater() {
        let now = UnixTime(seconds: 1_800_000_000)
        func spacing(_ results: [CompletionResult]) -> Int64 {
            var schedule = FetchSchedule()
            for result in results { schedule.recordFetch(at: now, result: result) }
            schedule.schedule(after: now, interval: .minimum, profile: .ios17)
            return schedule.nextFetchAt!.seconds - now.seconds
        }
        #expect(spacing([.newData]) == 900)
        #expect(spacing([.noData]) == 1800)
        #expect(spacing([.failed]) == 3600)
        #expect(spacing([.failed, .newData, .newData]) == 1800)
    }

    @Test func aLocationWakeGivesTenSecondsThenSuspends() {
        var rig = Rig(.ios17)
        let woken = rig.send(.locationChanged(app: app))
        #expect(woken.contains(.woken(app: app, kind: .location)))
        #expect(rig.states(rig.advance(seconds: 9.9)).isEmpty)
        #expect(rig.states(rig.advance(seconds: 0.2)) == [.suspended])
        #expect(rig.terminations().isEmpty)
    }
}
