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
    private let catalog = Mutex(ContentCatalog())
    private let channel = Mutex<(any Channel)?>(nil)
    private let group: any EventLoopGroup
    private let clock: @Sendable () -> UnixTime
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
                    try channel.pipeline.syncOperations.addHandler(OriginHandler(server: server))
                }
            }
            .bind(host: settings.host, port: settings.port).get()
        channel.withLock { $0 = bound }
    }

    public func stop() async {
        try? await channel.withLock { $0 }?.close()
    }

    // MARK: Answers

    enum Answer {
        case json(status: HTTPResponseStatus, String)
        case item(ContentCatalog.Version, from: Int, bytesPerSecond: Int)
    }

    func answer(_ head: HTTPRequestHead) -> Answer {
        let parts = head.uri.split(separator: "?", maxSplits: 1)
        let path = String(parts.first ?? "")
        let query = parts.count > 1 ? parts[1] : ""
        switch (head.method, path) {
        case (.GET, "/manifest"):
            return .json(status: .ok, catalog.withLock { $0.manifestJSON })
        case (.POST, "/publish"):
            let version = publish()
            return .json(status: .ok, #"{"version":\#(version.version),"published_at":\#(version.publishedAt)}"#)
        case (.GET, "/log"):
            let data = (try? JSONEncoder().encode(log.all)) ?? Data("[]".utf8)
            return .json(status: .ok, String(decoding: data, as: UTF8.self))
        case (.GET, _) where path.hasPrefix("/items/"):
            guard let number = Int(path.dropFirst("/items/".count)),
                var version = catalog.withLock({ $0.version(number) })
            else { return .json(status: .notFound, #"{"error":"no such item"}"#) }
            if let text = Self.parameter("bytes", in: query) {
                guard let bytes = Int(text), (1...Self.largestItem).contains(bytes) else {
                    return .json(status: .badRequest, #"{"error":"bytes: from 1 to \#(Self.largestItem)"}"#)
                }
                version.bytes = bytes
            }
            var from = 0
            if let range = head.headers.first(name: "range") {
                guard range.hasPrefix("bytes="), range.hasSuffix("-"),
                    let start = Int(range.dropFirst("bytes=".count).dropLast()), start >= 0, start < version.bytes
                else { return .json(status: .rangeNotSatisfiable, #"{"error":"only bytes=<from>- within the item"}"#) }
                from = start
            }
            var rate = settings.linkBytesPerSecond
            if let slowdown = Self.parameter("slowdown", in: query).flatMap(Double.init), slowdown > 1, rate > 0 {
                rate = max(1, Int(Double(rate) / slowdown))
            }
            return .item(version, from: from, bytesPerSecond: rate)
        case (_, "/manifest"), (_, "/log"), (_, "/publish"):
            return .json(status: .methodNotAllowed, #"{"error":"method not allowed"}"#)
        default:
            return .json(status: .notFound, #"{"error":"not found"}"#)
        }
    }

    /// The largest item `?bytes=` may ask for (1 GiB).
    static let largestItem = 1 << 30

    static func parameter(_ name: String, in query: Substring) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, parts[0] == name { return String(parts[1]) }
        }
        return nil
    }

    func record(_ head: HTTPRequestHead, status: Int, bytes: Int) {
        log.record(
            FetchLog.Entry(
                at: clock().milliseconds, device: head.headers.first(name: "x-device-id") ?? "", path: head.uri,
                status: status, bytes: bytes))
    }
}

/// One connection: requests answered in turn; an item is written in chunks, paced when rated, each
/// chunk after the last was flushed (the connection's backpressure).
private final class OriginHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let chunk = 16 * 1024
    let server: OriginServer
    private var head: HTTPRequestHead?
    private var sending = false

    init(server: OriginServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let value): head = value
        case .body: break
        case .end:
            guard let head, !sending else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        server.log.began()
        let keepAlive = head.isKeepAlive
        switch server.answer(head) {
        case .json(let status, let body):
            var headers = HTTPHeaders([("content-type", "application/json"), ("content-length", "\(body.utf8.count)")])
            if !keepAlive { headers.add(name: "connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
            finish(head, status: Int(status.code), bytes: body.utf8.count, keepAlive: keepAlive, context: context)
        case .item(let version, let from, let rate):
            let length = version.bytes - from
            var headers = HTTPHeaders([
                ("content-type", "application/octet-stream"), ("content-length", "\(length)"),
                ("accept-ranges", "bytes"),
            ])
            if from > 0 {
                headers.add(name: "content-range", value: "bytes \(from)-\(version.bytes - 1)/\(version.bytes)")
            }
            if !keepAlive { headers.add(name: "connection", value: "close") }
            let status: HTTPResponseStatus = from > 0 ? .partialContent : .ok
            context.writeAndFlush(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            sending = true
            send(version, at: from, rate: rate, head: head, status: Int(status.code), sent: 0, context: context)
        }
    }

    /// Writes the item from `offset` a chunk at a time; at a rate, each chunk waits its share of a second.
    private func send(
        _ version: ContentCatalog.Version, at offset: Int, rate: Int, head: HTTPRequestHead, status: Int, sent: Int,
        context: ChannelHandlerContext
    ) {
        guard context.channel.isActive else {
            // The device went away (a cancelled transfer): logged with what it got.
            server.record(head, status: status, bytes: sent)
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        if server.itemsHeld {
            context.eventLoop.scheduleTask(in: .milliseconds(10)) {
                let (handler, context) = loopBound.value
                handler.send(version, at: offset, rate: rate, head: head, status: status, sent: sent, context: context)
            }
            return
        }
        let count = min(Self.chunk, version.bytes - offset)
        guard count > 0 else {
            sending = false
            finish(head, status: status, bytes: sent, keepAlive: head.isKeepAlive, context: context)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
            for index in 0..<count { pointer[index] = ContentCatalog.byte(offset + index, of: version.version) }
            return count
        }
        let written = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))))
        written.whenFailure { [server] _ in
            // The device went away mid-item (a cancelled transfer): logged with what it got.
            server.record(head, status: status, bytes: sent)
        }
        written.whenSuccess {
            let (handler, context) = loopBound.value
            guard rate > 0 else {
                return handler.send(
                    version, at: offset + count, rate: rate, head: head, status: status, sent: sent + count,
                    context: context)
            }
            let wait = Int64(count) * 1_000_000 / Int64(rate)
            context.eventLoop.scheduleTask(in: .microseconds(wait)) {
                let (handler, context) = loopBound.value
                handler.send(
                    version, at: offset + count, rate: rate, head: head, status: status, sent: sent + count,
                    context: context)
            }
        }
    }

    private func finish(
        _ head: HTTPRequestHead, status: Int, bytes: Int, keepAlive: Bool, context: ChannelHandlerContext
    ) {
        server.record(head, status: status, bytes: bytes)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
