import DeviceRuntime
import Testing

/// A device's Live Activities with plain instants: a push-to-start starts one, updates apply in
/// timestamp order (an older one is ignored, as iOS ignores it), an end ends it and later pushes are
/// ignored, the dismissal date removes it, and pushes that do not fit a token are not applied.
@Suite struct LiveActivityBookTests {
    let start = "aa01"
    let now: Int64 = 1_800_000_000

    func started() -> (LiveActivityBook, String) {
        var book = LiveActivityBook()
        book.pushToStartToken(start, bundleID: "com.example.scores", attributesType: "GameAttributes")
        let outcome = book.received(
            LiveActivityPush(
                event: .start, timestamp: now, contentState: #"{"home":0}"#, attributesType: "GameAttributes",
                attributes: #"{"match":"A-B"}"#),
            token: start, now: now, newID: { "game-1" })
        #expect(outcome == .started(activityID: "game-1", bundleID: "com.example.scores"))
        book.updateToken("bb02", activityID: "game-1")
        return (book, "game-1")
    }

    @Test func updatesApplyInTimestampOrder() {
        var (book, id) = started()
        #expect(
            book.received(
                LiveActivityPush(
                    event: .update, timestamp: now + 60, contentState: #"{"home":1}"#, staleDate: now + 600),
                token: "bb02", now: now + 61, newID: { "x" }) == .updated(activityID: id))
        #expect(
            book.received(
                LiveActivityPush(event: .update, timestamp: now + 30, contentState: #"{"home":9}"#), token: "bb02",
                now: now + 62, newID: { "x" }) == .ignoredOlder(activityID: id))
        let activity = book.activities[id]!
        #expect(activity.contentState == #"{"home":1}"#)
        #expect(activity.timestamp == now + 60)
        #expect(activity.updatesApplied == 2)
        #expect(!activity.isStale(at: now + 599))
        #expect(activity.isStale(at: now + 600))
    }

    @Test func anEndedActivityIgnoresLaterPushesAndLeavesAtItsDismissalDate() {
        var (book, id) = started()
        #expect(
            book.received(
                LiveActivityPush(
                    event: .end, timestamp: now + 10, contentState: #"{"home":3}"#, dismissalDate: now + 100),
                token: "bb02", now: now + 10, newID: { "x" }) == .ended(activityID: id))
        #expect(
            book.received(
                LiveActivityPush(event: .update, timestamp: now + 20), token: "bb02", now: now + 20, newID: { "x" })
                == .ignoredEnded(activityID: id))
        #expect(book.advance(to: now + 99).isEmpty)
        #expect(book.advance(to: now + 100) == [id])
        #expect(book.activities[id] == nil)
        if case .notApplied = book.received(
            LiveActivityPush(event: .update, timestamp: now + 200), token: "bb02", now: now + 200, newID: { "x" })
        {
        } else {
            Issue.record("a dismissed activity's token applies nothing")
        }
    }

    @Test func withoutADismissalDateAnEndedActivityStaysFourHours() {
        var (book, id) = started()
        _ = book.received(
            LiveActivityPush(event: .end, timestamp: now + 1), token: "bb02", now: now + 1, newID: { "x" })
        #expect(book.advance(to: now + 1 + 4 * 3600 - 1).isEmpty)
        #expect(book.advance(to: now + 1 + 4 * 3600) == [id])
    }

    @Test func pushesThatDoNotFitATokenAreNotApplied() {
        var (book, _) = started()
        let cases: [(LiveActivityPush?, String)] = [
            (nil, "bb02"),
            (LiveActivityPush(event: .update, timestamp: now), start),
            (
                LiveActivityPush(event: .start, timestamp: now, attributesType: "OtherAttributes", attributes: "{}"),
                start
            ),
            (LiveActivityPush(event: .start, timestamp: now + 5), "bb02"),
            (LiveActivityPush(event: .update, timestamp: now + 5), "unknown"),
        ]
        for (push, token) in cases {
            let outcome = book.received(push, token: token, now: now, newID: { "y" })
            if case .notApplied = outcome {
            } else {
                Issue.record("\(String(describing: push)) to \(token): \(outcome)")
            }
        }
        #expect(book.activities.count == 1)
    }

    /// A start needs `attributes-type` and `attributes` ("Construct the payload that starts a Live
    /// Activity"); with `input-push-channel` the activity listens on the channel (iOS 18), and on an
    /// older iOS such a start starts nothing.
    @Test func aStartNeedsItsAttributesAndAChannelStartNeedsIOS18() {
        func book(ios: Int) -> LiveActivityBook {
            var book = LiveActivityBook(iosVersion: ios)
            book.pushToStartToken(start, bundleID: "com.example.scores", attributesType: "GameAttributes")
            return book
        }
        var ios18 = book(ios: 18)
        let needs = LiveActivityBook.Outcome.notApplied(reason: "a start needs attributes-type and attributes")
        for push in [
            LiveActivityPush(event: .start, timestamp: now, attributesType: "GameAttributes"),
            LiveActivityPush(event: .start, timestamp: now, attributes: #"{"match":"A-B"}"#),
        ] {
            #expect(ios18.received(push, token: start, now: now, newID: { "x" }) == needs)
        }
        #expect(ios18.activities.isEmpty)
        let onChannel = LiveActivityPush(
            event: .start, timestamp: now, contentState: #"{"home":0}"#, attributesType: "GameAttributes",
            attributes: #"{"match":"A-B"}"#, inputPushChannel: "Y2hhbm5lbA==")
        #expect(
            ios18.received(onChannel, token: start, now: now, newID: { "game-2" })
                == .startedOnChannel(activityID: "game-2", bundleID: "com.example.scores", channel: "Y2hhbm5lbA=="))
        #expect(ios18.activities["game-2"]?.channel == "Y2hhbm5lbA==")
        #expect(
            ios18.receivedBroadcast(
                LiveActivityPush(event: .update, timestamp: now + 1, contentState: #"{"home":1}"#),
                channel: "Y2hhbm5lbA==", now: now + 1) == [.updated(activityID: "game-2")])
        var ios17 = book(ios: 17)
        #expect(
            ios17.received(onChannel, token: start, now: now, newID: { "game-3" })
                == .notApplied(reason: "input-push-channel needs iOS 18 (this device runs iOS 17)"))
        #expect(ios17.activities.isEmpty)
    }

    /// An activity started on a broadcast channel takes the channel's broadcasts as updates (in timestamp
    /// order, none after its end); a broadcast cannot start one, and one on another channel is not applied.
    @Test func aChannelsBroadcastsUpdateTheActivitiesStartedOnIt() {
        var book = LiveActivityBook()
        book.startOnChannel(
            id: "match-1", bundleID: "com.example.scores", attributesType: "MatchAttributes", channel: "Y2g=",
            contentState: #"{"home":0}"#)
        book.startOnChannel(
            id: "match-2", bundleID: "com.example.scores", attributesType: "MatchAttributes", channel: "Y2g=",
            contentState: nil)
        #expect(
            book.receivedBroadcast(
                LiveActivityPush(event: .update, timestamp: now, contentState: #"{"home":1}"#), channel: "Y2g=",
                now: now) == [.updated(activityID: "match-1"), .updated(activityID: "match-2")])
        #expect(
            book.receivedBroadcast(LiveActivityPush(event: .update, timestamp: now - 1), channel: "Y2g=", now: now)
                == [.ignoredOlder(activityID: "match-1"), .ignoredOlder(activityID: "match-2")])
        #expect(
            book.receivedBroadcast(LiveActivityPush(event: .start, timestamp: now + 1), channel: "Y2g=", now: now)
                == [.notApplied(reason: "a broadcast cannot start a Live Activity")])
        #expect(
            book.receivedBroadcast(LiveActivityPush(event: .update, timestamp: now + 1), channel: "b3Q=", now: now)
                == [.notApplied(reason: "no Live Activity is on channel b3Q=")])
        #expect(
            book.receivedBroadcast(LiveActivityPush(event: .end, timestamp: now + 2), channel: "Y2g=", now: now + 2)
                == [.ended(activityID: "match-1"), .ended(activityID: "match-2")])
        #expect(
            book.receivedBroadcast(LiveActivityPush(event: .update, timestamp: now + 3), channel: "Y2g=", now: now + 3)
                == [.ignoredEnded(activityID: "match-1"), .ignoredEnded(activityID: "match-2")])
        #expect(book.activities["match-1"]?.contentState == #"{"home":1}"#)
        #expect(book.activities["match-1"]?.updatesApplied == 2)
    }
}
