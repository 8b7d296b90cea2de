import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import PushModel
import Synchronization

/// Which requests a run sends and when, shared by its connections: request `i` goes on connection
/// `i % connections`, due at the schedule's offset (open loop) or as soon as a stream is free (closed
/// loop), until the count or the time runs out. Immutable; each connection walks its own indices.
struct RunPlan: Sendable {
    var schedule: RateSchedule?
    /// The last index + 1 (the count, or the schedule's size).
    var limit: Int
    /// Closed loop: stop sending after this many nanoseconds.
    var durationNanoseconds: Int64
    var connections: Int
    var streams: Int

    /// Nanoseconds from the start at which request `index` is due (closed loop: now).
    func due(_ index: Int) -> Int64? {
        guard index < limit else { return nil }
        guard let schedule else { return 0 }
        return schedule.offset(of: index)
    }

    /// Whether a connection whose next request is `next` has nothing more to send, `elapsed`
    /// nanoseconds into the run (the count, the schedule, or a closed loop's duration ran out).
    func isDone(next: Int, elapsed: Int64) -> Bool {
        guard due(next) != nil else { return true }
        return schedule == nil && elapsed >= durationNanoseconds
    }
}

/// The current `authorization` header value, refreshed by the runner (APNs wants a new provider token
/// every 20 to 60 minutes); nil when the server authenticates by certificate.
final class AuthorizationSource: Sendable {
    private let value: Mutex<String?>
    init(_ initial: String?) { value = Mutex(initial) }
    var current: String? { value.withLock { $0 } }
    func replace(_ header: String) { value.withLock { $0 = header } }
}

/// What the connections share: the plan, the mix, the targets, the recorder, the start instant.
final class RunShared: Sendable {
    let plan: RunPlan
    let mix: TrafficMix
    let targets: TargetPool
    let authority: String
    let authorization: AuthorizationSource
    let recorder: Mutex<BenchRecorder>
    let start: NIODeadline
    /// Wall-clock time for `apns-expiration` values.
    let wallClock: @Sendable () -> UnixTime

    init(
        plan: RunPlan, mix: TrafficMix, targets: [PushTarget], authority: String, authorization: AuthorizationSource,
        start: NIODeadline, wallClock: @escaping @Sendable () -> UnixTime
    ) {
        self.plan = plan
        self.mix = mix
        self.targets = TargetPool(targets)
        self.authority = authority
        self.authorization = authorization
        self.recorder = Mutex(BenchRecorder(kinds: mix.kinds.count))
        self.start = start
        self.wallClock = wallClock
    }

    func nanoseconds(_ deadline: NIODeadline) -> Int64 { (deadline - start).nanoseconds }
}

/// One connection's progress through the plan, kept across reconnections: its next index.
final class ConnectionCursor: @unchecked Sendable {
    // Confined to the connection's event loop (one connection at a time uses a cursor).
    var next: Int
    var random: FastRandom
    init(slot: Int, seed: UInt64) {
        next = slot
        random = FastRandom(seed: seed &+ UInt64(slot))
    }
}

/// A load-generating HTTP/2 connection at the frame level (no stream channels: at tens of thousands of
/// requests per second the per-stream channel of NIO's multiplexer costs more than the request): it
/// opens streams itself, sends due requests up to the stream limit, reads answers, and records them.
final class BenchConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private struct InFlight {
        var kind: Int
        /// When it was due (open loop) or sent (closed loop): its latency runs from here.
        var from: NIODeadline
        var status = 0
        var body: [UInt8] = []
    }

    private enum Sample {
        case sent(kind: Int, at: NIODeadline)
        case completed(kind: Int, BenchRecorder.Outcome, latency: TimeAmount, at: NIODeadline)
    }

    private let shared: RunShared
    private let cursor: ConnectionCursor
    private let finished: EventLoopPromise<Void>
    private var inFlight: [HTTP2StreamID: InFlight] = [:]
    private var nextStreamID = HTTP2StreamID(1)
    private var serverStreamLimit: Int?
    private var goingAway = false
    private var timer: Scheduled<Void>?
    private var timerAt: NIODeadline?
    /// Samples gathered during one read burst, handed to the shared recorder together.
    private var samples: [Sample] = []

    init(shared: RunShared, cursor: ConnectionCursor, finished: EventLoopPromise<Void>) {
        self.shared = shared
        self.cursor = cursor
        self.finished = finished
    }

    private var limit: Int { min(shared.plan.streams, serverStreamLimit ?? 0) }
    private func planDone(_ now: NIODeadline) -> Bool {
        shared.plan.isDone(next: cursor.next, elapsed: shared.nanoseconds(now))
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            let announced = settings.last { $0.parameter == .maxConcurrentStreams }?.value
            serverStreamLimit = announced ?? serverStreamLimit ?? Int(Int32.max)
            pump(context: context)
        case .headers(let headers):
            guard var request = inFlight[frame.streamID] else { return }
            if request.status == 0, let status = headers.headers.first(name: ":status").flatMap({ Int($0) }) {
                request.status = status
            }
            if headers.endStream {
                complete(frame.streamID, request)
            } else {
                inFlight[frame.streamID] = request
            }
        case .data(let data):
            guard var request = inFlight[frame.streamID] else { return }
            if case .byteBuffer(let buffer) = data.data, request.body.count < 1024 {
                request.body.append(contentsOf: buffer.readableBytesView.prefix(1024 - request.body.count))
            }
            if data.endStream {
                complete(frame.streamID, request)
            } else {
                inFlight[frame.streamID] = request
            }
        case .rstStream(let code):
            if let request = inFlight[frame.streamID] {
                fail(frame.streamID, request, "stream reset (\(code))")
            }
        case .goAway(let lastStreamID, _, _):
            goingAway = true
            for (id, request) in inFlight where id > lastStreamID { fail(id, request, "refused by GOAWAY") }
        default:
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        flushSamples()
        pump(context: context)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        for (id, request) in inFlight { fail(id, request, "connection closed") }
        flushSamples()
        finished.succeed(())
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A stream-level error concerns that stream (NIOHTTP2Handler has reset it); others close.
        if let streamError = error as? NIOHTTP2Errors.StreamError, let request = inFlight[streamError.streamID] {
            fail(streamError.streamID, request, "stream error")
            return
        }
        context.close(promise: nil)
    }

    /// Sends what is due, up to the stream limit; arms a timer for the next due request; closes the
    /// connection when the plan is done and nothing is in flight.
    private func pump(context: ChannelHandlerContext) {
        guard serverStreamLimit != nil, !goingAway else { return }
        let now = NIODeadline.now()
        let elapsed = shared.nanoseconds(now)
        var wrote = false
        while inFlight.count < limit, !planDone(now), let due = shared.plan.due(cursor.next) {
            if shared.plan.schedule != nil, due > elapsed {
                arm(context: context, at: shared.start + .nanoseconds(due))
                break
            }
            let from = shared.plan.schedule == nil ? now : shared.start + .nanoseconds(due)
            send(context: context, from: from, now: now)
            cursor.next += shared.plan.connections
            wrote = true
        }
        if wrote { context.flush() }
        flushSamples()
        if planDone(now), inFlight.isEmpty { context.close(promise: nil) }
    }

    private func send(context: ChannelHandlerContext, from: NIODeadline, now: NIODeadline) {
        let kind = shared.mix.pick(&cursor.random)
        let target = shared.targets.target(for: shared.mix.kinds[kind].payload, at: cursor.next)
        let wallNow = shared.wallClock()
        let headers = shared.mix.headers(
            kind: kind, target: target, authorization: shared.authorization.current, authority: shared.authority,
            now: wallNow, random: &cursor.random)
        let id = nextStreamID
        nextStreamID = HTTP2StreamID(Int32(nextStreamID) + 2)
        inFlight[id] = InFlight(kind: kind, from: from)
        context.write(
            wrapOutboundOut(HTTP2Frame(streamID: id, payload: .headers(.init(headers: headers)))), promise: nil)
        context.write(
            wrapOutboundOut(
                HTTP2Frame(
                    streamID: id,
                    payload: .data(
                        .init(
                            data: .byteBuffer(
                                shared.mix.body(kind, target: target, now: wallNow, sequence: cursor.next)),
                            endStream: true)))),
            promise: nil)
        samples.append(.sent(kind: kind, at: now))
    }

    private func arm(context: ChannelHandlerContext, at deadline: NIODeadline) {
        if let timerAt, timerAt <= deadline { return }
        timer?.cancel()
        timerAt = deadline
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        timer = context.eventLoop.scheduleTask(deadline: deadline) {
            let (handler, context) = loopBound.value
            handler.timerAt = nil
            handler.timer = nil
            handler.pump(context: context)
        }
    }

    private func complete(_ id: HTTP2StreamID, _ request: InFlight) {
        inFlight[id] = nil
        let outcome: BenchRecorder.Outcome =
            request.status == 200
            ? .accepted : .rejected(status: request.status, reason: Self.reason(in: request.body) ?? "-")
        let now = NIODeadline.now()
        samples.append(.completed(kind: request.kind, outcome, latency: now - request.from, at: now))
    }

    private func fail(_ id: HTTP2StreamID, _ request: InFlight, _ cause: String) {
        inFlight[id] = nil
        let now = NIODeadline.now()
        samples.append(.completed(kind: request.kind, .failed(cause), latency: now - request.from, at: now))
    }

    private func flushSamples() {
        guard !samples.isEmpty else { return }
        let shared = self.shared
        shared.recorder.withLock { recorder in
            for sample in samples {
                switch sample {
                case .sent(let kind, let at): recorder.sent(kind: kind, at: shared.nanoseconds(at))
                case .completed(let kind, let outcome, let latency, let at):
                    recorder.completed(
                        kind: kind, outcome, latencyNanoseconds: latency.nanoseconds, at: shared.nanoseconds(at))
                }
            }
        }
        samples.removeAll(keepingCapacity: true)
    }

    /// The `reason` of an APNs error body: `{"reason":"BadDeviceToken"}`.
    static func reason(in body: [UInt8]) -> String? {
        let text = String(decoding: body, as: UTF8.self)
        guard let start = text.range(of: #""reason":""#)?.upperBound,
            let end = text[start...].firstIndex(of: "\"")
        else { return nil }
        return String(text[start..<end])
    }
}
