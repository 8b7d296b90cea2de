import DeviceProtocol
import PushModel

/// What the content server offers: numbered versions, each published at a time with one item of a
/// given size. Pure: the server asks it what to answer, and tells it when a version is published.
public struct ContentCatalog: Sendable {
    public struct Version: Sendable, Equatable, Codable {
        public var version: Int
        public var publishedAt: Int64
        public var bytes: Int

        enum CodingKeys: String, CodingKey {
            case version
            case publishedAt = "published_at"
            case bytes
        }
    }

    /// Every version published, oldest first (kept: the freshness report reads their publish times).
    public private(set) var versions: [Version] = []

    public init() {}

    public var newest: Version? { versions.last }

    /// Publishes the next version now, with an item of `bytes`.
    @discardableResult
    public mutating func publish(at now: UnixTime, bytes: Int) -> Version {
        let version = Version(version: (newest?.version ?? 0) + 1, publishedAt: now.milliseconds, bytes: bytes)
        versions.append(version)
        return version
    }

    public func version(_ number: Int) -> Version? {
        guard number >= 1, number <= versions.count else { return nil }
        return versions[number - 1]
    }

    /// The manifest: the newest version and where its item is.
    public var manifestJSON: String {
        guard let newest else { return #"{"version":0}"# }
        return ContentManifest.json(version: newest.version, publishedAt: newest.publishedAt, bytes: newest.bytes)
    }

    /// Byte `offset` of version `version`'s item: a pattern that differs per version, so a resumed
    /// download that joined two versions would show.
    @inlinable
    public static func byte(_ offset: Int, of version: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: offset &* 31 &+ version &* 7 &+ (offset >> 12))
    }
}
