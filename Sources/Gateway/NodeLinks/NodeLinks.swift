import Logging
import NIOCore
import NIOSSL
import ProviderAuth
import ProviderClient
import PushIntake
import PushModel
import Synchronization

/// The links' settings (configuration keys `store.postgres.route_timeout_seconds`,
/// `store.postgres.route_trust_roots`).
public struct NodeLinkSettings: Sendable, Equatable {
    /// How long a batch waits for the owner's answer before its pushes go through the store.
    public var timeoutSeconds = 5
    /// PEM files of the authorities that sign the other nodes' provider TLS certificates (for `https`
    /// addresses); empty: their certificates are not verified (development certificates), and only the
    /// fleet's token authenticates a link.
    public var trustRoots: [String] = []

    public init() {}
}

/// This node's links to the other nodes of its fleet (`RouteLink`): a push accepted here for a device
/// another node runs is handed to that node over HTTP/2, on one long-lived connection per node, many
/// pushes per request, authenticated with the fleet's own token. The database stays the record: a push
/// that does not reach its owner this way (no address known, the link down or cut, no answer in time) is
/// answered `.untaken`, and its sender stores it and routes it through the store.
public final class NodeLinks: RouteLink, Sendable {
    private let nodeID: String
    private let tokens: NodeTokens
    private let group: any EventLoopGroup
    private let settings: NodeLinkSettings
    private let logger: Logger
    private let clock: @Sendable () -> UnixTime
    private let links = Mutex<[String: NodeLink]>([:])
    /// The token this node presents, remade every quarter of its lifetime.
    private let token = Mutex<(value: String, madeAt: Int64)?>(nil)
    private let tlsContext = Mutex<NIOSSLContext?>(nil)

    public init(
        nodeID: String, tokens: NodeTokens, group: any EventLoopGroup, settings: NodeLinkSettings = NodeLinkSettings(),
        logger: Logger, clock: @escaping @Sendable () -> UnixTime
    ) {
        self.nodeID = nodeID
        self.tokens = tokens
        self.group = group
        self.settings = settings
        self.logger = logger
        self.clock = clock
    }

    /// The nodes' addresses as the database has them (every lease renewal): a link for each node with one,
    /// the others' closed. This node's own is left out; so is an address that does not read (each node's
    /// own is checked when its configuration is read).
    public func update(addresses: [String: String]) {
        var parsed: [String: NodeAddress] = [:]
        for (node, text) in addresses where node != nodeID {
            guard let address = NodeAddress(url: text) else { continue }
            parsed[node] = address
        }
        let closed = links.withLock { links -> [NodeLink] in
            var closed: [NodeLink] = []
            for (node, link) in links where parsed[node] == nil {
                closed.append(link)
                links[node] = nil
            }
            for (node, address) in parsed {
                if let link = links[node] {
                    if link.address != address { link.retarget(address) }
                } else {
                    links[node] = NodeLink(
                        node: node, address: address, loop: group.next(), settings: settings, logger: logger,
                        authorization: { [self] in authorization() }, tls: { [self] in try clientTLS() })
                }
            }
            return closed
        }
        for link in closed { link.close() }
    }

    /// The nodes this node has a link to (their address known).
    public var linkedNodes: [String] { links.withLock { $0.keys.sorted() } }

    public func forward(
        _ push: RoutedPush, to node: String, answeringOn loop: (any EventLoop)?,
        answered: @escaping @Sendable (RouteOutcome) -> Void
    ) {
        guard let link = links.withLock({ $0[node] }) else { return answered(.untaken) }
        link.enqueue(RouteEntry(push: push, loop: loop, answered: answered))
    }

    /// Closes every link; what is queued or in flight goes through the store.
    public func close() {
        let all = links.withLock { links in
            defer { links = [:] }
            return Array(links.values)
        }
        for link in all { link.close() }
    }

    private func authorization() -> String {
        let now = clock()
        return token.withLock { token in
            if let token, abs(now.milliseconds / 1000 - token.madeAt) < NodeTokens.lifetimeSeconds / 4 {
                return token.value
            }
            let value = "bearer " + tokens.token(node: nodeID, now: now)
            token = (value, now.milliseconds / 1000)
            return value
        }
    }

    private func clientTLS() throws -> NIOSSLContext {
        try tlsContext.withLock { context in
            if let context { return context }
            let made = try ProviderClient.tlsContext(trustRoots: settings.trustRoots, alpn: ["h2"])
            context = made
            return made
        }
    }
}
