import NIOCore
import PushModel

/// Why a channel was not created.
public enum ChannelRefusal: Error, Equatable, Sendable {
    /// The app has as many live channels as it may (Apple: 400 `CannotCreateChannelConfig`).
    case limitReached
}

/// The gateway's broadcast channels as the channel-management API sees them (the device hub keeps them;
/// neither imports the other). A change's future succeeds on the given loop once it is stored.
public protocol ChannelDirectory: Sendable {
    func create(
        bundleID: String, policy: MessageStoragePolicy, now: UnixTime, answeringOn eventLoop: any EventLoop
    ) -> Result<(BroadcastChannel, EventLoopFuture<Void>), ChannelRefusal>
    /// A live channel of the app (nil: none, deleted, or another app's).
    func channel(_ id: ChannelID, bundleID: String) -> BroadcastChannel?
    /// The app's live channels, in creation order.
    func channels(of bundleID: String) -> [BroadcastChannel]
    /// Deletes a live channel of the app; nil when there is none.
    func delete(_ id: ChannelID, bundleID: String, now: UnixTime, answeringOn eventLoop: any EventLoop)
        -> EventLoopFuture<Void>?
}
