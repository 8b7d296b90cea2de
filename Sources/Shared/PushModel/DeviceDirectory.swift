import Synchronization

/// What the gateway knows about a device token.
public enum TokenStatus: Equatable, Sendable {
    /// The token belongs to an installed app with this bundle id.
    case active(bundleID: String)
    /// The app was uninstalled (410 Unregistered) at this time.
    case unregistered(bundleID: String, since: UnixTime)
    /// The token expired (410 ExpiredToken) at this time.
    case expired(bundleID: String, since: UnixTime)

    public var bundleID: String {
        switch self {
        case .active(let id), .unregistered(let id, _), .expired(let id, _): return id
        }
    }

    /// The directory's answer for a push to `bundleID`: `nil` when the token may receive it.
    public func rejection(forBundleID requested: String) -> Rejection? {
        switch self {
        case .active(let id):
            return id == requested ? nil : Rejection(.deviceTokenNotForTopic)
        case .unregistered(let id, let since):
            return id == requested
                ? Rejection(.unregistered, timestampMilliseconds: since.milliseconds)
                : Rejection(.deviceTokenNotForTopic)
        case .expired(let id, let since):
            return id == requested
                ? Rejection(.expiredToken, timestampMilliseconds: since.milliseconds)
                : Rejection(.deviceTokenNotForTopic)
        }
    }
}

/// Looks up device tokens on the provider hot path. The device hub issues tokens; until then (and for
/// scripting) they are registered by command.
public protocol DeviceDirectory: Sendable {
    func status(of token: DeviceToken) -> TokenStatus?
}

/// A device directory held in memory.
public final class InMemoryDeviceDirectory: DeviceDirectory {
    private let entries: Mutex<[DeviceToken: TokenStatus]>

    public init(_ entries: [DeviceToken: TokenStatus] = [:]) {
        self.entries = Mutex(entries)
    }

    public func status(of token: DeviceToken) -> TokenStatus? {
        entries.withLock { $0[token] }
    }

    public func set(_ status: TokenStatus, for token: DeviceToken) {
        entries.withLock { $0[token] = status }
    }

    public func replaceAll(_ newEntries: [DeviceToken: TokenStatus]) {
        entries.withLock { $0 = newEntries }
    }

    public var snapshot: [DeviceToken: TokenStatus] { entries.withLock { $0 } }
}
