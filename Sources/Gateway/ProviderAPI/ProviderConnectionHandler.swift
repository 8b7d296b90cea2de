import ConnectionLimits
import Logging
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOSSL
import ProviderAuth
import PushIntake
import PushMetrics
import PushModel

/// The provider API on one HTTP/2 connection, above the codec's seam: requests come up as an
/// `HTTP2RequestReceiver`'s calls and answers go down through an `HTTP2ResponseWriter`, with no child channel,
/// task or frame per stream, which is what keeps the request path fast (see docs/provider-api.md).
///
/// Per stream: HEADERS → the head is decided at once; DATA is collected only for accepted heads (at most
/// the largest payload a push type allows); END_STREAM → the body is decided and the notification handed
/// to the intake; the response is one HEADERS frame (200) or HEADERS + one JSON DATA frame (error).
/// A problem with one stream is answered on that stream only.
///
/// A client that does not read its answers is bounded: once what was written to the connection and not
/// taken by its socket passes `provider.http2.output_limit_bytes` (the channel turns unwritable), the
/// handler stops asking for reads, so the client's further requests wait in its own buffers rather than
/// the gateway's; reading resumes when the output drains to half. A connection stopped for
/// `stalled_close_seconds` is closed.
final class ProviderConnectionHandler: ChannelDuplexHandler {
    /// The pipeline carries no data to or from it (the seam does): it sits there for the connection's
    /// life cycle, its reads (back-pressure), flushes and events.
    typealias InboundIn = Never
    typealias OutboundIn = Never

    private enum Phase {
        /// The head was accepted; the body is being collected.
        case collecting(PushRequestDecider.AcceptedHead)
        /// Rejected on its head; body bytes are read and dropped until the stream ends.
        case rejected(Rejection)
        /// Handed to the intake; waiting for its answer.
        case submitted
        /// A broadcast (`/4/broadcasts/…`), collected whole and decided at the end of its stream.
        case broadcast(BroadcastRequest)
        /// Pushes another node of the fleet routes here (`RouteBatch.path`), with its authorization: the
        /// batch is collected whole and taken at the end of its stream.
        case route(authorization: String?)

        var isSubmitted: Bool {
            if case .submitted = self { return true }
            return false
        }
    }

    /// A class, so that the dictionary holds one reference per stream and collecting the body mutates
    /// it in place instead of copying the state in and out.
    private final class StreamState {
        let responseID: APNsID
        /// When its headers arrived, for the latency metric.
        let started: NIODeadline
        var phase: Phase
        var body: [UInt8] = []
        /// Once submitted: what it is, for the accepted metric.
        var kind: (PushType, NotificationClass, PushTypeMismatch?)?
        /// The declared content-length (RFC 9113 §8.1.1: the DATA must add up to it) and the DATA so far.
        var contentLength: Int?
        var received = 0
        /// A broadcast's stream: answered with `apns-request-id` (its `responseID`) and `apns-unique-id`.
        let isBroadcast: Bool
        /// A route batch's stream: answered with the ids it did not take.
        let isRoute: Bool

        init(responseID: APNsID, started: NIODeadline, phase: Phase) {
            self.responseID = responseID
            self.started = started
            self.phase = phase
            if case .broadcast = phase { isBroadcast = true } else { isBroadcast = false }
            if case .route = phase { isRoute = true } else { isRoute = false }
        }
    }

    private let providerContext: ProviderContext
    /// With the connection's address; a rejected request is logged at debug with its reason and apns-id
    /// (never its authorization header).
    private var logger: Logger
    private var decider: PushRequestDecider?
    private var streams = StreamTable<StreamState>()
    /// Submitted streams by the commit that answers them, oldest commit first.
    private var awaitingCommits: [(commit: EventLoopFuture<Void>, streams: [HTTP2StreamID])] = []
    private var lastStreamID: HTTP2StreamID = .rootStream
    /// Streams open on the connection (by HTTP/2's definition: until both sides have ended them or one has
    /// reset them), answered or not; over `max_concurrent_streams` a new one is refused.
    private var openStreams = 0
    private var needsFlush = false
    private var draining = false
    private var windowOpened = false
    private var lastActivity = NIODeadline.uptimeNanoseconds(0)
    /// The times a read's requests share, read by its first request and forgotten when the read is done
    /// (`channelReadComplete`): the wall clock for the requests' rules and ids, the loop's for when they
    /// arrived — two clock readings a read rather than three a request.
    private var readTimes: (wall: UnixTime, loop: NIODeadline)?
    private var idleCheck: Scheduled<Void>?
    /// A read asked for while the output was over its limit, held until it drains.
    private var readHeld = false
    /// Closes the connection if its output stays over the limit (armed when reading stops).
    private var stalledClose: Scheduled<Void>?
    private var random = FastRandom()
    /// The development environment answers a 200 with `apns-unique-id` too, as APNs's sandbox does.
    private let answersUniqueID: Bool
    /// The codec below: what this handler writes.
    private let writer: any HTTP2ResponseWriter
    /// Its place in the pipeline, for the seam's calls (set while it is in it).
    private var context: ChannelHandlerContext?

    /// Attach it to the codec's seam once added (`ProviderServer.addHTTP2Handlers`).
    init(context: ProviderContext, logger: Logger, writer: any HTTP2ResponseWriter) {
        self.providerContext = context
        self.logger = logger
        answersUniqueID = context.settings.environment == .development
        self.writer = writer
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        logger[metadataKey: "remote"] = "\(context.channel.remoteAddress.map { "\($0)" } ?? "?")"
        if context.channel.isActive { scheduleIdleCheck(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        scheduleIdleCheck(context: context)
        context.fireChannelActive()
    }

    // MARK: Back-pressure

    func read(context: ChannelHandlerContext) {
        guard !context.channel.isWritable else { return context.read() }
        guard !readHeld else { return }
        readHeld = true
        providerContext.metrics.stalled(closed: false)
        let seconds = providerContext.settings.http2.stalledCloseSeconds
        logger.debug("output over its limit: reading stopped", metadata: ["close_after_seconds": "\(seconds)"])
        guard seconds > 0 else { return }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        stalledClose = context.eventLoop.scheduleTask(in: .seconds(seconds)) {
            let (handler, context) = bound.value
            handler.stalledClose = nil
            guard handler.readHeld else { return }
            handler.providerContext.metrics.stalled(closed: true)
            handler.logger.notice(
                "closing a provider connection that reads none of its answers",
                metadata: ["stalled_seconds": "\(seconds)", "unanswered_streams": "\(handler.streams.count)"])
            context.close(promise: nil)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, readHeld {
            readHeld = false
            stalledClose?.cancel()
            stalledClose = nil
            context.read()
        }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        stalledClose?.cancel()
        idleCheck?.cancel()
        streams.removeAll()
        awaitingCommits.removeAll()
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is ProviderDrainEvent:
            beginDraining(context: context, reason: .shutdown)
        case is ConnectionEstablished:
            break
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    // MARK: From the codec's seam

    func connectionEstablished() {
        guard let context else { return }
        establish(context: context)
    }

    func receivedHead(_ head: ReceivedHead) {
        // Client stream ids only grow (the codec has refused any other).
        guard let context, head.streamID > lastStreamID else { return }
        openStreams += 1
        startStream(head.streamID, block: head.takeBlock(), endStream: head.endStream, context: context)
    }

    func receivedBody(_ stream: HTTP2StreamID, _ bytes: ByteBuffer, endStream: Bool) {
        guard let context else { return }
        receiveData(stream, bytes, endStream: endStream, context: context)
    }

    /// RFC 9113 §8.1: trailers carry no pseudo-header, and end the stream; then they end the request.
    func receivedTrailers(_ stream: HTTP2StreamID, _ fields: HPACKHeaders, endStream: Bool) {
        guard let context, streams[stream] != nil else { return }
        let malformed =
            fields.contains(where: { $0.name.utf8.first == UInt8(ascii: ":") })
            ? "a pseudo-header in trailers" : endStream ? nil : "trailers without END_STREAM"
        if let malformed {
            streams.removeValue(forKey: stream)
            resetMalformed(stream, because: malformed, context: context)
        } else {
            finishStream(stream, context: context)
        }
    }

    func streamReset(_ stream: HTTP2StreamID) {
        streams.removeValue(forKey: stream)
    }

    /// Every stream closed was opened by a head this handler read (the server opens none), so this keeps
    /// `openStreams` equal to the codec's count of open streams.
    func streamClosed(_ stream: HTTP2StreamID) {
        openStreams = max(0, openStreams - 1)
    }

    /// The first frame (the client's SETTINGS) follows a complete preface (and TLS handshake): the
    /// connection is established, the door's handshake timer stops, and the receive window opens.
    private func establish(context: ChannelHandlerContext) {
        guard !windowOpened else { return }
        context.pipeline.fireUserInboundEventTriggered(ConnectionEstablished())
        openConnectionWindow(context: context)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        readTimes = nil
        flushIfNeeded(context: context)
        context.fireChannelReadComplete()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        logger.debug("provider connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    /// Only while a read is handed up (what starts or finishes a stream): the read's end forgets them.
    private func times(context: ChannelHandlerContext) -> (wall: UnixTime, loop: NIODeadline) {
        if let readTimes { return readTimes }
        let times = (wall: providerContext.clock(), loop: context.eventLoop.now)
        readTimes = times
        return times
    }

    private func startStream(
        _ id: HTTP2StreamID, block: RequestHeaderBlock, endStream: Bool, context: ChannelHandlerContext
    ) {
        let (now, arrived) = times(context: context)
        lastActivity = arrived
        lastStreamID = id
        let limits = providerContext.settings.http2.streamLimits
        if openStreams > limits.concurrentStreams {
            // RFC 9113 §5.1.2: a stream over the advertised limit is refused alone (the client may retry it).
            return refuse(id, .concurrentStreams, endStream: endStream, context: context)
        }
        if block.listSize > limits.headerListSize {
            // RFC 9113 §10.5.1: answered 431 on this stream; the session decoded the block, so HPACK stays in step.
            return refuse(id, .headerListSize, endStream: endStream, context: context)
        }
        if let malformed = block.rules.malformed {
            // RFC 9113 §8.1.1: a malformed request is a stream error of type PROTOCOL_ERROR (this stream only).
            return resetMalformed(id, because: malformed, context: context)
        }
        // The id is echoed exactly as sent, on errors too; a generated one is lower case.
        if let path = block.head.path, path.hasPrefix(BroadcastRequest.pathPrefix) {
            return startBroadcast(id, block: block, now: now, endStream: endStream, context: context)
        }
        if block.head.path == RouteBatch.path {
            let state = StreamState(
                responseID: APNsID.generate(at: now, using: &random), started: lastActivity,
                phase: .route(authorization: block.head.authorization))
            state.contentLength = block.rules.contentLength
            streams.insert(state, for: id)
            if endStream { finishStream(id, context: context) }
            return
        }
        let responseID = block.sentID.flatMap { APNsID(header: $0) } ?? APNsID.generate(at: now, using: &random)

        let phase: Phase
        var exhausted = false
        if draining || providerContext.isDraining {
            phase = .rejected(Rejection(.shutdown))
        } else {
            makeDecider(context: context)
            switch decider!.decideHead(block.head, now: now) {
            case .success(let accepted):
                phase = .collecting(accepted)
            case .failure(let rejection):
                phase = .rejected(rejection)
                exhausted = decider!.authenticationExhausted
            }
        }
        let state = StreamState(responseID: responseID, started: lastActivity, phase: phase)
        // Before an END_STREAM on these headers is handled: a declared length with no DATA is malformed too.
        state.contentLength = block.rules.contentLength
        streams.insert(state, for: id)
        // Too many bad tokens: this stream is answered, then the connection goes (GOAWAY).
        if exhausted { beginDraining(context: context, reason: .invalidProviderToken) }
        if endStream { finishStream(id, context: context) }
    }

    /// A broadcast's stream: its request id is the one sent (`apns-request-id`) or a new one.
    private func startBroadcast(
        _ id: HTTP2StreamID, block: RequestHeaderBlock, now: UnixTime, endStream: Bool, context: ChannelHandlerContext
    ) {
        let request = BroadcastRequest(head: block.head)
        let responseID = request.requestID.flatMap { APNsID(header: $0) } ?? APNsID.generate(at: now, using: &random)
        let state = StreamState(responseID: responseID, started: lastActivity, phase: .broadcast(request))
        state.contentLength = block.rules.contentLength
        streams.insert(state, for: id)
        if endStream { finishStream(id, context: context) }
    }

    private func receiveData(_ id: HTTP2StreamID, _ buffer: ByteBuffer, endStream: Bool, context: ChannelHandlerContext)
    {
        guard let state = streams[id] else { return }
        state.received += buffer.readableBytes
        if let declared = state.contentLength, state.received > declared {
            streams.removeValue(forKey: id)
            return resetMalformed(id, because: "more DATA than its content-length", context: context)
        }
        if case .broadcast(var request) = state.phase {
            request.append(buffer.readableBytesView)
            state.phase = .broadcast(request)
        }
        if state.isRoute {
            guard state.body.count + buffer.readableBytes <= RouteBatch.largestBody else {
                streams.removeValue(forKey: id)
                respondToRoute(id, status: 413, text: "a route batch holds at most \(RouteBatch.largestBody) bytes")
                if !endStream {
                    writer.reset(id, .noError)
                    context.flush()
                }
                return
            }
            state.body.append(contentsOf: buffer.readableBytesView)
        }
        if case .collecting = state.phase {
            if state.body.count + buffer.readableBytes > PushType.largestPayloadSize {
                // Answer now: the client may still be sending, and its stream window will not be reopened.
                streams.removeValue(forKey: id)
                respond(id, state, result: .rejected(Rejection(.payloadTooLarge)), context: context)
                if !endStream {
                    // The answer goes out first: the writer takes it out of the session before the reset.
                    writer.reset(id, .noError)
                    context.flush()
                }
                return
            }
            state.body.append(contentsOf: buffer.readableBytesView)
        }
        if endStream { finishStream(id, context: context) }
    }

    private func finishStream(_ id: HTTP2StreamID, context: ChannelHandlerContext) {
        guard let state = streams[id] else { return }
        if let declared = state.contentLength, state.received != declared, !state.phase.isSubmitted {
            streams.removeValue(forKey: id)
            return resetMalformed(id, because: "less DATA than its content-length", context: context)
        }
        switch state.phase {
        case .rejected(let rejection):
            streams.removeValue(forKey: id)
            respond(id, state, result: .rejected(rejection), context: context)
        case .submitted:
            return
        case .broadcast(let request):
            finishBroadcast(id, state, request, context: context)
        case .route(let authorization):
            finishRoute(id, state, authorization: authorization, context: context)
        case .collecting(let head):
            let now = times(context: context).wall
            let notification: PushNotification
            switch decider!.decideBody(head, body: state.body, id: state.responseID, now: now) {
            case .success(let value): notification = value
            case .failure(let rejection):
                streams.removeValue(forKey: id)
                respond(id, state, result: .rejected(rejection), context: context)
                return
            }
            state.kind = (notification.pushType, notification.notificationClass, notification.mismatch)
            handle(
                providerContext.intake.submit(notification, on: context.eventLoop), stream: id, state, context: context)
        }
    }

    /// The connection's decider, made when its first request needs it.
    private func makeDecider(context: ChannelHandlerContext) {
        guard decider == nil else { return }
        decider = PushRequestDecider(
            context: providerContext, identity: identity(context: context),
            address: context.channel.remoteAddress?.ipAddress ?? "?")
    }

    /// What the intake said of a submitted stream: answered now, or once its future (or commit) completes.
    private func handle(
        _ reply: IntakeReply, stream id: HTTP2StreamID, _ state: StreamState, context: ChannelHandlerContext
    ) {
        switch reply {
        case .now(let result):
            streams.removeValue(forKey: id)
            respond(id, state, result: result, context: context)
        case .later(let future):
            state.phase = .submitted
            state.body = []
            let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
            future.hop(to: context.eventLoop).whenComplete { outcome in
                let (handler, context) = bound.value
                handler.intakeAnswered(id, outcome: outcome, context: context)
            }
        case .afterCommit(let commit):
            state.phase = .submitted
            state.body = []
            awaitCommit(commit, stream: id, context: context)
        }
    }

    private func finishBroadcast(
        _ id: HTTP2StreamID, _ state: StreamState, _ request: BroadcastRequest, context: ChannelHandlerContext
    ) {
        func refuse(_ reason: BroadcastReason) {
            streams.removeValue(forKey: id)
            respondToBroadcast(id, state, refusal: reason, context: context)
        }
        if draining || providerContext.isDraining { return refuse(.shutdown) }
        guard let broadcasts = providerContext.broadcasts else { return refuse(.featureNotEnabled) }
        makeDecider(context: context)
        // The broadcast's apns-id in the store and on the devices: its request id.
        let decided = decider!.decideBroadcast(
            request, id: state.responseID, channels: broadcasts.channels, now: times(context: context).wall)
        switch decided {
        case .failure(let reason): return refuse(reason)
        case .success(let submission):
            handle(broadcasts.intake.broadcast(submission, on: context.eventLoop), stream: id, state, context: context)
        }
    }

    /// A route batch from another node: taken by the hub at once (each push decided there), answered 200
    /// with the pushes' outcomes (`RouteAnswer`) once the new ones it took are durable; refused when this
    /// node takes no routes (404), the token is not the fleet's (403), or the body is no batch (400).
    private func finishRoute(
        _ id: HTTP2StreamID, _ state: StreamState, authorization: String?, context: ChannelHandlerContext
    ) {
        func refuse(_ status: Int, _ text: String) {
            streams.removeValue(forKey: id)
            respondToRoute(id, status: status, text: text)
        }
        if draining || providerContext.isDraining { return refuse(503, "shutting down") }
        guard let routes = providerContext.routes else { return refuse(404, "this node takes no routed pushes") }
        guard let node = routes.tokens.node(authorization: authorization, now: times(context: context).wall) else {
            return refuse(403, "no token of this fleet")
        }
        let pushes: [RoutedPush]
        do {
            pushes = try RouteBatch.decode(context.channel.allocator.buffer(bytes: state.body))
        } catch {
            return refuse(400, error.description)
        }
        // Kept among the streams until answered: a draining connection waits for it.
        state.phase = .submitted
        state.body = []
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        routes.intake.routed(pushes, from: node, on: context.eventLoop).hop(to: context.eventLoop).whenComplete {
            outcome in
            let (handler, _) = bound.value
            guard handler.streams.removeValue(forKey: id) != nil else { return }
            let outcomes = (try? outcome.get()) ?? Array(repeating: .untaken, count: pushes.count)
            handler.respondToRoute(id, status: 200, text: RouteAnswer.encode(outcomes))
        }
    }

    private func respondToRoute(_ id: HTTP2StreamID, status: Int, text: String) {
        guard let context else { return }
        if status != 200 {
            logger.warning("route batch refused", metadata: ["status": "\(status)", "reason": "\(text)"])
        }
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: String(status))
        headers.add(name: "content-type", value: "text/plain")
        let closesConnection = draining && streams.isEmpty
        let written: EventLoopPromise<Void>? = closesConnection ? context.eventLoop.makePromise() : nil
        writer.respond(
            id, headers, body: text.isEmpty ? nil : context.channel.allocator.buffer(string: text), promise: written)
        answered(closing: written, context: context)
    }

    /// Streams answered by the same commit wait on it together: one callback per commit and connection,
    /// not one per request (the store's writer hands out one future per commit and event loop).
    private func awaitCommit(_ commit: EventLoopFuture<Void>, stream id: HTTP2StreamID, context: ChannelHandlerContext)
    {
        if let last = awaitingCommits.indices.last, awaitingCommits[last].commit === commit {
            awaitingCommits[last].streams.append(id)
            return
        }
        awaitingCommits.append((commit, [id]))
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        commit.hop(to: context.eventLoop).whenComplete { outcome in
            let (handler, context) = bound.value
            handler.committed(commit, outcome: outcome, context: context)
        }
    }

    private func committed(
        _ commit: EventLoopFuture<Void>, outcome: Result<Void, any Error>, context: ChannelHandlerContext
    ) {
        guard let index = awaitingCommits.firstIndex(where: { $0.commit === commit }) else { return }
        let result = outcome.map { IntakeResult.accepted }
        for id in awaitingCommits.remove(at: index).streams {
            intakeAnswered(id, outcome: result, context: context)
        }
    }

    private func intakeAnswered(
        _ id: HTTP2StreamID, outcome: Result<IntakeResult, any Error>, context: ChannelHandlerContext
    ) {
        // A stream the client reset meanwhile gets no answer.
        guard let state = streams.removeValue(forKey: id) else { return }
        let result: IntakeResult
        switch outcome {
        case .success(let value): result = value
        case .failure(let error):
            // Dropped unattempted after the store's wait limit: 503, which a client retries; a commit that
            // failed: 500.
            result = .rejected(Rejection(error is StoreWaitExpired ? .serviceUnavailable : .internalServerError))
        }
        // Not flushed here: the store answers a whole commit's requests in one event-loop task, and the
        // flush `respond` queues runs after it, once for all of them.
        respond(id, state, result: result, context: context)
    }

    /// Resets a malformed request's stream with PROTOCOL_ERROR; the connection's other streams go on.
    private func resetMalformed(_ id: HTTP2StreamID, because reason: String, context: ChannelHandlerContext) {
        logger.debug("malformed request", metadata: ["stream": "\(id)", "reason": "\(reason)"])
        providerContext.metrics.malformed()
        writer.reset(id, .protocolError)
        context.flush()
    }

    /// Refuses one stream over a limit and keeps the connection: REFUSED_STREAM for a stream over the
    /// concurrent-stream limit (nothing of it was processed, so the client may retry it), 431 for an
    /// oversized header list (then RST_STREAM NO_ERROR if the client is still sending, RFC 9113 §8.1).
    private func refuse(
        _ id: HTTP2StreamID, _ limit: StreamRefusal, endStream: Bool, context: ChannelHandlerContext
    ) {
        logger.debug("stream refused", metadata: ["stream": "\(id)", "limit": "\(limit.rawValue)"])
        providerContext.metrics.refused(limit)
        switch limit {
        case .concurrentStreams:
            writer.reset(id, .refusedStream)
        case .headerListSize:
            writer.respond(id, [":status": "431"], body: nil, promise: nil)
            if !endStream { writer.reset(id, .noError) }
        }
        context.flush()
    }

    // MARK: Responses

    private func respond(
        _ id: HTTP2StreamID, _ state: StreamState, result: IntakeResult, context: ChannelHandlerContext
    ) {
        if state.isBroadcast {
            var refusal: BroadcastReason?
            if case .rejected(let rejection) = result {
                refusal = BroadcastReason(rawValue: rejection.reason.rawValue) ?? .internalServerError
            }
            return respondToBroadcast(id, state, refusal: refusal, context: context)
        }
        let responseID = state.responseID
        let metrics = providerContext.metrics
        switch result {
        case .accepted:
            metrics.answered(rejectedFor: nil, nanoseconds: (NIODeadline.now() - state.started).nanoseconds)
            if let (type, kind, mismatch) = state.kind {
                metrics.accepted(type, kind)
                if let mismatch { metrics.mismatched(mismatch) }
            }
        case .rejected(let rejection):
            metrics.answered(
                rejectedFor: rejection.reason, nanoseconds: (NIODeadline.now() - state.started).nanoseconds)
            logger.debug(
                "request rejected",
                metadata: [
                    "status": "\(rejection.reason.status)", "reason": "\(rejection.reason.rawValue)",
                    "apns_id": "\(responseID.value)", "stream": "\(Int(id))",
                ])
        }
        // The last answer of a draining connection closes it once written (a close would drop it unflushed).
        let closesConnection = draining && streams.isEmpty
        let written: EventLoopPromise<Void>? = closesConnection ? context.eventLoop.makePromise() : nil
        switch result {
        case .accepted:
            // The ids written from their bits, no string made (the `apns-unique-id` in development only).
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 72) { text in
                responseID.write(into: text)
                let apnsID = UniqueField(
                    HeaderName.apnsID.wireName,
                    UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: text[..<36])))
                guard answersUniqueID else { return writer.respondOK(id, apnsID, nil, promise: written) }
                responseID.uniqueID.write(into: UnsafeMutableBufferPointer(rebasing: text[36...]))
                writer.respondOK(
                    id, apnsID,
                    UniqueField(
                        responseUniqueIDWireName,
                        UnsafeRawBufferPointer(UnsafeMutableBufferPointer(rebasing: text[36...]))),
                    promise: written)
            }
        case .rejected(let rejection):
            let headers: HPACKHeaders = [
                ":status": ErrorBodies.statusText[rejection.reason]!, responseAPNsIDHeader: responseID.value,
                "content-type": "application/json",
            ]
            let body = ErrorBodies.body(for: rejection, allocator: context.channel.allocator)
            writer.respond(id, headers, body: body, promise: written)
        }
        answered(closing: written, context: context)
    }

    /// A broadcast's answer: 200 with `apns-request-id` and `apns-unique-id` ([BC]), or Apple's status and
    /// reason with `apns-request-id`.
    private func respondToBroadcast(
        _ id: HTTP2StreamID, _ state: StreamState, refusal: BroadcastReason?, context: ChannelHandlerContext
    ) {
        let requestID = state.responseID
        var headers = HPACKHeaders()
        var body: ByteBuffer?
        if let refusal {
            logger.debug(
                "broadcast refused",
                metadata: [
                    "status": "\(refusal.status)", "reason": "\(refusal.rawValue)", "request_id": "\(requestID)",
                ])
            headers.add(name: ":status", value: String(refusal.status))
            headers.add(name: "apns-request-id", value: requestID.value)
            headers.add(name: "content-type", value: "application/json")
            body = context.channel.allocator.buffer(string: #"{"reason":"\#(refusal.rawValue)"}"#)
        } else {
            headers.add(name: ":status", value: "200")
            headers.add(name: "apns-request-id", value: requestID.value, indexing: .nonIndexable)
            headers.add(name: responseUniqueIDHeader, value: requestID.uniqueID.value, indexing: .nonIndexable)
        }
        let closesConnection = draining && streams.isEmpty
        let written: EventLoopPromise<Void>? = closesConnection ? context.eventLoop.makePromise() : nil
        writer.respond(id, headers, body: body, promise: written)
        answered(closing: written, context: context)
    }

    /// After an answer was written: the last answer of a draining connection (`closing`, its write's
    /// promise) is flushed and closes the connection once written; any other waits for the batch's flush.
    private func answered(closing written: EventLoopPromise<Void>?, context: ChannelHandlerContext) {
        guard let written else { return scheduleFlush(context: context) }
        flushIfNeeded(context: context)
        context.flush()
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
    }

    /// Responses are flushed once per read batch (in `channelReadComplete`). HTTP/2 can also deliver frames
    /// outside a read batch (re-entrantly, or from buffered frames), so a flush is also queued on the event
    /// loop: whichever comes first flushes, the other finds nothing to do.
    private func scheduleFlush(context: ChannelHandlerContext) {
        guard !needsFlush else { return }
        needsFlush = true
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = bound.value
            handler.flushIfNeeded(context: context)
        }
    }

    private func flushIfNeeded(context: ChannelHandlerContext) {
        guard needsFlush else { return }
        needsFlush = false
        context.flush()
    }

    // MARK: Identity

    private func identity(context: ChannelHandlerContext) -> ConnectionIdentity {
        providerContext.identity(of: context.channel)
    }

    // MARK: Flow control

    /// The connection's receive window, from RFC 9113's 65,535 octets to the configured size; the session
    /// keeps it open from there (a WINDOW_UPDATE once half is consumed).
    private func openConnectionWindow(context: ChannelHandlerContext) {
        windowOpened = true
        let increment = providerContext.settings.http2.connectionWindowSize - 65_535
        guard increment > 0 else { return }
        writer.widenConnectionWindow(by: increment)
        scheduleFlush(context: context)
    }

    // MARK: Idle timeout and draining

    private func scheduleIdleCheck(context: ChannelHandlerContext) {
        let seconds = providerContext.settings.http2.idleTimeoutSeconds
        guard seconds > 0, idleCheck == nil else { return }
        lastActivity = context.eventLoop.now
        armIdleCheck(after: .seconds(seconds), context: context)
    }

    private func armIdleCheck(after delay: TimeAmount, context: ChannelHandlerContext) {
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        idleCheck = context.eventLoop.scheduleTask(in: delay) {
            let (handler, context) = bound.value
            let timeout = TimeAmount.seconds(handler.providerContext.settings.http2.idleTimeoutSeconds)
            let idleFor = context.eventLoop.now - handler.lastActivity
            if handler.streams.isEmpty, idleFor >= timeout {
                handler.beginDraining(context: context, reason: .idleTimeout)
            } else if !handler.streams.isEmpty {
                // A stream still open (a body still coming, an answer awaited): looked at again a whole
                // timeout later, not every 10 ms (the http2-connection fuzz target found a connection whose
                // open stream never ended spinning here).
                handler.armIdleCheck(after: timeout, context: context)
            } else {
                handler.armIdleCheck(after: max(timeout - idleFor, .milliseconds(10)), context: context)
            }
        }
    }

    private func beginDraining(context: ChannelHandlerContext, reason: RejectionReason) {
        guard !draining else { return }
        draining = true
        idleCheck?.cancel()
        var debugData = context.channel.allocator.buffer(capacity: 32)
        debugData.writeString(Rejection(reason).body)
        writer.goAway(lastStream: lastStreamID, .noError, debugData: debugData)
        context.flush()
        if streams.isEmpty { context.close(promise: nil) }
    }
}

/// Sent down a provider connection's pipeline to begin a graceful shutdown of that connection.
struct ProviderDrainEvent: Sendable {}

/// The error bodies, built once per reason; a 410 carries its timestamp and is built per response.
enum ErrorBodies {
    static let statusText: [RejectionReason: String] = Dictionary(
        uniqueKeysWithValues: RejectionReason.allCases.map { ($0, String($0.status)) })

    private static let bodies: [RejectionReason: ByteBuffer] = Dictionary(
        uniqueKeysWithValues: RejectionReason.allCases.map { ($0, ByteBuffer(string: Rejection($0).body)) })

    static func body(for rejection: Rejection, allocator: ByteBufferAllocator) -> ByteBuffer {
        if rejection.timestampMilliseconds != nil { return allocator.buffer(string: rejection.body) }
        return bodies[rejection.reason]!
    }
}

extension ProviderConnectionHandler: HTTP2RequestReceiver {}
