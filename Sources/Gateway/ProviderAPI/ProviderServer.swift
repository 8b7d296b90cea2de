import ConnectionLimits
import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ServiceLifecycle
import Synchronization

/// A listening address and what it speaks.
public struct ProviderListener: Sendable {
    public enum Security: Sendable {
        /// HTTP/2 over TLS; HTTP/2 also for clients that offer no ALPN, as APNs does.
        case tls(NIOSSLContext)
        /// Cleartext HTTP/2 with prior knowledge (h2c).
        case cleartext
    }

    public var host: String
    public var port: Int
    public var security: Security
    /// The configuration key of its port, named if it cannot bind.
    public var setting: String

    public init(host: String, port: Int, security: Security, setting: String = "") {
        self.host = host
        self.port = port
        self.security = security
        self.setting = setting
    }
}

/// The provider API's listeners as a `Service`: binds, serves until graceful shutdown, then drains —
/// GOAWAY to every connection, 503 Shutdown for late streams, in-flight requests finished — and closes
/// what is left when the grace period ends.
public final class ProviderServer: Service, Sendable {
    public let context: ProviderContext
    private let listeners: [ProviderListener]
    private let group: any EventLoopGroup
    private let logger: Logger
    private let gracePeriod: TimeAmount
    /// Connection caps and the handshake timeout (nil: none, for tests that drive the server alone).
    public let gate: ConnectionGate?
    private let state = Mutex(State())

    private struct State {
        var channels: [any Channel] = []
        var connections: [ObjectIdentifier: any Channel] = [:]
        var bound: [SocketAddress] = []
    }

    /// Provider connections open now (draining ones included).
    public var openConnections: Int { state.withLock { $0.connections.count } }

    public init(
        context: ProviderContext, listeners: [ProviderListener], group: any EventLoopGroup, logger: Logger,
        gracePeriod: TimeAmount = .seconds(10), gate: ConnectionGate? = nil
    ) {
        self.gate = gate
        self.context = context
        self.listeners = listeners
        self.group = group
        self.logger = logger
        self.gracePeriod = gracePeriod
    }

    /// The addresses actually bound (port 0 in the settings picks a free port).
    public var boundAddresses: [SocketAddress] { state.withLock { $0.bound } }

    /// Binds every listener. Called by `run`; tests may call it directly and then `shutdown`.
    public func start() async throws {
        for listener in listeners {
            let channel = try await CannotListen.naming(
                host: listener.host, port: listener.port, setting: listener.setting
            ) { try await bootstrap(for: listener).bind(host: listener.host, port: listener.port).get() }
            state.withLock {
                $0.channels.append(channel)
                if let address = channel.localAddress { $0.bound.append(address) }
            }
            logger.info(
                "provider API listening",
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

    /// Stops accepting, drains open connections and closes them after the grace period.
    public func shutdown() async throws {
        context.startDraining()
        let (listening, open) = state.withLock { ($0.channels, Array($0.connections.values)) }
        logger.notice(
            "draining: not ready, new streams answered 503 Shutdown",
            metadata: ["connections": "\(open.count)", "grace_seconds": "\(gracePeriod.nanoseconds / 1_000_000_000)"])
        for channel in listening { try? await channel.close() }
        for connection in open { connection.pipeline.fireUserInboundEventTriggered(ProviderDrainEvent()) }
        let deadline = NIODeadline.now() + gracePeriod
        for connection in open {
            let remaining = deadline - .now()
            if remaining > .zero {
                let timeout = connection.eventLoop.scheduleTask(in: remaining) { connection.close(promise: nil) }
                try? await connection.closeFuture.get()
                timeout.cancel()
            } else {
                try? await connection.close()
            }
        }
    }

    private func bootstrap(for listener: ProviderListener) -> ServerBootstrap {
        let context = self.context
        let logger = self.logger
        let security = listener.security
        let gate = self.gate
        return ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
            // Unwritable past the output limit: the connection handler stops reading (back-pressure).
            .childChannelOption(
                .writeBufferWaterMark,
                value: .init(
                    low: context.settings.http2.outputLimitBytes / 2, high: context.settings.http2.outputLimitBytes)
            )
            .childChannelInitializer { [weak self] channel in
                do {
                    try gate?.guardConnection(channel)
                    let sendBuffer = context.settings.http2.socketSendBufferBytes
                    if sendBuffer > 0 {
                        try channel.syncOptions?.setOption(.socketOption(.so_sndbuf), value: .init(sendBuffer))
                    }
                    if case .tls(let sslContext) = security {
                        try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    try Self.addHTTP2Handlers(to: channel, context: context, logger: logger)
                    self?.track(channel)
                    return channel.eventLoop.makeSucceededVoidFuture()
                } catch {
                    return channel.eventLoop.makeFailedFuture(error)
                }
            }
    }

    /// What a provider connection runs above its transport (TCP, or TLS): the HTTP/2 codec, then the
    /// request handler, which attaches to the codec's seam. Also the `http2-connection` fuzz target's pipeline.
    public static func addHTTP2Handlers(to channel: any Channel, context: ProviderContext, logger: Logger) throws {
        let sync = channel.pipeline.syncOperations
        let codec = NGHTTP2Codec(limits: context.settings.http2)
        try sync.addHandler(codec)
        let handler = ProviderConnectionHandler(context: context, logger: logger, writer: codec)
        try sync.addHandler(handler)
        codec.attach(handler)
    }

    private func track(_ channel: any Channel) {
        let id = ObjectIdentifier(channel)
        state.withLock { $0.connections[id] = channel }
        channel.closeFuture.whenComplete { [weak self] _ in
            self?.state.withLock { _ = $0.connections.removeValue(forKey: id) }
        }
    }
}

extension ProviderListener.Security {
    var isTLS: Bool {
        if case .tls = self { return true }
        return false
    }
}
