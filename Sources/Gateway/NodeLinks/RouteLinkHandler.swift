import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import PushIntake
import PushModel

/// One push waiting to reach its owner, and who waits for the owner's answer.
struct RouteEntry {
    var push: RoutedPush
    /// Where `answered` runs (nil: wherever the answer is read).
    var loop: (any EventLoop)?
    /// Called once with what the owner did with it; `.untaken` when it did not reach the owner (the caller
    /// then goes through the store).
    var answered: @Sendable (RouteOutcome) -> Void

    /// Answers `entries`, the outcome of each from `outcome` (by index): on its own loop, in order, one
    /// task a loop for all of them (a batch's pushes came from many provider connections, and a promise
    /// completed from another loop costs that loop a task each).
    static func answer(_ entries: [RouteEntry], _ outcome: (Int) -> RouteOutcome) {
        var elsewhere: [ObjectIdentifier: (loop: any EventLoop, answers: [() -> Void])] = [:]
        for (index, entry) in entries.enumerated() {
            let (answered, result) = (entry.answered, outcome(index))
            guard let loop = entry.loop, !loop.inEventLoop else {
                answered(result)
                continue
            }
            elsewhere[ObjectIdentifier(loop), default: (loop, [])].answers.append { answered(result) }
        }
        for (loop, answers) in elsewhere.values {
            let bound = UnsafeTransfer(answers)
            loop.execute { for answer in bound.value { answer() } }
        }
    }

    /// None of `entries` reached the owner.
    static func fail(_ entries: [RouteEntry]) { answer(entries) { _ in .untaken } }
}

/// Closures made on one thread and run, all of them, on one other (`RouteEntry.answer`).
private struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// The sending side of a link to another node at the frame level (no stream channel per batch): each
/// batch is one POST of `RouteBatch.path` on a new stream; its answer (200 with the outcomes, `RouteAnswer`)
/// or its failure (a reset, GOAWAY, the connection lost, no answer within the timeout: each push untaken)
/// settles its pushes.
final class RouteLinkHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct InFlight {
        var entries: [RouteEntry]
        var status = 0
        var body: [UInt8] = []
        var timer: Scheduled<Void>?
    }

    private let address: NodeAddress
    private let timeout: TimeAmount
    private let logger: Logger
    /// One batch in flight at a time: the owner takes batches in the order their streams end, and a
    /// small batch would overtake a large one, where the policy's decisions depend on the order pushes
    /// came in. Pushes queued meanwhile go together in the next batch (one round trip for all of them).
    private let streamLimit = 1
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    private var context: ChannelHandlerContext?
    private var goingAway = false
    /// The connection is up and HTTP/2's preface sent (a connect's promise completes before that).
    private var active = false
    /// Batches waiting for a free stream, oldest first, with their encoded size.
    private var waiting: [(entries: [RouteEntry], bytes: Int)] = []
    /// The fleet's token the link presents (the newest its node made).
    private var authorization = ""

    init(address: NodeAddress, timeout: TimeAmount, logger: Logger) {
        self.address = address
        self.timeout = timeout
        self.logger = logger
    }

    /// Whether new batches can go on this connection.
    var isUsable: Bool { context != nil && !goingAway }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        failAll()
    }

    /// Queues `entries` for the owner, in batches of at most `RouteBatch.largestBody` bytes (added to the
    /// last batch not yet sent while it has room), and sends what it can (on the loop).
    func send(_ entries: [RouteEntry], authorization: String) {
        guard !goingAway, context != nil else {
            return RouteEntry.fail(entries)
        }
        self.authorization = authorization
        for entry in entries {
            let added = RouteBatch.size(of: entry.push)
            if let last = waiting.indices.last, waiting[last].bytes + added <= RouteBatch.largestBody {
                waiting[last].entries.append(entry)
                waiting[last].bytes += added
            } else {
                waiting.append((entries: [entry], bytes: 8 + added))
            }
        }
        pump()
    }

    private func pump() {
        guard let context, active else { return }
        var wrote = false
        while inFlight.count < streamLimit, !goingAway, !waiting.isEmpty {
            write(waiting.removeFirst().entries, authorization: authorization, context: context)
            wrote = true
        }
        if wrote { context.flush() }
    }

    private func write(_ entries: [RouteEntry], authorization: String, context: ChannelHandlerContext) {
        let id = nextStreamID
        nextStreamID = HTTP2StreamID(Int32(nextStreamID) + 2)
        let headers: HPACKHeaders = [
            ":method": "POST", ":scheme": address.tls ? "https" : "http", ":path": RouteBatch.path,
            ":authority": address.authority, "authorization": authorization,
            "content-type": "application/octet-stream",
        ]
        let body = RouteBatch.encode(entries.map(\.push), allocator: context.channel.allocator)
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let timer = context.eventLoop.scheduleTask(in: timeout) {
            let (handler, context) = bound.value
            guard handler.inFlight[id] != nil else { return }
            handler.settle(id, outcomes: nil)
            context.writeAndFlush(handler.wrapOutboundOut(HTTP2Frame(streamID: id, payload: .rstStream(.cancel))))
                .whenFailure { _ in }
        }
        inFlight[id] = InFlight(entries: entries, timer: timer)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .data(.init(data: .byteBuffer(body), endStream: true)))),
            promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .headers(let headers):
            guard var request = inFlight[frame.streamID] else { return }
            if request.status == 0, let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                request.status = status
            }
            inFlight[frame.streamID] = request
            if headers.endStream { finish(frame.streamID) }
        case .data(let data):
            guard var request = inFlight[frame.streamID] else { return }
            if case .byteBuffer(let buffer) = data.data { request.body.append(contentsOf: buffer.readableBytesView) }
            inFlight[frame.streamID] = request
            if data.endStream { finish(frame.streamID) }
        case .rstStream:
            settle(frame.streamID, outcomes: nil)
        case .goAway(let lastStreamID, _, _):
            goingAway = true
            for id in inFlight.keys where id > lastStreamID { settle(id, outcomes: nil) }
            failWaiting()
        default:
            break
        }
    }

    func channelActive(context: ChannelHandlerContext) {
        active = true
        context.fireChannelActive()
        pump()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        pump()
        context.fireChannelReadComplete()
    }

    func channelInactive(context: ChannelHandlerContext) {
        goingAway = true
        active = false
        failAll()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream's error concerns that stream (NIOHTTP2Handler has reset it); any other closes the link.
        if let streamError = error as? NIOHTTP2Errors.StreamError {
            settle(streamError.streamID, outcomes: nil)
            return
        }
        context.close(promise: nil)
    }

    /// The answer is in: 200 settles each push with its outcome; anything else leaves them all untaken.
    private func finish(_ id: HTTP2StreamID) {
        guard let request = inFlight[id] else { return }
        guard request.status == 200 else {
            logger.warning(
                "a node refused routed pushes; they go through the store",
                metadata: [
                    "address": "\(address)", "status": "\(request.status)", "pushes": "\(request.entries.count)",
                    "reason": "\(String(decoding: request.body.prefix(200), as: UTF8.self))",
                ])
            return settle(id, outcomes: nil)
        }
        let body = String(decoding: request.body, as: UTF8.self)
        settle(id, outcomes: RouteAnswer.decode(body, count: request.entries.count))
    }

    /// Settles a batch: `outcomes` nil, every push untaken.
    private func settle(_ id: HTTP2StreamID, outcomes: [RouteOutcome]?) {
        guard let request = inFlight.removeValue(forKey: id) else { return }
        request.timer?.cancel()
        RouteEntry.answer(request.entries) { outcomes?[$0] ?? .untaken }
    }

    private func failAll() {
        for id in Array(inFlight.keys) { settle(id, outcomes: nil) }
        failWaiting()
    }

    private func failWaiting() {
        RouteEntry.fail(waiting.flatMap(\.entries))
        waiting = []
    }
}
