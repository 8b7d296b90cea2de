import Foundation
import NIOCore
import PushIntake
import PushModel
import PushStore
import Synchronization

/// The gateway's broadcast channels (docs/live-activities.md): created for an app with a message storage
/// policy, read, listed and deleted through the channel-management API, at most `limit` live ones per
/// app. Every change is written to the store (and told to the other nodes) before it is answered; a
/// deleted channel stays known, so its id is never issued again and broadcasts to it are refused.
public final class ChannelRegistry: ChannelDirectory {
    private struct State {
        var channels: [ChannelID: BroadcastChannel] = [:]
        /// Live channels by app, in creation order.
        var live: [String: [ChannelID]] = [:]
    }

    private let state = Mutex(State())
    private let writer: StoreWriter?
    private let nodeID: String?
    /// Live channels an app may have at once (Apple: 10,000 per app and environment).
    public let limit: Int

    public init(writer: StoreWriter? = nil, nodeID: String? = nil, limit: Int = 10_000) {
        self.writer = writer
        self.nodeID = nodeID
        self.limit = limit
    }

    /// Brings the channels back from the store.
    public func restore(_ stored: [StoredChannel]) {
        for channel in stored { apply(channel) }
    }

    /// A channel created or deleted on another node (or read back at start).
    public func apply(_ stored: StoredChannel) {
        guard let id = ChannelID(stored.id), let policy = MessageStoragePolicy(rawValue: stored.storagePolicy) else {
            return
        }
        let channel = BroadcastChannel(
            id: id, bundleID: stored.bundleID, storagePolicy: policy, createdAt: stored.createdAt,
            deletedAt: stored.deletedAt)
        state.withLock { state in
            let before = state.channels.updateValue(channel, forKey: id)
            let wasLive = before != nil && before?.deletedAt == nil
            if channel.deletedAt == nil, !wasLive { state.live[channel.bundleID, default: []].append(id) }
            if channel.deletedAt != nil, wasLive { state.live[channel.bundleID]?.removeAll { $0 == id } }
        }
    }

    /// Creates a channel for `bundleID`; the future succeeds on `eventLoop` once it is stored.
    public func create(
        bundleID: String, policy: MessageStoragePolicy, now: UnixTime, answeringOn eventLoop: any EventLoop
    ) -> Result<(BroadcastChannel, EventLoopFuture<Void>), ChannelRefusal> {
        state.withLock { state in
            guard state.live[bundleID, default: []].count < limit else { return .failure(.limitReached) }
            var id: ChannelID
            repeat { id = Self.newID() } while state.channels[id] != nil
            let channel = BroadcastChannel(id: id, bundleID: bundleID, storagePolicy: policy, createdAt: now)
            state.channels[id] = channel
            state.live[bundleID, default: []].append(id)
            return .success((channel, write(channel, answeringOn: eventLoop)))
        }
    }

    /// A live channel of `bundleID` (nil: none, deleted, or another app's).
    public func channel(_ id: ChannelID, bundleID: String) -> BroadcastChannel? {
        state.withLock { state in
            guard let channel = state.channels[id], channel.bundleID == bundleID, channel.deletedAt == nil else {
                return nil
            }
            return channel
        }
    }

    /// The app's live channels, in creation order.
    public func channels(of bundleID: String) -> [BroadcastChannel] {
        state.withLock { state in state.live[bundleID, default: []].compactMap { state.channels[$0] } }
    }

    /// Deletes a live channel of `bundleID`; nil when there is none. The future succeeds once stored.
    public func delete(
        _ id: ChannelID, bundleID: String, now: UnixTime, answeringOn eventLoop: any EventLoop
    ) -> EventLoopFuture<Void>? {
        state.withLock { state in
            guard var channel = state.channels[id], channel.bundleID == bundleID, channel.deletedAt == nil else {
                return nil
            }
            channel.deletedAt = now
            state.channels[id] = channel
            state.live[bundleID]?.removeAll { $0 == id }
            return write(channel, answeringOn: eventLoop)
        }
    }

    /// Live channels across every app.
    public var liveCount: Int { state.withLock { $0.live.values.reduce(0) { $0 + $1.count } } }

    /// Posts the channel's change under the registry's lock (so a channel's changes reach the store in
    /// the order they happened); the writer's queue is memory, not I/O.
    private func write(_ channel: BroadcastChannel, answeringOn eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        guard let writer else { return eventLoop.makeSucceededVoidFuture() }
        let stored = StoredChannel(
            id: channel.id.value, bundleID: channel.bundleID, storagePolicy: channel.storagePolicy.rawValue,
            createdAt: channel.createdAt, deletedAt: channel.deletedAt)
        let nodeID = nodeID
        return writer.enqueue(answeringOn: eventLoop) { batch in
            batch.channels.append(stored)
            if nodeID != nil { batch.notices.append(.channel(stored)) }
        }
    }

    /// 16 random bytes in standard base64 (Apple's ids are base64 of a size not to assume).
    private static func newID() -> ChannelID {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return ChannelID(Data(bytes).base64EncodedString())!
    }
}
