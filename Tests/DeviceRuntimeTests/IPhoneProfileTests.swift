import DeviceProtocol
import DeviceRuntime
import Testing
import Yams

/// The kinds of iPhone in Config/iphone: their format, its errors, and what the runtime plays from it.
@Suite struct IPhoneProfileTests {
    @Test func aProfileGivesTheRuntimeItsIOSAppsAndUsers() throws {
        let profile = try YAMLDecoder().decode(
            IPhoneProfile.self,
            from: """
                ios: 7
                apps:
                  - bundle_id: com.example.a
                    announce: silent_and_alert
                    fetch: 1800
                    item_bytes: 4096
                    forgets_completion: 0.5
                  - bundle_id: com.example.b
                    fetch: minimum
                users:
                  habit_hours: [9]
                """)
        #expect(profile.problem() == nil)
        #expect(profile.iosProfile == .ios7)
        #expect(profile.apps[0].announce.sendsSilent && profile.apps[0].announce.sendsAlert)
        #expect(profile.apps[0].behaviour.fetchInterval == .custom(seconds: 1800))
        #expect(profile.apps[0].behaviour.itemBytes == 4096)
        #expect(profile.apps[0].behaviour.forgetsCompletion == 0.5)
        #expect(profile.apps[1].behaviour.fetchInterval == .minimum)
        #expect(profile.apps[1].announce == .silent)  // the default
        #expect(profile.users.habit_hours == [9])
        #expect(profile.users.session_seconds == UserProfile().session_seconds)
    }

    @Test func mistakesAreNamed() throws {
        func problem(_ yaml: String) throws -> String? {
            try YAMLDecoder().decode(IPhoneProfile.self, from: yaml).problem()
        }
        #expect(throws: DecodingError.self) { try YAMLDecoder().decode(IPhoneProfile.self, from: "ios: 17\napp: []") }
        #expect(throws: DecodingError.self) {
            try YAMLDecoder().decode(IPhoneProfile.self, from: "apps:\n  - bundle_id: a\n    anounce: silent")
        }
        #expect(throws: DecodingError.self) {
            try YAMLDecoder().decode(IPhoneProfile.self, from: "apps:\n  - bundle_id: a\n    announce: loud")
        }
        #expect(try problem("apps: []") == "apps: at least one app")
        #expect(try problem("ios: 1\napps:\n  - bundle_id: a")?.hasPrefix("ios:") == true)
        #expect(try problem("apps:\n  - bundle_id: a\n    fetch: often")?.hasPrefix("apps[0].fetch:") == true)
        #expect(try problem("apps:\n  - bundle_id: a\n    fetch: 0")?.hasPrefix("apps[0].fetch:") == true)
        #expect(
            try problem("apps:\n  - bundle_id: a\n    forgets_completion: 2")?.hasPrefix("apps[0].forgets_completion")
                == true)
        #expect(try problem("apps:\n  - bundle_id: a\n    item_bytes: 0")?.hasPrefix("apps[0].item_bytes") == true)
        #expect(try problem("apps:\n  - bundle_id: a\n  - bundle_id: a")?.hasPrefix("apps[1].bundle_id") == true)
        #expect(
            try problem("apps:\n  - bundle_id: a\n    live_activities: 9")?.hasPrefix("apps[0].live_activities") == true
        )
        #expect(
            try problem("apps:\n  - bundle_id: a\n    live_activities: 1\n    channels: 2")?.hasPrefix(
                "apps[0].channels: from 0 to live_activities (1)") == true)
        #expect(
            try problem("apps:\n  - bundle_id: a\n    live_activities: 1\n    live_activity_priority: 1")?.hasPrefix(
                "apps[0].live_activity_priority") == true)
        // Activities on broadcast channels are iOS 18's.
        let channelsOn17 = "apps:\n  - bundle_id: a\n    live_activities: 2\n    channels: 1\n    frequent_pushes: true"
        #expect(
            try problem(channelsOn17)
                == "apps[0].channels: Live Activities on broadcast channels need ios: 18 or later, got ios: 17")
        let sports = try YAMLDecoder().decode(IPhoneProfile.self, from: "ios: 18\n" + channelsOn17)
        #expect(sports.problem() == nil)
        #expect(sports.apps[0].behaviour.liveActivities == 2)
        #expect(sports.apps[0].tokenActivities == 1..<2)
        #expect(sports.strategy.hasSuffix("2 Live Activities (1 on a channel, 1 by token at priority 10, frequent)"))
        // A widget reloaded by its push is iOS 26's, a control iOS 18's.
        #expect(
            try problem("apps:\n  - bundle_id: a\n    widget: true")
                == "apps[0].widget: a widget reloaded by its push needs ios: 26 or later, got ios: 17")
        #expect(
            try problem("apps:\n  - bundle_id: a\n    control: true")
                == "apps[0].control: a control reloaded by its push needs ios: 18 or later, got ios: 17")
        let both = try YAMLDecoder().decode(
            IPhoneProfile.self, from: "ios: 26\napps:\n  - bundle_id: a\n    widget: true\n    control: true")
        #expect(both.problem() == nil)
        #expect(both.apps[0].behaviour.surfaces == [.widget, .control])
        #expect(both.strategy.hasSuffix("widget push, control push"))
        // A kept activity's id, and back.
        let id = AppProfile.keptActivityID("com.example.scores", 3)
        #expect(AppProfile.keptActivityIndex(id, of: "com.example.scores") == 3)
        #expect(AppProfile.keptActivityIndex(id, of: "com.example.other") == nil)
        #expect(AppProfile.keptActivityIndex("com.example.scores/live-x", of: "com.example.scores") == nil)
        #expect(
            try problem("apps:\n  - bundle_id: a\nusers:\n  session_seconds: 0")?.hasPrefix("users.session_seconds")
                == true)
    }

    @Test func theManifestSaysItsVersionAndWhenItWasPublished() {
        let body = Array(ContentManifest.json(version: 12, publishedAt: 1_700_000_000_123, bytes: 5).utf8)
        #expect(ContentManifest.version(of: body) == 12)
        #expect(ContentManifest.publishedAt(of: body) == 1_700_000_000_123)
        #expect(ContentManifest.publishedAt(of: Array(#"{"version":3}"#.utf8)) == nil)
    }
}
