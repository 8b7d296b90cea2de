import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import Synchronization

/// A WebSocket client without the device agent's manners, for tests that send what a real device would
/// not (garbage, oversized frames) or that stop reading or acknowledging.
public enum RawWebSocket {
    public final class Collector: ChannelInboundHandler, Sendable {
        public init() {}
        public typealias InboundIn = WebSocketFrame
        public let texts = Mutex<[String]>([])
        /// The status codes of the close frames received.
        public let closeCodes = Mutex<[UInt16]>([])
        public func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            if frame.opcode == .text { texts.withLock { $0.append(String(buffer: frame.unmaskedData)) } }
            if frame.opcode == .connectionClose {
                var data = frame.unmaskedData
                closeCodes.withLock { $0.append(data.readInteger(as: UInt16.self) ?? 0) }
                // As a device does (`DeviceAgent`): the gateway's close frame ends the connection.
                context.close(promise: nil)
            }
        }
    }

    /// Returns nil when the connection was not upgraded, else the texts received before the close.
    public static func exchange(host: String, port: Int, texts: [String], group: any EventLoopGroup) async throws
        -> [String]?
    {
        let collector = Collector()
        guard let channel = try? await open(host: host, port: port, group: group) else { return nil }
        try await channel.pipeline.addHandler(collector)
        for text in texts {
            let frame = WebSocketFrame(
                fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(string: text))
            channel.write(frame, promise: nil)
        }
        channel.flush()
        try await channel.closeFuture.get()
        return collector.texts.withLock { $0 }
    }

    /// Sends one text and returns the texts received until one satisfies `until`, the connection closes,
    /// or 10 seconds pass (polling; nothing sleeps longer than a poll).
    public static func exchangeUntil(
        host: String, port: Int, text: String, group: any EventLoopGroup, until: @escaping (String) -> Bool
    ) async throws -> [String] {
        let collector = Collector()
        let channel = try await open(host: host, port: port, group: group)
        try await channel.pipeline.addHandler(collector)
        try await channel.writeAndFlush(
            WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(string: text)))
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            let texts = collector.texts.withLock { $0 }
            if texts.contains(where: until) || !channel.isActive { break }
            try await Task.sleep(for: .milliseconds(10))  // clock-ok: a poll for a peer's frames, bounded
        }
        try? await channel.close()
        return collector.texts.withLock { $0 }
    }

    /// An upgraded connection, for tests that drive it frame by frame.
    public static func open(host: String, port: Int, group: any EventLoopGroup) async throws -> any Channel {
        let upgraded = try await ClientBootstrap(group: group).connect(host: host, port: port) { channel in
            channel.eventLoop.makeCompletedFuture {
                let upgrader = NIOTypedWebSocketClientUpgrader<Bool>(upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeSucceededFuture(true)
                })
                let head = HTTPRequestHead(
                    version: .http1_1, method: .GET, uri: "/device",
                    headers: ["host": "localhost", "content-length": "0"])
                let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPClientPipeline(
                    configuration: .init(
                        upgradeConfiguration: .init(
                            upgradeRequestHead: head, upgraders: [upgrader],
                            notUpgradingCompletionHandler: { $0.eventLoop.makeSucceededFuture(false) })))
                return negotiated.map { ($0, channel) }
            }
        }.get()
        guard upgraded.0 else { throw ChannelError.inputClosed }
        return upgraded.1
    }

    public static func connectAndSend(host: String, port: Int, text: String, group: any EventLoopGroup) async throws
        -> Bool
    {
        try await exchange(host: host, port: port, texts: [text], group: group) != nil
    }
}

/// A device on a raw WebSocket: says hello with a known identity, records the notifications it receives,
/// and acknowledges only when told to.
public final class RawDevice: Sendable {
    public let channel: any Channel
    public let collector = RawWebSocket.Collector()

    /// `reading: false` stops reading right after the hello (a stalled link).
    public init(
        host: String = "127.0.0.1", port: Int, deviceID: String, secret: String, reading: Bool = true,
        group: any EventLoopGroup
    ) async throws {
        channel = try await RawWebSocket.open(host: host, port: port, group: group)
        try await channel.pipeline.addHandler(collector)
        if !reading { try await channel.setOption(.autoRead, value: false).get() }
        try await send(#"{"type":"hello","device_id":"\#(deviceID)","secret":"\#(secret)"}"#)
    }

    /// A text frame with these bytes as they are (valid UTF-8 or not).
    public func send(bytes: [UInt8]) async throws {
        try await channel.writeAndFlush(
            WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(bytes: bytes)))
    }

    public func send(_ text: String) async throws {
        try await channel.writeAndFlush(
            WebSocketFrame(fin: true, opcode: .text, maskKey: .random(), data: channel.allocator.buffer(string: text)))
    }

    public func acknowledge(_ apnsID: String) async throws {
        try await send(#"{"type":"ack","apns_id":"\#(apnsID)"}"#)
    }

    /// The apns-ids of the notifications received so far, in order.
    public var received: [String] {
        collector.texts.withLock { texts in
            texts.compactMap { text in
                guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                    object["type"] as? String == "notification",
                    let notification = object["notification"] as? [String: Any]
                else { return nil }
                return notification["apns_id"] as? String
            }
        }
    }

    /// An orderly close: a WebSocket close frame (normal closure).
    public func closeOrderly() async throws {
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: .normalClosure)
        try await channel.writeAndFlush(
            WebSocketFrame(fin: true, opcode: .connectionClose, maskKey: .random(), data: data))
    }
}
