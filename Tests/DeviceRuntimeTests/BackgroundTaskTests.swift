import DeviceRuntime
import PushModel
import Testing

/// R2–R5, R11: leaving the foreground with work open; the allowance per iOS; the expiration handler;
/// opportunistic tasks; the DidEnterBackground watchdog; a download moved to a background session.
@Suite struct BackgroundTaskTests {
    let app: AppSlot = 0

    /// Opens the app, lets its manifest name version 5, and leaves with the item's foreground download open.
    func leaveDuringADownload(_ rig: inout Rig) throws -> TransferRequest {
        rig.send(.userOpened(app: app))
        let manifest = try #require(rig.started().last)
        let item = try #require(
            rig.started(rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 5)))).first)
        #expect(item.session == .foreground)
        rig.send(.userLeft(app: app))
        return item
    }

    @Test(arguments: [(IOSProfile.ios6, 600), (IOSProfile.ios7, 180), (IOSProfile.ios13, 30), (IOSProfile.ios17, 30)])
    func theExpirationHandlerRunsBeforeTheAllowanceEnds(_ profile: IOSProfile, _ allowance: Int) throws {
        var rig = Rig(profile)
        let item = try leaveDuringADownload(&rig)
        #expect(rig.app.state == .background, "a background task keeps it running")
        #expect(
            !rig.advance(seconds: Double(allowance) - 5.1).contains {
                if case .moveToBackgroundSession = $0 { true } else { $0 == .cancelTransfer(id: item.id) }
            })
        let expired = rig.advance(seconds: 0.2)
        if profile.backgroundSessions {
            // R11: moved to a background session, resuming from the bytes it had.
            let moved = try #require(
                expired.compactMap {
                    if case .moveToBackgroundSession(let from, let to) = $0 { (from, to) } else { nil }
                }.first)
            #expect(moved.0 == item.id)
            #expect(
                moved.1.session == .background(discretionary: true)
                    && moved.1.resumeFrom == TransferRequest.resumeFromCancelled)
        } else {
            #expect(expired.contains(.cancelTransfer(id: item.id)), "iOS 6: the work is lost")
        }
        #expect(rig.states(expired) == [.suspended])
        #expect(rig.terminations().isEmpty)
    }

    @Test func aTaskThatIsNeverEndedGetsTheAppTerminated() throws {
        var rig = Rig(.ios17, .with { $0.forgetsEndingTask = 1 })
        _ = try leaveDuringADownload(&rig)
        #expect(rig.terminations(rig.advance(seconds: 29.9)).isEmpty)
        #expect(rig.terminations(rig.advance(seconds: 0.2)) == [.unendedTask])
        #expect(rig.app.state == .notRunning)
    }

    @Test func aDownloadThatFinishesInTimeEndsItsTask() throws {
        var rig = Rig(.ios17)
        let item = try leaveDuringADownload(&rig)
        rig.advance(seconds: 10)
        let done = rig.send(.transferFinished(id: item.id, result: .item(version: 5, bytes: 100)))
        #expect(done.contains(.contentUpdated(app: app, version: 5, by: nil)))
        #expect(rig.states(done) == [.suspended])
    }

    /// R4: from iOS 7 a task's time runs only while the device is awake.
    @Test func anOpportunisticTaskWaitsWhileTheDeviceSleeps() throws {
        var rig = Rig(.ios7)
        let item = try leaveDuringADownload(&rig)
        rig.advance(seconds: 100)
        rig.send(.screen(on: false))
        #expect(rig.advance(seconds: 3600).isEmpty, "asleep: no expiration however long")
        // An alert keeps the device awake for 10 s: 10 s of the task's time.
        rig.send(.pushDelivered(app: 1, apnsID: .x, silent: false))
        rig.advance(seconds: 60)
        rig.send(.screen(on: true))
        // 100 + 10 s used of 180: the handler runs 5 s before the remaining 70 s are up.
        #expect(rig.advance(seconds: 64.9).isEmpty)
        let expired = rig.advance(seconds: 0.2)
        #expect(
            expired.contains { if case .moveToBackgroundSession(let from, _) = $0 { from == item.id } else { false } })
    }

    /// R4: the download a task protects stops while the device sleeps and goes on when it wakes (an
    /// alert's few seconds, the screen), or when the user brings the app back.
    @Test(arguments: [IOSProfile.ios7, IOSProfile.ios17])
    func aProtectedDownloadPausesWhileTheDeviceSleeps(_ profile: IOSProfile) throws {
        var rig = Rig(profile)
        let item = try leaveDuringADownload(&rig)
        #expect(rig.send(.screen(on: false)) == [.pauseTransfer(id: item.id)])
        #expect(rig.advance(seconds: 600).isEmpty)
        // An alert wakes the device for `interruptionAwakeSeconds`: the download goes on, then stops again.
        #expect(
            rig.send(.pushDelivered(app: 1, apnsID: .x, silent: false))
                == [.resumeTransfer(id: item.id)])
        #expect(rig.advance(seconds: Double(profile.interruptionAwakeSeconds) + 1) == [.pauseTransfer(id: item.id)])
        // The user opens the app: in the foreground the download runs whatever the screen.
        let opened = rig.send(.userOpened(app: app))
        #expect(opened.contains(.resumeTransfer(id: item.id)))
        #expect(!opened.contains(.pauseTransfer(id: item.id)))
        let done = rig.send(.transferFinished(id: item.id, result: .item(version: 5, bytes: 100)))
        #expect(!done.contains { if case .pauseTransfer = $0 { true } else { false } })
        #expect(rig.app.contentVersion == 5)
    }

    /// A task's time runs only while the device is awake, so it expires while the download runs (here
    /// during an alert's seconds): the download moves to a background session, which is not the app's to
    /// pause. A force-quit of a paused download cancels it for good.
    @Test func aPausedDownloadMovesWhenItsTaskExpiresAndAForceQuitCancelsIt() throws {
        var rig = Rig(.ios17)
        let item = try leaveDuringADownload(&rig)
        rig.advance(seconds: 22)
        #expect(rig.send(.screen(on: false)) == [.pauseTransfer(id: item.id)])
        #expect(rig.advance(seconds: 100).isEmpty)
        // The expiration handler is due 5 s before the 30 s: 3 s into the alert's 10.
        rig.send(.pushDelivered(app: 1, apnsID: .x, silent: false))
        let expired = rig.advance(seconds: 3.1)
        let moved = try #require(
            expired.compactMap {
                if case .moveToBackgroundSession(let from, let to) = $0 { from == item.id ? to : nil } else { nil }
            }
            .first)
        rig.advance(seconds: 60)
        #expect(!rig.log.contains(.pauseTransfer(id: moved.id)))

        var other = Rig(.ios17)
        let download = try leaveDuringADownload(&other)
        other.send(.screen(on: false))
        #expect(other.send(.userForceQuit(app: app)).contains(.cancelTransfer(id: download.id)))
        #expect(!other.send(.screen(on: true)).contains(.resumeTransfer(id: download.id)))
    }

    /// R4: on iOS 6 the device stays awake for the task: its time runs in any case.
    @Test func onIOS6TheTaskRunsWhetherTheScreenIsOnOrNot() throws {
        var rig = Rig(.ios6)
        let item = try leaveDuringADownload(&rig)
        #expect(rig.send(.screen(on: false)).isEmpty, "iOS 6: the download goes on")
        let expired = rig.advance(seconds: 596)
        #expect(expired.contains(.cancelTransfer(id: item.id)))
    }

    /// R5: DidEnterBackground that does not return within 5 s is killed by the watchdog.
    @Test func theWatchdogTerminatesASlowDidEnterBackground() {
        var rig = Rig(.ios17, .with { $0.didEnterBackgroundMilliseconds = 6000 })
        rig.send(.userOpened(app: app))
        rig.send(.userLeft(app: app))
        #expect(rig.terminations(rig.advance(seconds: 4.9)).isEmpty)
        #expect(rig.terminations(rig.advance(seconds: 0.2)) == [.watchdog])
    }

    @Test func leavingWithNothingOpenSuspendsAtOnceAndStopsTheRefresh() throws {
        var rig = Rig(.ios17)
        rig.send(.userOpened(app: app))
        let manifest = try #require(rig.started().last)
        let left = rig.send(.userLeft(app: app))
        // The refresh is protected by a task and finishes: then suspended.
        #expect(rig.states(left) == [.background])
        let done = rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 0)))
        #expect(rig.states(done) == [.suspended])
    }
}
