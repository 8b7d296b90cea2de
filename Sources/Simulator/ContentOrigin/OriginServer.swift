import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import PushModel
import Synchronization

/// The content server simulated apps fetch from (`pushgate origin`, and the one `pushgate demo` runs):
/// HTTP/1.1 on loopback.
///
/// - `GET /manifest`: the newest version (`ContentCatalog.manifestJSON`).
/// - `GET /items/<n>`: version n's item; `Range: bytes=<from>-` resumes it (206).
/// - `?bytes=<n>` on an item: its size, when an app's content is not the server's default size (a
///   podcast episode beside a news edition).
/// - `?slowdown=<k>` on an item: sent k times slower than the link rate (a background session, R9 of
///   docs/device-runtime.md); without a link rate it makes no difference.
/// - `POST /publish`: publishes a version now (a scenario, or a test).
/// - `GET /log`: what each device fetched (`x-device-id`) and when, as JSON.
public final class OriginServer: Sendable {
    public struct Settings: Sendable {
        public var host = "127.0.0.1"
        public var port = 0
        /// Size of each version's item.
        public var itemBytes = 200_000
        /// Bytes per second each response is sent at; 0: as fast as the connection takes them.
        public var linkBytesPerSecond = 0
        public init() {}
    }

    public let settings: Settings
    public let log = FetchLog()
    let catalog = Mutex(ContentCatalog())
    private let channel = Mutex<(any Channel)?>(nil)
    private let group: any EventLoopGroup
    let clock: @Sendable () -> UnixTime
    private let published: @Sendable (ContentCatalog.Version) -> Void

    /// `published` is called for each version published (the scenario announces it with pushes).
    public init(
        settings: Settings, group: any EventLoopGroup, clock: @escaping @Sendable () -> UnixTime,
        published: @escaping @Sendable (ContentCatalog.Version) -> Void = { _ in }
    ) {
        self.settings = settings
        self.group = group
        self.clock = clock
        self.published = published
    }

    public var boundPort: Int? { channel.withLock { $0?.localAddress?.port } }

    /// While held, items' bodies stop between chunks (a stalled origin: the transfers stay open and go
    /// on when released).
    private let holding = Mutex(false)
    public func holdItems(_ hold: Bool) { holding.withLock { $0 = hold } }
    var itemsHeld: Bool { holding.withLock { $0 } }
    public var versions: [ContentCatalog.Version] { catalog.withLock { $0.versions } }

    @discardableResult
    public func publish() -> ContentCatalog.Version {
        let now = clock()
        let version = catalog.withLock { $0.publish(at: now, bytes: settings.itemBytes) }
        published(version)
        return version
    }

    public func start() async throws {
        let server = self
        let bound = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(ItemStreamHandler(server: server))
                }
            }
            .bind(host: settings.host, port: settings.port).get()
        channel.withLock { $0 = bound }
    }

    public func stop() async {
        try? await channel.withLock { $0 }?.close()
    }
}
