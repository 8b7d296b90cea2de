import ConnectionLimits
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTP2
import NIOPosix
import NIOSSL
import ProviderAuth
import PushIntake
import PushModel
import ServiceLifecycle
import Synchronization

/// The channel-management API on listeners of its own, as Apple serves it from its own host and port
/// (`api-manage-broadcast.sandbox.push.apple.com:2195`): HTTP/2 over TLS or h2c, one request per stream,
/// authenticated as the provider API is (a provider token, or a registered client certificate). Low
/// volume: NIO's HTTP/1-style stream codec, not the provider path's frame-level handler.
public final class ChannelManagementServer: Service, Sendable {
    private let context: ProviderContext
    private let directory: any ChannelDirectory
    private let listeners: [ProviderListener]
    private let group: any EventLoopGroup
    private let logger: Logger
    private let bound = Mutex<[SocketAddress]>([])
    private let channels = Mutex<[any Channel]>([])

    public init(
        context: ProviderContext, directory: any ChannelDirectory, listeners: [ProviderListener],
        group: any EventLoopGroup, logger: Logger
    ) {
        self.context = context
        self.directory = directory
        self.listeners = listeners
        self.group = group
        self.logger = logger
    }

    /// The addresses actually bound (port 0 picks a free one).
    public var boundAddresses: [SocketAddress] { bound.withLock { $0 } }
    /// Every listener is bound.
    public var isBound: Bool { boundAddresses.count == listeners.count }

    public func start() async throws {
        for listener in listeners {
            let channel = try await CannotListen.naming(
                host: listener.host, port: listener.port, setting: listener.setting
            ) { try await bootstrap(listener).bind(host: listener.host, port: listener.port).get() }
            channels.withLock { $0.append(channel) }
            if let address = channel.localAddress { bound.withLock { $0.append(address) } }
            logger.info(
                "channel management API listening",
                metadata: [
                    "address": "\(channel.localAddress.map { "\($0)" } ?? "?")",
                    "security": "\(listener.security.isTLS ? "tls" : "h2c")",
                ])
        }
    }

    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        try await shutdown()
    }

    public func shutdown() async throws {
        for channel in channels.withLock({ $0 }) { try? await channel.close() }
    }

    private func bootstrap(_ listener: ProviderListener) -> ServerBootstrap {
        let context = self.context
        let directory = self.directory
        let logger = self.logger
        let security = listener.security
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    if case .tls(let sslContext) = security {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    let connection = ChannelConnection(context: context)
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: .init(), streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(HTTP2FramePayloadToHTTP1ServerCodec())
                            try stream.pipeline.syncOperations.addHandler(
                                ChannelStreamHandler(
                                    connection: connection, context: context, directory: directory, logger: logger))
                        }
                    }
                }
            }
    }
}

/// What a connection's streams share: its credential's state (a provider token verified once per
/// connection, as on the provider API) and its client certificate's identity. Touched only on the
/// connection's event loop (its streams run there).
final class ChannelConnection: @unchecked Sendable {
    var authentication: ConnectionAuthentication
    var identity: ConnectionIdentity?
    var requestIDs = FastRandom()

    init(context: ProviderContext) {
        authentication = ConnectionAuthentication(policy: context.authPolicy)
    }
}

/// One request on one stream: collected, decided (`ChannelRequest`), answered.
final class ChannelStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let connection: ChannelConnection
    private let context: ProviderContext
    private let directory: any ChannelDirectory
    private let logger: Logger
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []

    init(connection: ChannelConnection, context: ProviderContext, directory: any ChannelDirectory, logger: Logger) {
        self.connection = connection
        self.context = context
        self.directory = directory
        self.logger = logger
    }

    func channelRead(context handlerContext: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body(var buffer):
            // Kept up to one byte past the limit: enough for the request to be refused as too large.
            let room = ChannelRequest.maximumBody + 1 - body.count
            if room > 0 { body += buffer.readBytes(length: min(room, buffer.readableBytes)) ?? [] }
        case .end:
            guard let head else { return }
            respond(to: head, handlerContext)
        }
    }

    private func respond(to head: HTTPRequestHead, _ handlerContext: ChannelHandlerContext) {
        if connection.identity == nil, let parent = handlerContext.channel.parent {
            connection.identity = context.identity(of: parent)
        }
        let request = ChannelRequest(
            method: head.method.rawValue, path: head.uri, authorization: head.headers.first(name: "authorization"),
            requestID: head.headers.first(name: "apns-request-id"),
            channelID: head.headers.first(name: "apns-channel-id"), body: body)
        let answer = request.answer(
            identity: connection.identity ?? .token, authentication: &connection.authentication,
            context: context, directory: directory, now: context.clock(), eventLoop: handlerContext.eventLoop,
            requestIDs: &connection.requestIDs)
        let bound = NIOLoopBound((self, handlerContext), eventLoop: handlerContext.eventLoop)
        answer.whenSuccess { answer in
            let (handler, handlerContext) = bound.value
            handler.write(answer, handlerContext)
        }
    }

    private func write(_ answer: ChannelRequest.Answer, _ handlerContext: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        for (name, value) in answer.headers { headers.add(name: name, value: value) }
        let status = HTTPResponseStatus(statusCode: answer.status)
        handlerContext.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http2, status: status, headers: headers))), promise: nil)
        if !answer.body.isEmpty {
            handlerContext.write(
                wrapOutboundOut(.body(.byteBuffer(handlerContext.channel.allocator.buffer(bytes: answer.body)))),
                promise: nil)
        }
        handlerContext.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        logger.debug("channel management request answered", metadata: ["status": "\(answer.status)"])
    }

}
