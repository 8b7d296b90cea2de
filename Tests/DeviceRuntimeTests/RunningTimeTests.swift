import DeviceRuntime
import PushModel
import Testing

/// What an app leaving mid-download costs, and what becomes of the download (issue 51): the time an app
/// runs in the background is counted only while it runs (R2, R4), a reopened app goes on with its
/// paused download instead of starting another, and a download moved to a background session as its
/// task expires is discretionary and started by the system later (R9, R11).
@Suite struct RunningTimeTests {
    let app: AppSlot = 0

    /// Opens the app, lets its manifest name `version`, and leaves with the item's download open.
    func visit(_ rig: inout Rig, version: Int) throws -> TransferRequest? {
        let opened = rig.send(.userOpened(app: app))
        let manifest = try #require(rig.started(opened).last)
        let item = rig.started(rig.send(.transferFinished(id: manifest.id, result: .manifest(version: version)))).first
        rig.send(.userLeft(app: app))
        return item
    }

    /// A device asleep for hours with a paused download: the app ran only while its task was charged.
    @Test(arguments: [(IOSProfile.ios7, 180), (IOSProfile.ios13, 30), (IOSProfile.ios17, 30)])
    func anAppLeftMidDownloadRunsOnlyWhileTheDeviceIsAwake(_ profile: IOSProfile, _ allowance: Int) throws {
        var rig = Rig(profile)
        _ = try #require(try visit(&rig, version: 5))
        rig.advance(seconds: 2)
        rig.send(.screen(on: false))
        rig.advance(seconds: 6 * 3600)
        #expect(rig.app.state == .background, "its task is open, uncharged, while the device sleeps")
        #expect(rig.runtime.backgroundRunMilliseconds == 2_000, "two seconds awake, none asleep")
        // Awake again: the rest of the allowance, no more.
        rig.send(.screen(on: true))
        rig.advance(seconds: 3600)
        #expect(rig.runtime.backgroundRunMilliseconds == Int64(allowance - 5) * 1000, "up to the expiration handler")
    }

    /// On iOS 6 the device stays awake for the task: the whole allowance, screen or not, then no more.
    @Test func onIOS6AnAppLeftMidDownloadRunsItsWholeAllowance() throws {
        var rig = Rig(.ios6)
        _ = try #require(try visit(&rig, version: 5))
        rig.send(.screen(on: false))
        rig.advance(seconds: 6 * 3600)
        #expect(rig.runtime.backgroundRunMilliseconds == 595_000)
    }

    /// A wake runs while it lasts whether the screen is on or not (the push wakes the device).
    @Test func aSilentWakeRunsUntilItsHandler() {
        var rig = Rig(.ios17)
        rig.send(.screen(on: false))
        rig.send(.pushDelivered(app: app, apnsID: .x, silent: true))
        rig.advance(seconds: 3600)
        #expect(rig.runtime.backgroundRunMilliseconds == 30_000, "the manifest never came: terminated at 30 s")
    }

    /// Each visit that finds the download paused goes on with it: one download, never one more per open.
    @Test func aReopenedAppGoesOnWithItsPausedDownload() throws {
        var rig = Rig(.ios17)
        let first = try #require(try visit(&rig, version: 5))
        rig.send(.screen(on: false))
        for _ in 0..<3 {
            rig.advance(seconds: 3600)
            #expect(try visit(&rig, version: 5) == nil, "the paused download goes on: no second one")
            rig.send(.screen(on: false))
        }
        let downloads = rig.started().filter { $0.content == .item(version: 5) }
        #expect(downloads.map(\.id) == [first.id])
        // A newer version replaces it.
        rig.advance(seconds: 3600)
        let newer = try #require(try visit(&rig, version: 6))
        #expect(rig.log.contains(.cancelTransfer(id: first.id)))
        #expect(newer.content == .item(version: 6))
    }

    /// R11 with R9: the moved download is created in the background, so it is discretionary: the system
    /// starts it `discretionaryDelaySeconds` later (its own start, from the resume data the move kept).
    @Test func aDownloadMovedAsItsTaskExpiresStartsLater() throws {
        var rig = Rig(.ios17)
        let item = try #require(try visit(&rig, version: 5))
        let expired = rig.advance(seconds: 25.1)
        let moved = try #require(
            expired.compactMap {
                if case .moveToBackgroundSession(let from, let to) = $0 { from == item.id ? to : nil } else { nil }
            }.first)
        #expect(!rig.started(expired).contains { $0.id == moved.id }, "not started at once")
        #expect(rig.advance(seconds: 299.8).allSatisfy { $0 != .startTransfer(moved) })
        #expect(rig.started(rig.advance(seconds: 0.2)) == [moved])
        #expect(moved.resumeFrom == TransferRequest.resumeFromCancelled, "from the resume data the move kept")
    }
}

/// Found by a forecast (issue 51: hours of awake time): a wake begun in the foreground has no deadline
/// there, and if the user left with its download moved to a background session, the wake waited for a
/// transfer the app no longer had — in the background for good. Its time now runs from the leave, and a
/// transfer moved away (or cut off) answers it.
@Suite struct WakeBegunInTheForegroundTests {
    let app: AppSlot = 0

    @Test func aWakeBegunInTheForegroundEndsAfterTheUserLeaves() throws {
        var rig = Rig(.ios17, .with { $0.movesDownloadToBackgroundSession = true })
        rig.send(.userOpened(app: app))
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().last)
        let item = try #require(
            rig.started(rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 5)))).first)
        rig.send(.userLeft(app: app))
        // The task's expiration moves the download (25 s of awake time): the wake has its answer.
        let later = rig.advance(seconds: 26)
        #expect(
            later.contains { if case .moveToBackgroundSession(let from, _) = $0 { from == item.id } else { false } })
        #expect(rig.completions(later) == [.newData])
        #expect(rig.app.state == .suspended)
        rig.advance(seconds: 3600)
        #expect(rig.runtime.backgroundRunMilliseconds < 30_000, "not in the background for the hour")
    }

    @Test func aWakeBegunInTheForegroundHasItsThirtySecondsFromTheLeave() throws {
        var rig = Rig(.ios17, .with { $0.forgetsCompletion = 1 })
        rig.send(.userOpened(app: app))
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        rig.advance(seconds: 120)
        #expect(rig.terminations().isEmpty, "in the foreground: no deadline")
        rig.send(.userLeft(app: app))
        #expect(rig.terminations(rig.advance(seconds: 29.9)).isEmpty)
        #expect(rig.terminations(rig.advance(seconds: 0.2)) == [.wakeOverrun])
    }
}
