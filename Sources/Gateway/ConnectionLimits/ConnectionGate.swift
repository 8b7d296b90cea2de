import Logging
import NIOCore
import Synchronization

/// The door of one kind of listener (the provider API's, the device port's): how many connections it
/// holds at once, how many from one source address, and how long a new connection may take to finish its
/// handshake (TLS, the HTTP/2 preface, the WebSocket upgrade) before it is closed. A connection that
/// never speaks cannot hold a descriptor for long, and no one source can take every descriptor.
public final class ConnectionGate: Sendable {
    public struct Limits: Sendable, Equatable {
        /// Connections open at once through this gate's listeners (0: no cap).
        public var maxConnections: Int
        /// Connections open at once from one source address (0: no cap).
        public var maxPerAddress: Int
        /// Time from accept to a finished handshake.
        public var handshakeTimeout: TimeAmount

        public init(maxConnections: Int, maxPerAddress: Int, handshakeTimeout: TimeAmount) {
            self.maxConnections = maxConnections
            self.maxPerAddress = maxPerAddress
            self.handshakeTimeout = handshakeTimeout
        }
    }

    /// Why a connection was refused at the door.
    public enum Refusal: String, Sendable, CaseIterable {
        case listenerCap = "listener_cap"
        case addressCap = "address_cap"
    }

    /// The gate's counts, for `/metrics` and `/v1/counters`.
    public struct Figures: Sendable, Equatable, Codable {
        public var open = 0
        /// The cap on connections open at once (`Limits.maxConnections`; 0: none).
        public var limit = 0
        public var refusedListenerCap = 0
        public var refusedAddressCap = 0
        public var handshakeTimeouts = 0

        public init(open: Int = 0, limit: Int = 0) {
            self.open = open
            self.limit = limit
        }
    }

    private struct State {
        var figures = Figures()
        var byAddress: [String: Int] = [:]
        /// When a refusal or timeout was last logged, by kind (at most one line a second each).
        var lastLogged: [String: NIODeadline] = [:]
    }

    /// "provider" or "devices": the metric label and the log's word for it.
    public let name: String
    public let limits: Limits
    private let state: Mutex<State>
    private let logger: Logger

    public init(name: String, limits: Limits, logger: Logger) {
        self.name = name
        self.limits = limits
        self.logger = logger
        state = Mutex(State(figures: Figures(limit: limits.maxConnections)))
    }

    public var figures: Figures { state.withLock { $0.figures } }

    /// Admits a connection from `address`, or says why not (counted, and logged at most once a second).
    /// An admitted connection is released with `release(address)` when it closes.
    public func admit(_ address: String) -> Refusal? {
        let refusal = state.withLock { state -> Refusal? in
            if limits.maxConnections > 0, state.figures.open >= limits.maxConnections {
                state.figures.refusedListenerCap += 1
                return .listenerCap
            }
            let fromHere = state.byAddress[address, default: 0]
            if limits.maxPerAddress > 0, fromHere >= limits.maxPerAddress {
                state.figures.refusedAddressCap += 1
                return .addressCap
            }
            state.figures.open += 1
            state.byAddress[address] = fromHere + 1
            return nil
        }
        if let refusal {
            log(
                refusal.rawValue, "\(name) connection refused",
                [
                    "reason": "\(refusal.rawValue)", "address": "\(address)",
                    "limit": "\(refusal == .listenerCap ? limits.maxConnections : limits.maxPerAddress)",
                ])
        }
        return refusal
    }

    public func release(_ address: String) {
        state.withLock { state in
            state.figures.open -= 1
            if let count = state.byAddress[address], count > 1 {
                state.byAddress[address] = count - 1
            } else {
                state.byAddress.removeValue(forKey: address)
            }
        }
    }

    func handshakeTimedOut(_ address: String) {
        state.withLock { $0.figures.handshakeTimeouts += 1 }
        log(
            "handshake", "\(name) connection closed: no handshake in time",
            ["address": "\(address)", "timeout_ms": "\(limits.handshakeTimeout.nanoseconds / 1_000_000)"])
    }

    private func log(_ kind: String, _ message: Logger.Message, _ metadata: Logger.Metadata) {
        let now = NIODeadline.now()
        let due = state.withLock { state -> Bool in
            if let last = state.lastLogged[kind], now - last < .seconds(1) { return false }
            state.lastLogged[kind] = now
            return true
        }
        if due { logger.warning(message, metadata: metadata) }
    }

    /// Sets a new connection up at the door, in its channel initializer: admitted (the handshake timer
    /// first in its pipeline, the release when it closes) or refused (the returned error closes it).
    public func guardConnection(_ channel: any Channel) throws {
        let address = channel.remoteAddress?.ipAddress ?? "?"
        if let refusal = admit(address) { throw ConnectionRefused(reason: refusal) }
        channel.closeFuture.whenComplete { [self] _ in release(address) }
        try channel.pipeline.syncOperations.addHandler(HandshakeTimer(gate: self, address: address), position: .first)
    }
}

/// A connection refused at the door.
public struct ConnectionRefused: Error, Sendable {
    public var reason: ConnectionGate.Refusal
}

/// Fired through a connection's pipeline (from its head) once its handshake is done: the TLS handshake
/// and HTTP/2 preface of a provider, the WebSocket upgrade of a device.
public struct ConnectionEstablished: Sendable {
    public init() {}
}

/// Closes a connection that has not fired `ConnectionEstablished` within the gate's handshake timeout.
final class HandshakeTimer: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let gate: ConnectionGate
    private let address: String
    private var timer: Scheduled<Void>?

    init(gate: ConnectionGate, address: String) {
        self.gate = gate
        self.address = address
    }

    func handlerAdded(context: ChannelHandlerContext) {
        let bound = NIOLoopBound((gate, address, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(in: gate.limits.handshakeTimeout) {
            let (gate, address, context) = bound.value
            gate.handshakeTimedOut(address)
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is ConnectionEstablished {
            timer?.cancel()
            timer = nil
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
