import DeviceProtocol
import Logging
import NIOCore
import PushIntake
import PushModel
import PushPolicy
import PushStore
import Synchronization

/// Broadcast channels on the device side (docs/live-activities.md): devices subscribe their activities
/// to channels; a broadcast is stored once, then fanned out to the subscribers each node runs, a slice
/// at a time so that other pushes go between slices; a device's acknowledgement moves its cursor, and a
/// device that comes back (to this node or another) is given its channels' newest message past it.
extension DeviceHub: BroadcastIntake {
    /// Subscribers given a broadcast under one taking of the hub's lock (about 2 ms), before the loop runs
    /// other work. Measured at 10,000 subscribers (`Benchmarks/broadcast.sh`): 256 a slice made the last
    /// write 470–496 ms after the commit, 2,048 343 ms — between slices the loop reads the acks of the
    /// devices already written to, and a small slice waits behind them.
    /// Slices of 256 (with the pause below) measured no better for a unicast's p99 during fan-outs
    /// (18.8 / 46.1 / 59.1 ms against 90.1 / 19.1 / 8.1 with slices of 2,048, alternated: within this
    /// machine's noise) and were slower to the last acknowledgement.
    static let fanoutSlice = 2048
    /// How far ahead the next slice is scheduled: enough for the loop to poll its sockets in between.
    static let fanoutPause = TimeAmount.microseconds(20)

    public enum SubscriptionRefusal: Error, Equatable {
        case notInstalled
        case unknownChannel
    }

    /// An app's activity on the device subscribes to a channel of that app (`subscribe_channel`): the
    /// future succeeds once the subscription is stored (nil: no store). The channel's newest message, if
    /// still deliverable, is given to it at once.
    func subscribe(
        _ device: DeviceSlot, bundleID: String, channel id: ChannelID, answeringOn eventLoop: any EventLoop
    ) -> Result<EventLoopFuture<Void>?, SubscriptionRefusal> {
        guard registry.apps(of: device).contains(where: { $0.bundleID == bundleID }) else {
            return .failure(.notInstalled)
        }
        guard let channel = channels.channel(id, bundleID: bundleID) else { return .failure(.unknownChannel) }
        guard let deviceID = registry.deviceID(of: device) else { return .failure(.notInstalled) }
        let now = clock()
        var writes: [HubWrite] = []
        // Decided and posted under the lock, in order with the rest (the store has the subscription before
        // any cursor of it); handed to the writer after unlocking, as every change is.
        let posted = core.withLock { core -> UInt64? in
            let subscription = core.subscribe(
                device, to: id, bundleID: bundleID, storage: channel.storagePolicy, now: now, writes: &writes)
            guard writer != nil else { return nil }
            var change = StoreChange<any EventLoop>(answer: eventLoop)
            change.subscribing = subscription.map {
                StoredSubscription(
                    deviceID: deviceID, channelID: id.value, bundleID: bundleID, acknowledged: $0.acknowledged)
            }
            return core.post(change)
        }
        let stored = posted.flatMap { enqueuePosted(upTo: $0) }
        write(writes)
        return .success(stored)
    }

    /// The activity on the channel ended (`unsubscribe_channel`): false if it was not subscribed.
    @discardableResult
    func unsubscribe(_ device: DeviceSlot, channel id: ChannelID) -> Bool {
        guard let deviceID = registry.deviceID(of: device) else { return false }
        let posted = core.withLock { core -> UInt64?? in
            guard core.broadcasts.unsubscribe(device, from: id) else { return nil }
            guard writer != nil else { return .some(nil) }
            var change = StoreChange<any EventLoop>()
            change.unsubscribing = SubscriptionKey(deviceID: deviceID, channelID: id.value)
            return core.post(change)
        }
        guard let posted else { return false }
        if let posted { _ = enqueuePosted(upTo: posted) }
        return true
    }

    /// An app uninstalled: its activities' subscriptions end.
    func unsubscribeAll(_ device: DeviceSlot, bundleID: String) {
        let channels = core.withLock { core in
            core.broadcasts.subscriptions(of: device).filter { $0.value.bundleID == bundleID }.map(\.key)
        }
        for channel in channels { unsubscribe(device, channel: channel) }
    }

    /// The device's subscriptions.
    public func subscriptions(of device: DeviceSlot) -> [ChannelID: ChannelSubscriptions.Subscription] {
        core.withLock { $0.broadcasts.subscriptions(of: device) }
    }

    // MARK: From the provider API

    public func broadcast(_ submission: BroadcastSubmission, on eventLoop: any EventLoop) -> IntakeReply {
        let now = clock()
        let channel = submission.channel
        let sequence = core.withLock { core in
            core.counters.broadcastsAccepted += 1
            return core.sequencer.next(at: now)
        }
        let stamp = BroadcastStamp(channel: channel.id, sequence: sequence)
        let push = PushNotification(
            id: submission.id, deviceToken: BroadcastMessage.noDevice,
            topic: Topic(channel.bundleID + (PushType.liveactivity.topicSuffix ?? ""))!, bundleID: channel.bundleID,
            pushType: .liveactivity, priority: submission.priority, expiration: submission.expiration, collapseID: nil,
            notificationClass: .other, payload: submission.payload, teamID: submission.teamID, receivedAt: now,
            broadcast: stamp)
        let message = BroadcastMessage(
            push: push,
            deliverableUntil: BroadcastMessage.deliverableUntil(
                policy: channel.storagePolicy, expiration: submission.expiration, acceptedAt: now,
                graceMilliseconds: settings.broadcastGraceSeconds * 1000))
        guard let writer else {
            publish(message, on: eventLoop)
            return .now(.accepted)
        }
        let clustered = cluster != nil
        let committed = writer.enqueue(answeringOn: eventLoop) { batch in
            batch.broadcasts.append(StoredBroadcast(message))
            if clustered {
                batch.notices.append(.broadcast(BroadcastKey(channelID: channel.id.value, sequence: sequence)))
            }
        }
        committed.whenSuccess { [self] in publish(message, on: eventLoop) }
        return .afterCommit(committed)
    }

    /// A stored broadcast (accepted here, or heard of from another node): kept as its channel's newest,
    /// and fanned out to the subscribers this node runs — a slice per task on `eventLoop`, so that the
    /// hub's lock and the loop are let go between slices. Once per broadcast on a node.
    func publish(_ message: BroadcastMessage, on eventLoop: any EventLoop) {
        guard let subscribers = published(message) else { return }
        fanOut(message, to: subscribers, from: 0, on: eventLoop)
    }

    /// The subscribers to fan `message` out to; nil when this node has had it already.
    private func published(_ message: BroadcastMessage) -> [DeviceSlot]? {
        guard withAdopted({ $0.insert(message.push.id) }) else { return nil }
        broadcastFigures.started(message.stamp, id: message.push.id)
        return core.withLock { $0.broadcasts.published(message) }
    }

    /// Each slice in a task of its own on `eventLoop` (a provider connection's), scheduled a moment
    /// ahead (`fanoutPause`) rather than queued: NIO runs every task due before it polls its sockets
    /// again, so slices queued one after another would hold the loop's reads and writes — unicasts' POSTs,
    /// acknowledgements — until the whole fan-out is written.
    private func fanOut(
        _ message: BroadcastMessage, to subscribers: [DeviceSlot], from start: Int, on eventLoop: any EventLoop
    ) {
        let end = fanOutSlice(message, to: subscribers, from: start)
        guard end < subscribers.count else { return }
        eventLoop.scheduleTask(in: Self.fanoutPause) { [self] in
            fanOut(message, to: subscribers, from: end, on: eventLoop)
        }
    }

    /// Gives one slice of the subscribers the message; where the next slice starts.
    private func fanOutSlice(_ message: BroadcastMessage, to subscribers: [DeviceSlot], from start: Int) -> Int {
        let end = min(subscribers.count, start + Self.fanoutSlice)
        let now = clock()
        var writes: [HubWrite] = []
        core.withLock { $0.fanOut(message, to: subscribers[start..<end], now: now, writes: &writes) }
        write(writes)
        broadcastFigures.wrote(writes.count, of: message.stamp, finished: end >= subscribers.count)
        return end
    }

    /// The device acknowledged a broadcast: the fan-out's figures count it; its cursor moved in memory
    /// is stored with the others every `broadcastCursorStoreSeconds` (at once when that is 0).
    func acknowledgedBroadcast(_ stamp: BroadcastStamp, by device: DeviceSlot, cursorMoved: Bool) {
        core.withLock { $0.counters.broadcastsDelivered += 1 }
        broadcastFigures.acknowledged(stamp)
        guard cursorMoved, settings.broadcastCursorStoreSeconds == 0 else { return }
        store(core.withLock { $0.broadcasts.takeCursors(of: device) })
    }

    /// Every moved cursor, when `broadcastCursorStoreSeconds` have passed (the hub's tick).
    func storeCursors(now: UnixTime) {
        guard settings.broadcastCursorStoreSeconds > 0,
            core.withLock({ $0.checks.due(\.cursorStore, every: settings.broadcastCursorStoreSeconds * 1000, now: now) }
            )
        else { return }
        store(core.withLock { $0.broadcasts.takeCursors() })
    }

    /// Cursors taken from the subscriptions, in one change of the store (those of devices no longer
    /// registered are dropped).
    func store(_ cursors: [ChannelSubscriptions.Cursor]) {
        guard let writer, !cursors.isEmpty else { return }
        let keyed = cursors.compactMap { cursor -> (SubscriptionKey, Int64)? in
            guard let deviceID = registry.deviceID(of: cursor.device) else { return nil }
            return (SubscriptionKey(deviceID: deviceID, channelID: cursor.channel.value), cursor.acknowledged)
        }
        guard !keyed.isEmpty else { return }
        writer.enqueue { batch in for (key, sequence) in keyed { batch.advance(key, to: sequence) } }
    }

    /// The store's subscriptions of a device this node runs now (at start, or claimed).
    func adoptSubscriptions(_ device: DeviceSlot, _ stored: [StoredSubscription]) {
        var subscriptions: [ChannelID: ChannelSubscriptions.Subscription] = [:]
        for row in stored {
            guard let channel = ChannelID(row.channelID) else { continue }
            subscriptions[channel] = .init(bundleID: row.bundleID, acknowledged: row.acknowledged)
        }
        core.withLock { $0.broadcasts.adopt(device, subscriptions) }
    }

    /// Each channel's newest broadcast from the store (at start).
    func remember(_ broadcasts: [StoredBroadcast]) {
        let messages = broadcasts.compactMap(\.message)
        core.withLock { core in for message in messages { core.broadcasts.remember(message) } }
    }

    /// Broadcasts other nodes stored: loaded, then fanned out here.
    func heardBroadcasts(_ keys: [BroadcastKey]) {
        guard let cluster, !keys.isEmpty else { return }
        spawn { [self] in
            do {
                for stored in try await cluster.broadcasts(keys) {
                    guard let message = stored.message else { continue }
                    core.withLock { $0.counters.broadcastsHeard += 1 }
                    guard let subscribers = published(message) else { continue }
                    var next = 0
                    repeat {
                        next = fanOutSlice(message, to: subscribers, from: next)
                        await Task.yield()
                    } while next < subscribers.count
                }
            } catch {
                logger.error("broadcasts not loaded", metadata: ["count": "\(keys.count)", "error": "\(error)"])
            }
        }
    }
}
