import DeviceRuntime
import PushModel
import Testing

/// R1, R9, R10: background sessions through suspension, system termination and force-quit; and both
/// orders of the races between the user and the system.
@Suite struct SessionAndRaceTests {
    let app: AppSlot = 0

    /// A silent wake that leaves version `version`'s item downloading in a background session, started.
    func backgroundDownload(_ rig: inout Rig, version: Int = 2) throws -> TransferRequest {
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().last)
        rig.send(.transferFinished(id: manifest.id, result: .manifest(version: version)))
        let item = try #require(rig.started(rig.advance(seconds: 301)).first)
        #expect(item.session == .background(discretionary: true))
        return item
    }

    @Test func aSystemTerminationLeavesTheDownloadRunningAndTheAppIsRelaunchedForIt() throws {
        var rig = Rig(.ios17)
        let item = try backgroundDownload(&rig)
        #expect(rig.app.state == .suspended)
        let reclaimed = rig.send(.memoryPressure(app: app))
        #expect(rig.terminations(reclaimed) == [.memoryPressure])
        #expect(!reclaimed.contains(.cancelTransfer(id: item.id)))
        let relaunch = rig.send(.transferFinished(id: item.id, result: .item(version: 2, bytes: 50_000_000)))
        #expect(relaunch.contains(.relaunched(app: app)))
        #expect(rig.states(relaunch) == [.background])
        #expect(relaunch.contains(.contentUpdated(app: app, version: 2, by: .silentPush(apnsID: .a))))
        #expect(rig.states(rig.advance(seconds: 1)) == [.suspended], "it called the session's handler")
    }

    @Test func anAppThatDoesNotCallTheSessionHandlerIsTerminated() throws {
        var rig = Rig(.ios17, .with { $0.forgetsSessionHandler = 1 })
        let item = try backgroundDownload(&rig)
        rig.send(.transferFinished(id: item.id, result: .item(version: 2, bytes: 10)))
        #expect(rig.terminations(rig.advance(seconds: 29.9)).isEmpty)
        #expect(rig.terminations(rig.advance(seconds: 0.2)) == [.sessionHandlerNotCalled])
        #expect(rig.app.contentVersion == 2, "the content arrived all the same")
    }

    @Test func forceQuitDuringABackgroundDownloadCancelsIt() throws {
        var rig = Rig(.ios17)
        let item = try backgroundDownload(&rig)
        rig.send(.userOpened(app: app))
        let quit = rig.send(.userForceQuit(app: app))
        #expect(quit.contains(.cancelTransfer(id: item.id)))
        #expect(rig.states(quit) == [.forceQuit])
        // A late answer for the cancelled download wakes nothing.
        #expect(rig.send(.transferFinished(id: item.id, result: .item(version: 2, bytes: 10))).isEmpty)
        #expect(rig.app.contentVersion == nil)
        // Opening the app again ends the force-quit.
        let reopened = rig.send(.userOpened(app: app))
        #expect(rig.states(reopened) == [.foreground])
        #expect(reopened.contains(.opened(app: app, contentVersion: nil)))
    }

    @Test func forceQuitBeforeADiscretionaryStartCancelsItToo() throws {
        var rig = Rig(.ios17)
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().last)
        rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 2)))
        rig.advance(seconds: 1)
        rig.send(.userOpened(app: app))
        let quit = rig.send(.userForceQuit(app: app))
        #expect(quit.contains { if case .cancelTransfer = $0 { true } else { false } })
        #expect(rig.started(rig.advance(seconds: 600)).filter { $0.content == .item(version: 2) }.isEmpty)
    }

    /// The race of an open and a finishing download, in both orders: the content counts at the open
    /// only when it arrived first.
    @Test func theUserOpensTheAppAsTheDownloadFinishes() throws {
        // Download first, then the open: the open sees version 2.
        var first = Rig(.ios17)
        let item = try backgroundDownload(&first)
        first.send(.transferFinished(id: item.id, result: .item(version: 2, bytes: 10)))
        let opened = first.send(.userOpened(app: app))
        #expect(opened.contains(.opened(app: app, contentVersion: 2)))

        // Open first, then the download: the open sees nothing yet; the running app gets it directly.
        var second = Rig(.ios17)
        let other = try backgroundDownload(&second)
        let early = second.send(.userOpened(app: app))
        #expect(early.contains(.opened(app: app, contentVersion: nil)))
        let arrived = second.send(.transferFinished(id: other.id, result: .item(version: 2, bytes: 10)))
        #expect(arrived.contains(.contentUpdated(app: app, version: 2, by: .silentPush(apnsID: .a))))
        #expect(!arrived.contains(.relaunched(app: app)))
        #expect(second.states(arrived).isEmpty, "still in the foreground")
    }

    /// Session events that finished while the app was terminated and not relaunched (e.g. it was
    /// relaunched, forgot, and was terminated) are delivered at the next open.
    @Test func theForceQuitAndTheWakeRaceInBothOrders() throws {
        // Force-quit, then a silent push: refused.
        var quitFirst = Rig(.ios17)
        quitFirst.send(.userOpened(app: app))
        quitFirst.send(.userForceQuit(app: app))
        #expect(
            quitFirst.send(.pushDelivered(app: app, apnsID: .a, silent: true)) == [
                .wakeRefused(app: app, apnsID: .a, reason: .forceQuit)
            ])
        // A silent push, then force-quit during the wake: the wake ends without a completion.
        var wakeFirst = Rig(.ios17)
        wakeFirst.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let quit = wakeFirst.send(.userForceQuit(app: app))
        #expect(wakeFirst.states(quit) == [.forceQuit])
        #expect(wakeFirst.completions(wakeFirst.advance(seconds: 60)).isEmpty)
        #expect(wakeFirst.terminations().isEmpty)
    }

    /// Every app of a device is its own: one's wake does not touch another's state.
    @Test func appsAreIndependent() throws {
        var rig = Rig(.ios17, apps: ["com.example.news", "com.example.chat"])
        rig.send(.pushDelivered(app: 1, apnsID: .c, silent: true))
        #expect(rig.runtime.apps["com.example.chat"]!.state == .background)
        #expect(rig.runtime.apps["com.example.news"]!.state == .notRunning)
    }

    /// A restart ends every running app without blame (not a termination the app caused), leaves a
    /// background session's download going and a force-quit app as it was, and tells the gateway.
    @Test func aRebootEndsTheRunningAppsWithoutBlameAndKeepsBackgroundSessions() throws {
        var rig = Rig(
            .ios17, .with { $0.downloadsInBackgroundSession = true }, apps: ["com.example.news", "com.example.chat"])
        rig.send(.pushDelivered(app: app, apnsID: .a, silent: true))
        let manifest = try #require(rig.started().first)
        rig.send(.transferFinished(id: manifest.id, result: .manifest(version: 3)))
        let download = try #require(rig.started(rig.advance(seconds: 301)).last)
        #expect(download.session == .background(discretionary: true))
        rig.send(.userOpened(app: AppSlot(1)))
        let actions = rig.send(.rebooted)
        #expect(rig.terminations(actions) == [.reboot, .reboot])
        #expect(actions.last == .rebooted)
        #expect(!actions.contains(.cancelTransfer(id: download.id)), "the system's session goes on")
        #expect(rig.runtime.apps.values.allSatisfy { $0.state == .notRunning })
    }
}
