import NIOCore
import NIOHTTP1

/// One connection: requests answered in turn; an item is written in chunks, paced when rated, each
/// chunk after the last was flushed (the connection's backpressure).
final class ItemStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let chunk = 16 * 1024
    let server: OriginServer
    private var head: HTTPRequestHead?
    private var sending = false

    init(server: OriginServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let value): head = value
        case .body: break
        case .end:
            guard let head, !sending else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        server.log.began()
        let keepAlive = head.isKeepAlive
        switch server.answer(head) {
        case .json(let status, let body):
            var headers = HTTPHeaders([("content-type", "application/json"), ("content-length", "\(body.utf8.count)")])
            if !keepAlive { headers.add(name: "connection", value: "close") }
            context.write(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(string: body)))), promise: nil)
            finish(head, status: Int(status.code), bytes: body.utf8.count, keepAlive: keepAlive, context: context)
        case .item(let version, let from, let rate):
            let length = version.bytes - from
            var headers = HTTPHeaders([
                ("content-type", "application/octet-stream"), ("content-length", "\(length)"),
                ("accept-ranges", "bytes"),
            ])
            if from > 0 {
                headers.add(name: "content-range", value: "bytes \(from)-\(version.bytes - 1)/\(version.bytes)")
            }
            if !keepAlive { headers.add(name: "connection", value: "close") }
            let status: HTTPResponseStatus = from > 0 ? .partialContent : .ok
            context.writeAndFlush(
                wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))),
                promise: nil)
            sending = true
            send(version, at: from, rate: rate, head: head, status: Int(status.code), sent: 0, context: context)
        }
    }

    /// Writes the item from `offset` a chunk at a time; at a rate, each chunk waits its share of a second.
    private func send(
        _ version: ContentCatalog.Version, at offset: Int, rate: Int, head: HTTPRequestHead, status: Int, sent: Int,
        context: ChannelHandlerContext
    ) {
        guard context.channel.isActive else {
            // The device went away (a cancelled transfer): logged with what it got.
            server.record(head, status: status, bytes: sent)
            return
        }
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        if server.itemsHeld {
            context.eventLoop.scheduleTask(in: .milliseconds(10)) {
                let (handler, context) = loopBound.value
                handler.send(version, at: offset, rate: rate, head: head, status: status, sent: sent, context: context)
            }
            return
        }
        let count = min(Self.chunk, version.bytes - offset)
        guard count > 0 else {
            sending = false
            finish(head, status: status, bytes: sent, keepAlive: head.isKeepAlive, context: context)
            return
        }
        var buffer = context.channel.allocator.buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { pointer in
            for index in 0..<count { pointer[index] = ContentCatalog.byte(offset + index, of: version.version) }
            return count
        }
        let written = context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(buffer))))
        written.whenFailure { [server] _ in
            // The device went away mid-item (a cancelled transfer): logged with what it got.
            server.record(head, status: status, bytes: sent)
        }
        written.whenSuccess {
            let (handler, context) = loopBound.value
            guard rate > 0 else {
                return handler.send(
                    version, at: offset + count, rate: rate, head: head, status: status, sent: sent + count,
                    context: context)
            }
            let wait = Int64(count) * 1_000_000 / Int64(rate)
            context.eventLoop.scheduleTask(in: .microseconds(wait)) {
                let (handler, context) = loopBound.value
                handler.send(
                    version, at: offset + count, rate: rate, head: head, status: status, sent: sent + count,
                    context: context)
            }
        }
    }

    private func finish(
        _ head: HTTPRequestHead, status: Int, bytes: Int, keepAlive: Bool, context: ChannelHandlerContext
    ) {
        server.record(head, status: status, bytes: bytes)
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
