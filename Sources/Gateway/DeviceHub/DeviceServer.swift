import ConnectionLimits
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket
import ServiceLifecycle
import Synchronization

/// The device port: WebSocket (plain, or over TLS) for device agents. A `Service`: binds, runs the
/// policy's timers, and on graceful shutdown closes every device with a reconnect hint.
public final class DeviceServer: Service, Sendable {
    public struct Listener: Sendable {
        public var host: String
        public var port: Int
        public var tls: NIOSSLContext?
        /// The configuration key of its port, named if it cannot bind.
        public var setting: String

        public init(host: String, port: Int, tls: NIOSSLContext? = nil, setting: String = "") {
            self.host = host
            self.port = port
            self.tls = tls
            self.setting = setting
        }
    }

    public let hub: DeviceHub
    private let listeners: [Listener]
    private let group: any EventLoopGroup
    private let logger: Logger
    private let state = Mutex<(channels: [any Channel], bound: [SocketAddress], ticker: RepeatedTask?)>(([], [], nil))

    /// Connection caps and the upgrade timeout (nil: none).
    public let gate: ConnectionGate?

    public init(
        hub: DeviceHub, listeners: [Listener], group: any EventLoopGroup, logger: Logger, gate: ConnectionGate? = nil
    ) {
        self.gate = gate
        self.hub = hub
        self.listeners = listeners
        self.group = group
        self.logger = logger
    }

    public var boundAddresses: [SocketAddress] { state.withLock { $0.bound } }

    public func start() async throws {
        for listener in listeners {
            let channel = try await CannotListen.naming(
                host: listener.host, port: listener.port, setting: listener.setting
            ) { try await bootstrap(listener).bind(host: listener.host, port: listener.port).get() }
            state.withLock {
                $0.channels.append(channel)
                if let address = channel.localAddress { $0.bound.append(address) }
            }
            logger.info(
                "device port listening",
                metadata: [
                    "address": "\(channel.localAddress.map { "\($0)" } ?? "?")", "tls": "\(listener.tls != nil)",
                ])
        }
        let hub = self.hub
        let ticker = group.next().scheduleRepeatedTask(
            initialDelay: .milliseconds(hub.settings.tickMilliseconds),
            delay: .milliseconds(hub.settings.tickMilliseconds)
        ) { _ in hub.tick() }
        state.withLock { $0.ticker = ticker }
    }

    public func run() async throws {
        try await start()
        try? await gracefulShutdown()
        try await shutdown()
    }

    public func shutdown() async throws {
        let (channels, ticker) = state.withLock { ($0.channels, $0.ticker) }
        ticker?.cancel()
        for channel in channels { try? await channel.close() }
        hub.closeAll(reconnectAfterMilliseconds: hub.settings.reconnectHintMilliseconds)
    }

    private func bootstrap(_ listener: Listener) -> ServerBootstrap {
        let hub = self.hub
        let maximumFrame = hub.settings.maximumFrameBytes
        let gate = self.gate
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 4096)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 32 * 1024, high: 256 * 1024))
            // Devices send small messages (acks, keep-alives, app states): reads start at 256 bytes, not
            // NIO's 2,048, and grow for large ones (a burst of acks). Each connection keeps its read buffer
            // between reads: heaptrack of a node with 16,000 devices put those at 32.8 MB, the largest
            // single consumer; 512 → 256 took a node with 10,000 devices from 5.61–5.65 to 5.38–5.40 KB each.
            .childChannelOption(
                .recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 65536)
            )
            .childChannelInitializer { channel in
                // The session handler answers framing errors itself (an `error` naming the limit and
                // `closing`, then the close frame), so NIO's automatic close does not cut it short.
                let upgrader = NIOWebSocketServerUpgrader(
                    maxFrameSize: maximumFrame, automaticErrorHandling: false,
                    shouldUpgrade: { channel, _ in channel.eventLoop.makeSucceededFuture(HTTPHeaders()) },
                    upgradePipelineHandler: { channel, _ in
                        channel.eventLoop.makeCompletedFuture {
                            try channel.pipeline.syncOperations.addHandlers([
                                NIOWebSocketFrameAggregator(
                                    minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 16,
                                    maxAccumulatedFrameSize: maximumFrame),
                                DeviceSessionHandler(hub: hub),
                            ])
                        }
                    })
                do {
                    try gate?.guardConnection(channel)
                    if let tls = listener.tls {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls))
                    }
                    let refusal = UpgradeRequiredHandler()
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(
                        withServerUpgrade: (
                            upgraders: [upgrader],
                            completionHandler: { context in
                                context.pipeline.syncOperations.removeHandler(refusal, promise: nil)
                                // Upgraded: the door's timer stops, the hello timeout takes over.
                                context.pipeline.fireUserInboundEventTriggered(ConnectionEstablished())
                            }
                        ))
                    try channel.pipeline.syncOperations.addHandler(refusal)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
    }
}

/// Answers plain HTTP requests on the device port: 426, this port speaks WebSocket only.
private final class UpgradeRequiredHandler: ChannelInboundHandler, RemovableChannelHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let body = context.channel.allocator.buffer(
            string: "This port speaks the Pushgate device protocol over WebSocket.\n")
        var headers = HTTPHeaders([("content-length", "\(body.readableBytes)"), ("connection", "close")])
        headers.add(name: "upgrade", value: "websocket")
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: .upgradeRequired, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
