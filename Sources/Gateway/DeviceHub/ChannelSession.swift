import DeviceProtocol
import NIOCore
import NIOWebSocket
import PushModel
import PushPolicy
import Synchronization

/// A device's WebSocket connection as the hub reaches it, from any thread (NIO channel writes are
/// thread-safe): each delivery written as the device protocol's `notification`.
final class ChannelSession: DeviceSession {
    let channel: any Channel
    let encoding: DeliveryEncoding
    private let ended = Atomic<Bool>(false)
    /// How long a closed session reads on, waiting for the device to answer the close frame.
    private let lingerMilliseconds: Int64

    init(channel: any Channel, encoding: DeliveryEncoding, lingerMilliseconds: Int64) {
        self.channel = channel
        self.encoding = encoding
        self.lingerMilliseconds = lingerMilliseconds
    }

    var hasEnded: Bool { ended.load(ordering: .acquiring) }

    /// The session is over (called before the hub hears `disconnected`).
    func end() { ended.store(true, ordering: .releasing) }

    func write(_ item: Outgoing, shared: inout SharedEncodings) {
        guard item.push.broadcast != nil else { return send(.notification(encoding.delivery(item))) }
        let key = SharedEncodings.Key(id: item.id, rule: item.rule)
        let bytes = shared.broadcasts[key] ?? GatewayMessage.notification(encoding.delivery(item)).encoded()
        shared.broadcasts[key] = bytes
        send(encoded: bytes)
    }

    private func send(_ message: GatewayMessage) { send(encoded: message.encoded()) }

    private func send(encoded bytes: [UInt8]) {
        let frame = WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(bytes: bytes))
        channel.writeAndFlush(frame, promise: nil)
    }

    func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?) {
        close(reason, reconnectAfterMilliseconds: reconnectAfterMilliseconds, detail: nil)
    }

    /// Says why and sends a WebSocket close frame, then reads on (dropping what the device sends) until
    /// the device answers with its own close frame or closes, or `lingerMilliseconds` pass: closing at
    /// once while the device is still sending would make the kernel reset the connection over the bytes
    /// that arrive after it, and a reset throws away what the device had not read yet — the reason
    /// among it. A device that does not read would never take them: it is closed at once.
    func close(_ reason: ClosingReason, reconnectAfterMilliseconds: Int?, detail: String?) {
        end()
        guard reason != .notReading else { return channel.close(promise: nil) }
        if let detail { send(.error(message: detail)) }
        send(.closing(reason: reason.rawValue, reconnectAfterMilliseconds: reconnectAfterMilliseconds))
        var data = channel.allocator.buffer(capacity: 2)
        data.write(webSocketErrorCode: WebSocketErrorCode(codeNumber: Int(reason.closeCode)))
        let channel = self.channel
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data), promise: nil)
        channel.eventLoop.scheduleTask(in: .milliseconds(lingerMilliseconds)) { channel.close(promise: nil) }
    }
}

/// A delivery as the device protocol writes it (docs/device-protocol.md, `notification`).
struct DeliveryEncoding: Sendable {
    /// How long a woken app has to call its completion handler, told to the device with each wake.
    var deadlineSeconds: Int

    func delivery(_ item: Outgoing) -> Delivery {
        let push = item.push
        return Delivery(
            apnsID: push.id.value, topic: push.topic.value, bundleID: push.bundleID, pushType: push.pushType.rawValue,
            priority: push.priority.rawValue, collapseID: push.collapseID?.value,
            kind: item.wake ? "background" : (push.notificationClass == .alerting ? "alert" : "other"),
            deadlineSeconds: item.wake ? deadlineSeconds : nil,
            rule: item.rule.rawValue, payload: String(decoding: push.payload, as: UTF8.self),
            // A Live Activity update names its activity by the token it was sent to.
            token: push.pushType == .liveactivity && push.broadcast == nil ? push.deviceToken.hex : nil,
            channel: push.broadcast?.channel.value)
    }
}
