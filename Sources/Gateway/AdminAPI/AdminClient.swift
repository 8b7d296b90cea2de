import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A minimal HTTP/1.1 client for `pushgate lookup` and `pushgate devices` (the admin API is on loopback; no TLS).
public enum AdminClient {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    public static func get(host: String, port: Int, path: String, token: String?) async throws -> (
        status: Int, body: String
    ) {
        try await request(.GET, host: host, port: port, path: path, token: token)
    }

    public static func request(_ method: HTTPMethod, host: String, port: Int, path: String, token: String?)
        async throws -> (status: Int, body: String)
    {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { group.shutdownGracefully { _ in } }
        let promise = group.next().makePromise(of: (Int, String).self)
        let channel: any Channel
        do {
            channel = try await ClientBootstrap(group: group)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        try channel.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
                    }
                }
                .connect(host: host, port: port).get()
        } catch {
            promise.fail(error)  // never left unfulfilled, whether or not a handler got it
            throw Failure(
                description:
                    "cannot reach the admin API at \(host):\(port) (is `pushgate serve` running? admin.port?): \(error)"
            )
        }
        var headers = HTTPHeaders([("host", "\(host):\(port)"), ("connection", "close")])
        if let token { headers.add(name: "authorization", value: "Bearer \(token)") }
        channel.write(
            HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: method, uri: path, headers: headers)),
            promise: nil)
        try await channel.writeAndFlush(HTTPClientRequestPart.end(nil)).get()
        let (status, body) = try await promise.futureResult.get()
        try? await channel.close()
        return (status, body)
    }

    private final class ResponseCollector: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<(Int, String)>
        var status = 0
        var body = ""

        init(promise: EventLoopPromise<(Int, String)>) { self.promise = promise }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = Int(head.status.code)
            case .body(let buffer): body += String(buffer: buffer)
            case .end: promise.succeed((status, body))
            }
        }

        func channelInactive(context: ChannelHandlerContext) {
            promise.fail(Failure(description: "the admin API closed the connection"))
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            promise.fail(error)
            context.close(promise: nil)
        }
    }
}
