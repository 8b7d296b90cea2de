import NIOCore
import NIOHTTP1
import NIOPosix

/// The real work a simulated app can do during a background wake: one HTTP/1.1 GET with a deadline.
public enum HTTPGet {
    public struct Target: Sendable, Equatable {
        public var host: String
        public var port: Int
        public var path: String

        /// Parses `http://host[:port]/path`.
        public init?(_ url: String) {
            guard url.hasPrefix("http://") else { return nil }
            let rest = url.dropFirst("http://".count)
            let slash = rest.firstIndex(of: "/") ?? rest.endIndex
            let authority = rest[..<slash]
            path = slash == rest.endIndex ? "/" : String(rest[slash...])
            if let colon = authority.lastIndex(of: ":") {
                guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
                    return nil
                }
                host = String(authority[..<colon])
                self.port = port
            } else {
                host = String(authority)
                port = 80
            }
            if host.isEmpty { return nil }
        }
    }

    /// The completion result the response calls for: `newData` (2xx with a body), `noData` (204, 304 or an
    /// empty body) or `failed` (anything else, a connection error, or the deadline).
    public static func result(_ target: Target, timeoutMilliseconds: Int64, on eventLoop: any EventLoop)
        -> EventLoopFuture<String>
    {
        let promise = eventLoop.makePromise(of: String.self)
        let timeout = eventLoop.scheduleTask(in: .milliseconds(timeoutMilliseconds)) {
            promise.fail(ChannelError.connectTimeout(.milliseconds(timeoutMilliseconds)))
        }
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.milliseconds(timeoutMilliseconds))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    try channel.pipeline.syncOperations.addHandler(Collector(promise: promise))
                }
            }
            .connect(host: target.host, port: target.port)
            .whenComplete { outcome in
                switch outcome {
                case .failure(let error): promise.fail(error)
                case .success(let channel):
                    let head = HTTPRequestHead(
                        version: .http1_1, method: .GET, uri: target.path,
                        headers: ["host": "\(target.host):\(target.port)", "connection": "close"])
                    channel.write(HTTPClientRequestPart.head(head), promise: nil)
                    channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                    promise.futureResult.whenComplete { _ in channel.close(promise: nil) }
                }
            }
        return promise.futureResult.always { _ in timeout.cancel() }.recover { _ in "failed" }
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        let promise: EventLoopPromise<String>
        var status = 0
        var bytes = 0

        init(promise: EventLoopPromise<String>) { self.promise = promise }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            switch unwrapInboundIn(data) {
            case .head(let head): status = Int(head.status.code)
            case .body(let buffer): bytes += buffer.readableBytes
            case .end:
                switch status {
                case 204, 304: promise.succeed("noData")
                case 200..<300: promise.succeed(bytes > 0 ? "newData" : "noData")
                default: promise.succeed("failed")
                }
            }
        }

        func channelInactive(context: ChannelHandlerContext) { promise.fail(ChannelError.ioOnClosedChannel) }
        func errorCaught(context: ChannelHandlerContext, error: any Error) { promise.fail(error) }
    }
}
