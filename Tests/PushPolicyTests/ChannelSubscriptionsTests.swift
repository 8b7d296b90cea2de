import PushModel
import Testing

@testable import PushPolicy

/// The subscriptions and cursors of broadcast channels, with plain instants.
@Suite struct ChannelSubscriptionsTests {
    let channel = ChannelID("Y2hhbm5lbC1vbmU=")!
    let other = ChannelID("b3RoZXI=")!

    func message(
        _ sequence: Int64, on channel: ChannelID? = nil, until: Int64 = 60_000, expiration: Expiration = .storeByDefault
    ) -> BroadcastMessage {
        let push = PushNotification(
            id: APNsID.generate(), deviceToken: DeviceToken(String(repeating: "0", count: 64))!,
            topic: Topic("com.example.app.push-type.liveactivity")!, bundleID: "com.example.app",
            pushType: .liveactivity,
            priority: .immediate, expiration: expiration, collapseID: nil, notificationClass: .other,
            payload: Array(#"{"aps":{"event":"update","timestamp":1}}"#.utf8), teamID: "TEAM", receivedAt: t0,
            broadcast: BroadcastStamp(channel: channel ?? self.channel, sequence: sequence))
        return BroadcastMessage(push: push, deliverableUntil: UnixTime(milliseconds: t0.milliseconds + until))
    }

    @Test func connectedSubscribersAreGivenEachBroadcastOnce() {
        var book = ChannelSubscriptions()
        let r1 = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        #expect(r1?.deliver == nil)
        let r2 = book.subscribe(2, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        #expect(r2 != nil)
        let r3 = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        #expect(r3 == nil, "already subscribed")
        let first = message(10)
        #expect(Set(book.published(first)) == [1, 2])
        let r4 = book.fanOut(first, to: 1, connected: true)
        #expect(r4)
        let r5 = book.fanOut(first, to: 1, connected: true)
        #expect(!r5, "given once")
        let r6 = book.fanOut(first, to: 2, connected: false)
        #expect(!r6, "offline: caught up when it connects")
        let r7 = book.fanOut(first, to: 3, connected: true)
        #expect(!r7, "not a subscriber")
        let r8 = book.acknowledged(first.stamp, by: 1)
        #expect(r8)
        let r9 = book.acknowledged(first.stamp, by: 1)
        #expect(!r9, "a repeated ack moves nothing")
        let r10 = book.caughtUp(1, now: t0)
        #expect(r10.isEmpty, "acknowledged already")
        let r11 = book.caughtUp(2, now: t0)
        #expect(r11 == [first])
        let r12 = book.caughtUp(2, now: t0)
        #expect(r12.isEmpty, "written once")
    }

    @Test func movedCursorsAreTakenOnceEachForTheStore() {
        var book = ChannelSubscriptions()
        _ = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        _ = book.subscribe(1, to: other, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        _ = book.subscribe(2, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        #expect(book.takeCursors().isEmpty, "nothing acknowledged")
        for sequence: Int64 in [10, 11] {
            let sent = message(sequence)
            _ = book.published(sent)
            for device: DeviceSlot in [1, 2] { _ = book.acknowledged(sent.stamp, by: device) }
        }
        _ = book.acknowledged(message(5, on: other).stamp, by: 1)
        #expect(book.unstoredCount == 2)
        let cursors1 = book.takeCursors(of: 2)
        #expect(cursors1 == [.init(device: 2, channel: channel, acknowledged: 11)], "a session's end: the newest only")
        let cursors2 = Set(book.takeCursors().map { "\($0.device) \($0.channel.value) \($0.acknowledged)" })
        #expect(cursors2 == ["1 \(channel.value) 11", "1 \(other.value) 5"])
        #expect(book.takeCursors().isEmpty, "taken once")
        _ = book.acknowledged(message(12).stamp, by: 1)
        _ = book.unsubscribe(1, from: channel)
        #expect(book.takeCursors().isEmpty, "an ended subscription's cursor is not stored")
        _ = book.acknowledged(message(6, on: other).stamp, by: 1)
        book.forget(1)
        let cursors3 = book.takeCursors()
        #expect(cursors3 == [.init(device: 1, channel: other, acknowledged: 6)], "stored even once forgotten here")
    }

    @Test func onlyTheNewestMessageIsGivenToADeviceThatComesBack() {
        var book = ChannelSubscriptions()
        _ = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        _ = book.published(message(10))
        _ = book.published(message(20))
        _ = book.published(message(15))
        #expect(book.newest(on: channel)?.sequence == 20, "a late older message is not the newest")
        let r13 = book.caughtUp(1, now: t0)
        #expect(r13.map(\.sequence) == [20])
    }

    @Test func aMessagePastItsTimeIsNotGivenToADeviceThatComesBack() {
        var book = ChannelSubscriptions()
        _ = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        _ = book.published(message(10, until: 5_000))
        let r14 = book.caughtUp(1, now: t0.adding(seconds: 6))
        #expect(r14.isEmpty)
        // Subscribing after it (on a channel that stores nothing): not given either, and its cursor
        // starts past it.
        let late = book.subscribe(
            2, to: channel, bundleID: "com.example.app", storage: .noMessageStored, now: t0.adding(seconds: 6))
        #expect(late?.deliver == nil)
        #expect(late?.subscription.acknowledged == 10)
    }

    @Test func aSubscriberIsGivenTheStoredMessageWhenItSubscribes() {
        var book = ChannelSubscriptions()
        _ = book.published(message(10))
        let subscribed = book.subscribe(
            1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0.adding(seconds: 1))
        #expect(subscribed?.deliver?.sequence == 10)
        let r15 = book.caughtUp(1, now: t0.adding(seconds: 1))
        #expect(r15.isEmpty, "already written")
    }

    /// A channel that stores nothing, or a message sent with `apns-expiration: 0` (one attempt), is never
    /// given to a device that subscribes after it was broadcast, however soon (issue 51); the reconnect
    /// grace is for a subscriber it was broadcast to. A stored message goes to a new subscriber until its
    /// `apns-expiration`.
    @Test func aNewSubscriberIsGivenOnlyAMessageTheChannelStores() {
        let grace: Int64 = 60_000
        for (storage, expiration) in [
            (MessageStoragePolicy.noMessageStored, Expiration.storeByDefault),
            (.mostRecentMessageStored, .immediateOnly),
        ] {
            var book = ChannelSubscriptions()
            _ = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: storage, now: t0)
            let sent = message(10, until: grace, expiration: expiration)
            _ = book.published(sent)
            let written = book.fanOut(sent, to: 1, connected: false)
            #expect(!written, "its connection was lost mid-fan-out")
            let late = book.subscribe(
                2, to: channel, bundleID: "com.example.app", storage: storage, now: t0.adding(seconds: 1))
            #expect(late?.deliver == nil, "\(storage), \(expiration): a new subscriber is not given it")
            #expect(late?.subscription.acknowledged == 10)
            let second = book.caughtUp(2, now: t0.adding(seconds: 2))
            #expect(second.isEmpty, "nor when it connects")
            let first = book.caughtUp(1, now: t0.adding(seconds: 2))
            #expect(first.map(\.sequence) == [10], "the grace covers device 1")
        }
        var book = ChannelSubscriptions()
        _ = book.published(message(10, expiration: .at(unixSeconds: t0.seconds + 10)))
        let within = book.subscribe(
            1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0.adding(seconds: 5))
        #expect(within?.deliver?.sequence == 10)
        let after = book.subscribe(
            2, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0.adding(seconds: 11))
        #expect(after?.deliver == nil, "past its apns-expiration")
    }

    @Test func adoptedCursorsDecideWhatIsCaughtUp() {
        var book = ChannelSubscriptions()
        book.remember(message(10))
        book.remember(message(5, on: other))
        book.adopt(
            7,
            [
                channel: .init(bundleID: "com.example.app", acknowledged: 9),
                other: .init(bundleID: "com.example.app", acknowledged: 5),
            ])
        #expect(book.subscriberCount(of: channel) == 1)
        let r16 = book.caughtUp(7, now: t0)
        #expect(r16.map(\.sequence) == [10])
        book.forget(7)
        #expect(book.subscriberCount(of: channel) == 0)
        #expect(book.subscriptionCount == 0)
        let r17 = book.published(message(11))
        #expect(r17.isEmpty)
    }

    @Test func unsubscribingStopsTheFanOut() {
        var book = ChannelSubscriptions()
        _ = book.subscribe(1, to: channel, bundleID: "com.example.app", storage: .mostRecentMessageStored, now: t0)
        let r18 = book.unsubscribe(1, from: channel)
        #expect(r18)
        let r19 = book.unsubscribe(1, from: channel)
        #expect(!r19)
        let r20 = book.published(message(10))
        #expect(r20.isEmpty)
        let r21 = book.fanOut(message(10), to: 1, connected: true)
        #expect(!r21)
    }

    @Test func deliverableTimesFollowTheStoragePolicy() {
        let at = UnixTime(milliseconds: 1_000_000)
        let grace: Int64 = 60_000
        #expect(
            BroadcastMessage.deliverableUntil(
                policy: .noMessageStored, expiration: .immediateOnly, acceptedAt: at, graceMilliseconds: grace
            ).milliseconds == 1_060_000)
        #expect(
            BroadcastMessage.deliverableUntil(
                policy: .mostRecentMessageStored, expiration: .storeByDefault, acceptedAt: at, graceMilliseconds: grace
            ).milliseconds == 1_000_000 + 8 * 3_600_000)
        #expect(
            BroadcastMessage.deliverableUntil(
                policy: .mostRecentMessageStored, expiration: .at(unixSeconds: 2_000), acceptedAt: at,
                graceMilliseconds: grace
            ).milliseconds == 2_000_000)
        #expect(
            BroadcastMessage.deliverableUntil(
                policy: .mostRecentMessageStored, expiration: .immediateOnly, acceptedAt: at, graceMilliseconds: grace
            ).milliseconds == 1_060_000)
    }
}
