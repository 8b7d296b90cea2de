import DeviceRuntime
import PushModel
import Testing

/// R7, R9, R10: a silent push wakes the app, which fetches the manifest, starts the item in a
/// (discretionary) background session, and calls its handler; the session finishes later and the app is
/// relaunched for its events.
@Suite struct SilentWakeTests {
    let app: AppSlot = 0

    @Test func aWakeFetchesTheManifestAndDownloadsTheItemInABackgroundSession() throws {
        var rig = Rig(.ios17)
        let woken = rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        #expect(rig.states(woken) == [.background])
        #expect(woken.contains(.woken(app: app, kind: .silentPush(apnsID: .a))))
        let manifest = try #require(rig.started(woken).first)
        #expect(manifest.content == .manifest && manifest.session == .foreground)

        let decided = rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 3)))
        #expect(rig.started(decided).isEmpty, "discretionary: the system starts it later")
        let completed = rig.advance(seconds: 1)
        #expect(rig.completions(completed) == [.newData])
        #expect(rig.states(completed) == [.suspended])

        let later = rig.advance(seconds: 300)
        let item = try #require(rig.started(later).first)
        #expect(item.content == .item(version: 3))
        #expect(item.session == .background(discretionary: true))
        #expect(item.slowdown == IOSProfile.ios17.backgroundSessionSlowdown)

        // The session finishes while the app is suspended: it is resumed in the background for the events.
        let events = rig.send(.transferFinished(id: item.id, result: .item(version: 3, bytes: 1_000_000)))
        #expect(events.contains(.woken(app: app, kind: .sessionEvents)))
        #expect(events.contains(.contentUpdated(app: app, version: 3, by: .silentPush(apnsID: .a))))
        #expect(!events.contains(.relaunched(app: app)), "suspended, not terminated: resumed")
        #expect(rig.states(rig.advance(seconds: 1)) == [.suspended], "the handler was called")
        #expect(rig.terminations().isEmpty)
        #expect(rig.app.contentVersion == 3)
    }

    @Test func anUnchangedManifestIsNoData() throws {
        var rig = Rig(.ios17)
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().first)
        rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 1)))
        let item = try #require(rig.started(rig.advance(seconds: 400)).first)
        rig.send(.transferFinished(id: item.id, result: .item(version: 1, bytes: 10)))
        rig.advance(seconds: 5)
        rig.send(.pushDelivered(app: app, apnsID: .b, silent: true))
        let second = try #require(rig.started().last)
        rig.send(.transferFinished(id: second.id, result: .manifest(version: 1)))
        #expect(rig.completions(rig.advance(seconds: 1)) == [.noData])
        rig.send(.pushDelivered(app: app, apnsID: .c, silent: true))
        let third = try #require(rig.started().last)
        rig.send(.transferFinished(id: third.id, result: .failed(bytesSoFar: 0)))
        #expect(rig.completions(rig.advance(seconds: 1)) == [.failed])
    }

    @Test func anAppThatNeverCallsItsHandlerIsTerminatedAtThirtySeconds() throws {
        var rig = Rig(.ios17, .with { $0.forgetsCompletion = 1 })
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().first)
        rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 1)))
        #expect(rig.terminations(rig.advance(seconds: 29.9)).isEmpty)
        let overrun = rig.advance(seconds: 0.2)
        #expect(rig.terminations(overrun) == [.wakeOverrun])
        #expect(rig.states(overrun) == [.notRunning])
        #expect(rig.completions().isEmpty)
        // The background session it started goes on (R9): terminated by the system, not force-quit.
        let item = try #require(rig.started(rig.advance(seconds: 300)).first)
        let relaunch = rig.send(.transferFinished(id: item.id, result: .item(version: 1, bytes: 10)))
        #expect(relaunch.contains(.relaunched(app: app)))
        #expect(relaunch.contains(.contentUpdated(app: app, version: 1, by: .silentPush(apnsID: .a))))
    }

    @Test func aSlowManifestFetchPastTheDeadlineIsAnOverrunAndTheFetchIsCancelled() throws {
        var rig = Rig(.ios17)
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().first)
        let overrun = rig.advance(seconds: 30)
        #expect(rig.terminations(overrun) == [.wakeOverrun])
        #expect(overrun.contains(.cancelTransfer(id: manifest.id)))
        // Its late answer changes nothing.
        #expect(rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 9))).isEmpty)
    }

    @Test(arguments: ["force-quit", "low power", "refresh off"])
    func noWakeForAForceQuitAppOrInLowPowerModeOrWithRefreshOff(_ condition: String) {
        var rig = Rig(.ios17)
        switch condition {
        case "force-quit":
            rig.send(.userOpened(app: app))
            rig.send(.userForceQuit(app: app))
        case "low power":
            #expect(rig.send(.lowPowerMode(true)) == [.conditions(lowPowerMode: true, backgroundAppRefreshOff: false)])
        default:
            #expect(
                rig.send(.backgroundAppRefresh(enabled: false))
                    == [.conditions(lowPowerMode: false, backgroundAppRefreshOff: true)])
        }
        let actions = rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let reason: WakeRefusal =
            condition == "force-quit" ? .forceQuit : condition == "low power" ? .lowPowerMode : .backgroundAppRefreshOff
        #expect(actions == [.wakeRefused(app: app, apnsID: .a, reason: reason)])
    }

    /// R7: silent notifications are iOS 7+ (002): an iOS 6 iPhone is woken by none, and says so.
    @Test func anIOS6IPhoneIsNotWokenBySilentPushes() {
        var rig = Rig(.ios6)
        for id in [APNsID.a, .x] {
            #expect(
                rig.send(.pushDelivered(app: app, apnsID: id, silent: true)) == [
                    .wakeRefused(app: app, apnsID: id, reason: .noSilentPushes)
                ])
        }
        rig.advance(seconds: 3600)
        #expect(!rig.log.contains { if case .woken = $0 { true } else { false } })
        #expect(rig.runtime.backgroundRunMilliseconds == 0)
        #expect(rig.app.state == .notRunning)
    }

    @Test func aSecondSilentPushDuringAWakeIsAnsweredWithTheFirstsResult() throws {
        var rig = Rig(.ios17)
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().first)
        rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 2)))
        let second = rig.send(.pushDelivered(app: app, apnsID: .b, silent: true))
        #expect(second == [.complete(apnsID: .b, app: app, result: .newData)])
        #expect(rig.completions(rig.advance(seconds: 1)) == [.newData])
    }

    @Test func withoutBackgroundSessionsTheItemIsFetchedInsideTheWake() throws {
        // (No generation has silent pushes without background sessions: iOS 7 with them taken away.)
        var profile = IOSProfile.ios7
        profile.backgroundSessions = false
        var rig = Rig(profile)
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().first)
        let item = try #require(
            rig.started(rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 4)))).first)
        #expect(item.session == .foreground)
        #expect(rig.completions(rig.advance(seconds: 10)).isEmpty, "waits for the item")
        rig.send(.transferFinished(id: item.id, result: .item(version: 4, bytes: 10)))
        #expect(rig.completions(rig.advance(seconds: 1)) == [.newData])
        #expect(rig.app.contentVersion == 4)
    }
}
