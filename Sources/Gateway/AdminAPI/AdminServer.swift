import ConnectionLimits
import Foundation
import JobQueue
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import PushModel
import ServiceLifecycle
import Synchronization

/// The admin port: JSON lookups over HTTP/1.1 (`AdminRoutes`). Loopback by default; when exposed it
/// requires `authorization: Bearer <admin.token>`.
public final class AdminServer: Service, Sendable {
    let routes: AdminRoutes
    let host: String
    let port: Int
    let token: String?
    let live: LiveFeedSettings
    let group: any EventLoopGroup
    let logger: Logger
    private let channel = Mutex<(any Channel)?>(nil)
    /// Lookups (they may read the store), run as children of `run`'s task group.
    private let lookups = JobQueue()

    public init(
        routes: AdminRoutes, host: String, port: Int, token: String?, live: LiveFeedSettings = .init(),
        group: any EventLoopGroup, logger: Logger
    ) {
        self.routes = routes
        self.host = host
        self.port = port
        self.token = token
        self.live = live
        self.group = group
        self.logger = logger
    }

    public var boundPort: Int? { channel.withLock { $0?.localAddress?.port } }

    private func start() async throws {
        let routes = self.routes
        let token = self.token
        let live = self.live
        let lookups = self.lookups
        let logger = self.logger
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            // The admin API's answers are small: a fixed send buffer (the kernel doubles it) keeps what the
            // kernel holds for a client that does not read to some 32 KB, where autotuning would let it
            // hold 4 MB (`net.ipv4.tcp_wmem`) — an hour of live-feed events before one is skipped.
            .childChannelOption(.socketOption(.so_sndbuf), value: 16384)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(
                        AdminHandler(routes: routes, token: token, live: live, lookups: lookups, logger: logger))
                }
            }
        let bound = try await CannotListen.naming(host: host, port: port, setting: "admin.port") {
            try await bootstrap.bind(host: host, port: port).get()
        }
        channel.withLock { $0 = bound }
        logger.info("admin API listening", metadata: ["address": "\(bound.localAddress.map { "\($0)" } ?? "?")"])
    }

    /// Listens until graceful shutdown; the lookups under way finish before it returns, and a request
    /// that comes after is answered 503.
    public func run() async throws {
        try await start()
        await withDiscardingTaskGroup { group in
            group.addTask { [self] in
                try? await gracefulShutdown()
                await shutdown()
            }
            await lookups.run(in: &group)
        }
    }

    /// Stops listening and taking lookups (the ones under way finish).
    public func shutdown() async {
        try? await channel.withLock { $0 }?.close()
        lookups.finish()
    }
}

private final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let routes: AdminRoutes
    let token: String?
    let live: LiveFeedSettings
    let lookups: JobQueue
    let logger: Logger
    private var head: HTTPRequestHead?
    /// A dashboard following `/v1/live`: its feed and the task that writes an event each interval.
    private var feed: LiveFeed?
    private var ticking: RepeatedTask?
    /// The last event written and not yet taken by the client's socket: since when. The next events are
    /// skipped meanwhile, so a client that does not read holds one event, not one per interval.
    private var waitingSince: NIODeadline?
    private let encoder = JSONEncoder()

    init(routes: AdminRoutes, token: String?, live: LiveFeedSettings, lookups: JobQueue, logger: Logger) {
        self.routes = routes
        self.token = token
        self.live = live
        self.lookups = lookups
        self.logger = logger
    }

    func channelInactive(context: ChannelHandlerContext) {
        ticking?.cancel()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let value): head = value
        case .body: break
        case .end:
            guard let head, feed == nil else { return }
            let path = head.uri.split(separator: "?", maxSplits: 1).first.map(String.init) ?? head.uri
            let authorized =
                token.map {
                    ConstantTime.equal((head.headers.first(name: "authorization") ?? "").utf8, "Bearer \($0)".utf8)
                }
                ?? true
            self.head = nil
            if head.method == .GET, path == "/dashboard" || path == "/" {
                // The page holds no data: it asks for the token when the data answers 401.
                write(
                    .init(status: 200, json: DashboardPage.html, contentType: "text/html; charset=utf-8"), head, context
                )
            } else if head.method == .GET, path == "/v1/live", authorized {
                follow(head, context: context)
            } else if !authorized {
                write(
                    .init(status: 401, json: #"{"error":"admin API needs authorization: Bearer <admin.token>"}"#), head,
                    context)
            } else {
                // Lookups may read the store: answered by the server's task group, written back on the
                // channel's loop; after shutdown began, 503.
                let routes = self.routes
                let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
                let loop = context.eventLoop
                let offered = lookups.offer {
                    let response = await routes.respond(method: head.method.rawValue, path: head.uri)
                    loop.execute {
                        let (handler, context) = bound.value
                        handler.write(response, head, context)
                    }
                }
                if !offered {
                    logger.notice("admin lookup refused: the admin API is shutting down", metadata: ["path": "\(path)"])
                    write(.init(status: 503, json: #"{"error":"the admin API is shutting down"}"#), head, context)
                }
            }
        }
    }

    private func write(_ response: AdminRoutes.Response, _ head: HTTPRequestHead, _ context: ChannelHandlerContext) {
        let body = context.channel.allocator.buffer(
            string: response.json.hasSuffix("\n") ? response.json : response.json + "\n")
        var headers = HTTPHeaders([
            ("content-type", response.contentType), ("content-length", "\(body.readableBytes)"),
        ])
        if let allow = response.allow { headers.add(name: "allow", value: allow) }
        if !head.isKeepAlive { headers.add(name: "connection", value: "close") }
        context.write(
            wrapOutboundOut(
                .head(
                    HTTPResponseHead(
                        version: head.version, status: .init(statusCode: response.status), headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let keepAlive = head.isKeepAlive
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    /// Server-sent events: one `data:` line of `LiveFigures` JSON each interval until the client leaves.
    private func follow(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        let headers = HTTPHeaders([
            ("content-type", "text/event-stream"), ("cache-control", "no-store"), ("x-accel-buffering", "no"),
        ])
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil
        )
        var feed = LiveFeed(hub: routes.hub, metrics: routes.metrics)
        _ = feed.next()
        self.feed = feed
        context.writeAndFlush(
            wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: ": live\n\n")))), promise: nil)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let interval = TimeAmount.milliseconds(live.intervalMilliseconds)
        ticking = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let (handler, context) = bound.value
            handler.tick(context: context)
        }
    }

    private func tick(context: ChannelHandlerContext) {
        guard var feed, context.channel.isActive else { return }
        if let waitingSince {
            // The client has not taken the last event: skip this one (the next covers the whole interval),
            // and close a client stuck for stalled_close_seconds.
            let stuck =
                live.stalledCloseSeconds > 0 && NIODeadline.now() - waitingSince >= .seconds(live.stalledCloseSeconds)
            routes.metrics?.liveStalled(closed: stuck)
            if stuck {
                ticking?.cancel()
                // Reset, not FIN: a FIN would wait behind the events the client never took, for ever.
                // (Set at once: on the channel's own loop, NIO applies a socket option synchronously.)
                _ = (context.channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                context.close(promise: nil)
            }
            return
        }
        let figures = feed.next()
        self.feed = feed
        guard let json = try? encoder.encode(figures) else { return }
        var buffer = context.channel.allocator.buffer(capacity: json.count + 8)
        buffer.writeString("data: ")
        buffer.writeBytes(json)
        buffer.writeString("\n\n")
        waitingSince = .now()
        // Completed once the socket took the whole event (NIO completes a write when it leaves its buffer).
        let bound = NIOLoopBound(self, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer)))).whenSuccess {
            bound.value.waitingSince = nil
        }
    }
}
