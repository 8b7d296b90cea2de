import DeviceRuntime
import PushModel
import Testing

/// A simulated iPhone's Live Activities, with plain instants: each shows the content of the update with
/// the latest `timestamp` (an older one is ignored, as iOS ignores it), and the
/// user sees every one each time the screen comes on — by the user model's screen event or an open.
@Suite struct LiveActivityScreenTests {
    let app = AppSlot(0)

    func rig(activities: Int = 2) -> Rig {
        Rig(.ios17, .with { $0.liveActivities = activities }, apps: ["com.example.scores"])
    }

    func viewed(_ actions: [RuntimeAction]) -> [Int?] {
        actions.compactMap { if case .activityViewed(_, _, let version) = $0 { version } else { nil } }
    }

    /// The timestamp decides, not the version the content carries (issue 51): a newer timestamp with a
    /// lower version is shown, an older timestamp with a higher version is ignored.
    @Test func updatesApplyInTimestampOrder() {
        var rig = rig()
        #expect(
            rig.send(.liveActivityUpdated(app: app, activity: 0, version: 2, timestamp: 100)) == [
                .activityUpdated(app: app, activity: 0, version: 2)
            ])
        #expect(
            rig.send(.liveActivityUpdated(app: app, activity: 0, version: 3, timestamp: 90)).isEmpty,
            "an older timestamp: ignored, whatever its version")
        #expect(
            rig.send(.liveActivityUpdated(app: app, activity: 0, version: 4, timestamp: 100)).isEmpty, "as old: ignored"
        )
        #expect(
            rig.send(.liveActivityUpdated(app: app, activity: 0, version: 1, timestamp: 110)) == [
                .activityUpdated(app: app, activity: 0, version: 1)
            ], "a newer timestamp: shown, whatever its version")
        #expect(
            rig.send(.liveActivityUpdated(app: app, activity: 5, version: 3, timestamp: 120)).isEmpty,
            "no such activity")
        #expect(rig.runtime.app(app)?.activityVersions == [1, nil])
    }

    @Test func everyActivityIsSeenWhenTheScreenComesOn() {
        var rig = rig()
        rig.send(.liveActivityUpdated(app: app, activity: 1, version: 4, timestamp: 4))
        #expect(viewed(rig.send(.screen(on: true))) == [nil, 4])
        #expect(viewed(rig.send(.screen(on: true))).isEmpty, "already on: no new look")
        #expect(viewed(rig.send(.userOpened(app: app))).isEmpty, "an open with the screen on")
        rig.send(.userLeft(app: app))
        rig.send(.screen(on: false))
        // An open that turns the screen on (no screen event first) is a look too.
        #expect(viewed(rig.send(.userOpened(app: app))) == [nil, 4])
    }

    @Test func aForceQuitLeavesTheActivitiesAsTheyAre() {
        var rig = rig()
        rig.send(.liveActivityUpdated(app: app, activity: 0, version: 3, timestamp: 3))
        rig.send(.userOpened(app: app))
        rig.send(.userForceQuit(app: app))
        #expect(rig.runtime.app(app)?.activityVersions == [3, nil], "the system's, not the app's")
        #expect(rig.send(.liveActivityUpdated(app: app, activity: 0, version: 4, timestamp: 4)).count == 1)
    }

    @Test func anAppWithoutActivitiesShowsNone() {
        var rig = rig(activities: 0)
        #expect(viewed(rig.send(.screen(on: true))).isEmpty)
        #expect(rig.send(.liveActivityUpdated(app: app, activity: 0, version: 1, timestamp: 1)).isEmpty)
    }

    /// A widget (iOS 26) or a control (iOS 18) reloads on its push (a newer version only) and is seen
    /// whenever the screen comes on; an app without one shows none, and an iPhone older than the
    /// surface's iOS reloads nothing on its push.
    @Test(arguments: WidgetKitSurface.allCases) func aSurfaceReloadsOnItsPushAndIsSeenAtScreenOn(
        _ surface: WidgetKitSurface
    ) {
        let since = IOSProfile.version(surface.since)
        var rig = Rig(since, .with { $0.surfaces = WidgetKitSurfaces(surface) }, apps: ["com.example.news"])
        #expect(
            rig.send(.widgetKitPushed(app: app, surface: surface, version: 3))
                == [.widgetKitReloaded(app: app, surface: surface, version: 3)])
        #expect(
            rig.send(.widgetKitPushed(app: app, surface: surface, version: 2)).isEmpty,
            "an older version: nothing to show")
        #expect(rig.send(.screen(on: true)) == [.widgetKitViewed(app: app, surface: surface, contentVersion: 3)])
        var without = Rig(since, apps: ["com.example.news"])
        #expect(without.send(.widgetKitPushed(app: app, surface: surface, version: 3)).isEmpty)
        #expect(without.send(.screen(on: true)).isEmpty)
        var older = Rig(.ios17, .with { $0.surfaces = WidgetKitSurfaces(surface) }, apps: ["com.example.news"])
        #expect(older.send(.widgetKitPushed(app: app, surface: surface, version: 3)).isEmpty, "iOS 17 has no token")
        #expect(older.send(.screen(on: true)) == [.widgetKitViewed(app: app, surface: surface, contentVersion: nil)])
    }

    /// An app with both shows both at every screen-on, each with its own version, the widget first.
    @Test func aWidgetAndAControlKeepTheirOwnVersions() {
        var rig = Rig(.ios26, .with { $0.surfaces = [.widget, .control] }, apps: ["com.example.news"])
        _ = rig.send(.widgetKitPushed(app: app, surface: .control, version: 5))
        _ = rig.send(.widgetKitPushed(app: app, surface: .widget, version: 4))
        #expect(
            rig.send(.screen(on: true)) == [
                .widgetKitViewed(app: app, surface: .widget, contentVersion: 4),
                .widgetKitViewed(app: app, surface: .control, contentVersion: 5),
            ])
    }
}
