import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ProviderClient
import PushModel
import Synchronization

/// The link from this node to one other: one long-lived HTTP/2 connection to its provider API, opened when
/// the first push needs it and again after it is lost (not more often than once a second: meanwhile pushes
/// go through the store). Pushes handed over from any thread are queued and sent together by one task on
/// the link's event loop: many pushes per batch, many batches per write.
final class NodeLink: Sendable {
    let node: String
    private let loop: any EventLoop
    private let settings: NodeLinkSettings
    private let logger: Logger
    private let authorization: @Sendable () -> String
    private let tls: @Sendable () throws -> NIOSSLContext

    private struct Queue {
        var address: NodeAddress?
        var entries: [RouteEntry] = []
        var scheduled = false
        var closed = false
    }

    private let queue: Mutex<Queue>
    /// What only the link's event loop touches (`state`).
    private let connection = ConnectionState()

    private final class ConnectionState: @unchecked Sendable {
        var channel: (any Channel)?
        var handler: RouteLinkHandler?
        var connectedTo: NodeAddress?
        var connecting = false
        /// Entries that came while connecting, sent once connected.
        var waiting: [RouteEntry] = []
        var retryAfter = NIODeadline.uptimeNanoseconds(0)
    }

    init(
        node: String, address: NodeAddress, loop: any EventLoop, settings: NodeLinkSettings, logger: Logger,
        authorization: @escaping @Sendable () -> String, tls: @escaping @Sendable () throws -> NIOSSLContext
    ) {
        self.node = node
        self.loop = loop
        self.settings = settings
        self.logger = logger
        self.authorization = authorization
        self.tls = tls
        queue = Mutex(Queue(address: address))
    }

    /// The node moved (its address in the database changed): the next batch opens a connection there.
    func retarget(_ address: NodeAddress) {
        queue.withLock { $0.address = address }
    }

    var address: NodeAddress? { queue.withLock { $0.address } }

    /// The connection's state, on the link's event loop only.
    private var state: ConnectionState {
        loop.assertInEventLoop()
        return connection
    }

    func enqueue(_ entry: RouteEntry) {
        let start = queue.withLock { queue -> Bool? in
            if queue.closed { return nil }
            queue.entries.append(entry)
            defer { queue.scheduled = true }
            return !queue.scheduled
        }
        guard let start else { return RouteEntry.fail([entry]) }
        if start { loop.execute { self.pump() } }
    }

    /// Closes the connection; what is queued or in flight goes through the store.
    func close() {
        let entries = queue.withLock { queue in
            queue.closed = true
            defer { queue.entries = [] }
            return queue.entries
        }
        RouteEntry.fail(entries)
        loop.execute {
            let state = self.state
            RouteEntry.fail(state.waiting)
            state.waiting = []
            state.channel?.close(promise: nil)
        }
    }

    /// On the loop: sends what is queued, connecting first when needed.
    private func pump() {
        let (entries, address) = queue.withLock { queue in
            defer {
                queue.entries = []
                queue.scheduled = false
            }
            return (queue.entries, queue.address)
        }
        guard !entries.isEmpty else { return }
        guard let address else { return fail(entries) }
        if let handler = state.handler, handler.isUsable, state.connectedTo == address {
            return handler.send(entries, authorization: authorization())
        }
        state.waiting += entries
        guard !state.connecting else { return }
        guard NIODeadline.now() >= state.retryAfter else { return fail(takeWaiting()) }
        connect(to: address)
    }

    private func takeWaiting() -> [RouteEntry] {
        defer { state.waiting = [] }
        return state.waiting
    }

    private func fail(_ entries: [RouteEntry]) { RouteEntry.fail(entries) }

    private func connect(to address: NodeAddress) {
        state.connecting = true
        state.channel?.close(promise: nil)
        state.channel = nil
        state.handler = nil
        let timeout = TimeAmount.seconds(Int64(settings.timeoutSeconds))
        let context: NIOSSLContext?
        do {
            context = address.tls ? try tls() : nil
        } catch {
            logger.error("no TLS for the link", metadata: ["node": "\(node)", "error": "\(error)"])
            return failed()
        }
        // An IP address is no server name (SNI).
        let serverName = (try? SocketAddress(ipAddress: address.host, port: 0)) == nil ? address.host : nil
        let logger = self.logger
        let bootstrap = ProviderClient.bootstrap(group: loop, tls: context, serverName: serverName) { channel in
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOHTTP2Handler(mode: .client))
            try sync.addHandler(RouteLinkHandler(address: address, timeout: timeout, logger: logger))
        }
        .connectTimeout(.seconds(Int64(settings.timeoutSeconds)))
        bootstrap.connect(host: address.host, port: address.port).hop(to: loop).whenComplete { result in
            let state = self.state
            state.connecting = false
            switch result {
            case .success(let channel):
                guard let handler = try? channel.pipeline.syncOperations.handler(type: RouteLinkHandler.self) else {
                    channel.close(promise: nil)
                    return self.failed()
                }
                state.channel = channel
                state.handler = handler
                state.connectedTo = address
                self.logger.info("linked to a node", metadata: ["node": "\(self.node)", "address": "\(address)"])
                handler.send(self.takeWaiting(), authorization: self.authorization())
            case .failure(let error):
                self.logger.warning(
                    "cannot link to a node; its pushes go through the store",
                    metadata: ["node": "\(self.node)", "address": "\(address)", "error": "\(error)"])
                self.failed()
            }
        }
    }

    /// The connection could not be made: what waited for it goes through the store, and the next try waits
    /// a second.
    private func failed() {
        state.connecting = false
        state.retryAfter = NIODeadline.now() + .seconds(1)
        fail(takeWaiting())
    }
}
