/// A broadcast channel's id: Apple's `apns-channel-id`, "a base64-encoded string that identifies the
/// channel", generated at random when the channel is created ("don't make assumptions on the channel ID
/// size"). Pushgate issues 16 random bytes in standard base64 (the channel registry makes them); it reads
/// any well-formed base64 of 1 to
/// `maximumBytes` bytes, and answers anything else 400 `BadChannelId` (docs/live-activities.md).
public struct ChannelID: Hashable, Sendable, CustomStringConvertible {
    public let value: String
    public static let maximumBytes = 64

    /// A header's value, if it is well-formed base64 of an allowed length.
    public init?(_ text: String) {
        let utf8 = Array(text.utf8)
        guard !utf8.isEmpty, utf8.count % 4 == 0, utf8.count <= (Self.maximumBytes + 2) / 3 * 4 else { return nil }
        var padding = 0
        for (index, byte) in utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "/"):
                guard padding == 0 else { return nil }
            case UInt8(ascii: "="):
                // At most two, only at the end.
                guard index >= utf8.count - 2 else { return nil }
                padding += 1
            default: return nil
            }
        }
        value = text
    }

    public var description: String { value }
}

/// A channel's message storage policy, fixed at creation: `0` No Message Stored (a higher publishing
/// budget, for frequent updates), `1` Most Recent Message Stored (kept at most 8 hours, or until its
/// `apns-expiration`, for devices that subscribe or come back later).
public enum MessageStoragePolicy: Int, Sendable, Codable, CaseIterable {
    case noMessageStored = 0
    case mostRecentMessageStored = 1
}

/// A broadcast channel of an app (its bundle id) in this gateway's environment.
public struct BroadcastChannel: Sendable, Equatable {
    public var id: ChannelID
    public var bundleID: String
    public var storagePolicy: MessageStoragePolicy
    public var createdAt: UnixTime
    /// When it was deleted (an id is never issued again; a deleted channel refuses broadcasts).
    public var deletedAt: UnixTime?

    public init(
        id: ChannelID, bundleID: String, storagePolicy: MessageStoragePolicy, createdAt: UnixTime,
        deletedAt: UnixTime? = nil
    ) {
        self.id = id
        self.bundleID = bundleID
        self.storagePolicy = storagePolicy
        self.createdAt = createdAt
        self.deletedAt = deletedAt
    }
}
