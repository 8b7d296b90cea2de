import DeviceRuntime
import Foundation
import LoadGenerator
import Testing

@Suite struct ContentAnnouncerTests {
    /// Each app's backend sends what its strategy says, to each of its tokens; apps without one get nothing.
    @Test func theAnnouncementFollowsEachAppsStrategy() {
        let targets = [
            PushTarget(token: "aa", topic: "news"), PushTarget(token: "bb", topic: "chat"),
            PushTarget(token: "cc", topic: "both"), PushTarget(token: "dd", topic: "quiet"),
            PushTarget(token: "ee", topic: "unknown"),
        ]
        let pushes = ContentAnnouncer.pushes(
            version: 7, targets: targets,
            strategies: [
                "news": .init(silent: true, alert: false), "chat": .init(silent: false, alert: true),
                "both": .init(silent: true, alert: true), "quiet": .init(silent: false, alert: false),
            ])
        #expect(pushes.map(\.target.token) == ["aa", "bb", "cc", "cc"])
        #expect(pushes.map(\.silent) == [true, false, true, false])
        let silent = pushes[0]
        #expect(silent.headers.contains { $0 == ("apns-push-type", "background") })
        #expect(silent.headers.contains { $0 == ("apns-priority", "5") })
        #expect(String(decoding: silent.body, as: UTF8.self) == #"{"aps":{"content-available":1},"version":7}"#)
        #expect(pushes[1].headers.contains { $0 == ("apns-push-type", "alert") })
        #expect(String(decoding: pushes[1].body, as: UTF8.self).contains(#""alert":{"#))
    }
}
