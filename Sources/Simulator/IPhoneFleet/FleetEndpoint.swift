import NIOCore
import NIOHTTP1
import NIOPosix

/// `pushgate simulate --metrics-port`: the fleet's figures over HTTP/1.1 — `GET /metrics` (Prometheus
/// text) and `GET /v1/fleet` (JSON) — for a fleet that runs apart from the gateway (in `pushgate demo`
/// the gateway's admin port serves both).
public final class FleetEndpoint: Sendable {
    public typealias Answer = (status: HTTPResponseStatus, contentType: String, body: String)
    private let channel: any Channel

    public init(host: String, port: Int, group: any EventLoopGroup, answer: @escaping @Sendable (String) -> Answer)
        async throws
    {
        channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(Handler(answer: answer))
                }
            }
            .bind(host: host, port: port).get()
    }

    public var port: Int? { channel.localAddress?.port }

    public func stop() async { try? await channel.close() }

    /// The answer for a path.
    public static func answer(path: String, metrics: () -> String, json: () -> String) -> Answer {
        switch path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path {
        case "/metrics": (.ok, "text/plain; version=0.0.4; charset=utf-8", metrics())
        case "/v1/fleet": (.ok, "application/json", json())
        default: (.notFound, "application/json", #"{"error":"only /metrics and /v1/fleet here"}"#)
        }
    }

    private final class Handler: ChannelInboundHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundOut = HTTPServerResponsePart
        let answer: @Sendable (String) -> Answer
        private var head: HTTPRequestHead?

        init(answer: @escaping @Sendable (String) -> Answer) { self.answer = answer }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let value): head = value
            case .body: break
            case .end:
                guard let head else { return }
                self.head = nil
                let (status, type, body) =
                    head.method == .GET
                    ? answer(head.uri) : (.methodNotAllowed, "application/json", #"{"error":"only GET"}"#)
                var headers = HTTPHeaders([("content-type", type), ("content-length", "\(body.utf8.count)")])
                if !head.isKeepAlive { headers.add(name: "connection", value: "close") }
                context.write(
                    wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                    promise: nil)
                context.write(
                    wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
                let keepAlive = head.isKeepAlive
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
                    if !keepAlive { channel.close(promise: nil) }
                }
            }
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) { context.close(promise: nil) }
    }
}
