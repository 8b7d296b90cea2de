import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The admin port: JSON lookups over HTTP/1.1 (`AdminRoutes`). Loopback by default; when exposed it
/// requires `authorization: Bearer <admin.token>`.
public final class AdminServer: Service, Sendable {
    let routes: AdminRoutes
    let host: String
    let port: Int
    let token: String?
    let group: any EventLoopGroup
    let logger: Logger
    private let channel = Mutex<(any Channel)?>(nil)

    public init(routes: AdminRoutes, host: String, port: Int, token: String?, group: any EventLoopGroup, logger: Logger)
    {
        self.routes = routes
        self.host = host
        self.port = port
        self.token = token
        self.group = group
        self.logger = logger
    }

    public var boundPort: Int? { channel.withLock { $0?.localAddress?.port } }

    public func start() async throws {
        let routes = self.routes
        let token = self.token
        let bound = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.pipeline.configureHTTPServerPipeline().flatMap {
                    channel.pipeline.addHandler(AdminHandler(routes: routes, token: token))
                }
            }
            .bind(host: host, port: port).get()
        channel.withLock { $0 = bound }
        logger.info("admin API listening", metadata: ["address": "\(bound.localAddress.map { "\($0)" } ?? "?")"])
    }

    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        await shutdown()
    }

    public func shutdown() async {
        try? await channel.withLock { $0 }?.close()
    }
}

private final class AdminHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let routes: AdminRoutes
    let token: String?
    private var head: HTTPRequestHead?

    init(routes: AdminRoutes, token: String?) {
        self.routes = routes
        self.token = token
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let value): head = value
        case .body: break
        case .end:
            guard let head else { return }
            let response: AdminRoutes.Response
            if let token, head.headers.first(name: "authorization") != "Bearer \(token)" {
                response = .init(status: 401, json: #"{"error":"admin API needs authorization: Bearer <admin.token>"}"#)
            } else {
                response = routes.respond(method: head.method.rawValue, path: head.uri)
            }
            let body = context.channel.allocator.buffer(
                string: response.json.hasSuffix("\n") ? response.json : response.json + "\n")
            var headers = HTTPHeaders([
                ("content-type", response.contentType), ("content-length", "\(body.readableBytes)"),
            ])
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
            self.head = nil
        }
    }
}
