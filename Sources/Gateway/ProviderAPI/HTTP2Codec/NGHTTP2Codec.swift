import CNGHTTP2
import NIOCore
import NIOHPACK
import NIOHTTP2

/// The provider API's HTTP/2 codec, on libnghttp2: bytes in and out on the transport's side; on the request
/// side, the seam's two protocols — what the client sent goes up to an `HTTP2RequestReceiver`
/// (`ProviderConnectionHandler`, which attaches when it is added), what it writes comes down as an
/// `HTTP2ResponseWriter` — by direct calls, with no `HTTP2Frame` between them.
///
/// libnghttp2 does the framing, HPACK, flow control and RFC 9113's protocol checks in C. Its callbacks only
/// collect what a read produced (`Inbound`); it is handed up after `nghttp2_session_mem_recv`
/// returns, so no Swift code runs inside the C library's call stack but this collecting, and everything
/// stays on the channel's event loop. What the handler writes is submitted to the session; its bytes are
/// taken (`nghttp2_session_mem_send`) and written when the handler flushes or a read is done.
final class NGHTTP2Codec: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    /// Nothing goes up or comes down the pipeline as data: the seam's calls carry it.
    typealias InboundOut = Never
    typealias OutboundIn = Never
    typealias OutboundOut = ByteBuffer

    /// What one read produced, in order, for the receiver: each case one of `HTTP2RequestReceiver`'s calls.
    private enum Inbound {
        case established
        case head(ReceivedHead)
        case data(HTTP2StreamID, ByteBuffer, endStream: Bool)
        case trailers(HTTP2StreamID, HPACKHeaders, endStream: Bool)
        case reset(HTTP2StreamID)
        case closed(HTTP2StreamID)
    }

    /// The request side, which attaches when it is added. Released when this codec leaves the pipeline
    /// (the two refer to each other).
    private var receiver: (any HTTP2RequestReceiver)?

    func attach(_ receiver: any HTTP2RequestReceiver) {
        self.receiver = receiver
    }

    /// This codec's place in the pipeline, for what the writer's calls write (set while it is in it).
    private var context: ChannelHandlerContext?

    private var session: OpaquePointer?
    private let limits: HTTP2Limits
    private var inbound: [Inbound] = []
    /// What the last read produced, being handed up (kept to reuse its storage).
    private var delivering: [Inbound] = []
    /// The request header block being read: HTTP/2 sends a block's HEADERS and CONTINUATION frames
    /// together, so there is one at a time.
    private var pending: ReceivedHead? {
        didSet { lentPending = pending.map(Unmanaged.passUnretained) }
    }
    /// `pending`, lent: each field of the block is read into it without a retain and a release (binding
    /// the property took both, for every field of every request). `pending` keeps it alive.
    private var lentPending: Unmanaged<ReceivedHead>?
    /// A request's trailers being read (HEADERS on a stream already announced): handed up with their
    /// fields, for the receiver's rules (no pseudo-header, END_STREAM).
    private var trailers: (stream: Int32, fields: HPACKHeaders)?
    /// The bytes `nghttp2_session_mem_recv` is reading, and where they start, while it reads them.
    private var input: ByteBuffer?
    private var inputStart: UnsafeRawPointer?
    /// Values that repeat on a connection's requests (its provider token), kept to be reused, not made anew.
    private var repeated = RequestHeaderBlock.RepeatedValues()
    private static let noBytes = ByteBuffer()
    /// Streams whose request headers were handed up (their close is told to the handler too) are marked
    /// in the session's own stream map (`isAnnounced`), looked up there in C rather than in a set of
    /// ours (hashing an id in Swift, four times a request, cost ~1 % of the front door); this many are open.
    private var announcedCount = 0
    /// Response bodies being sent, read by the session's data callback.
    private var bodies: [Int32: ByteBuffer] = [:]
    /// Promises of writes whose bytes go out with the next output taken from the session.
    private var promises: [EventLoopPromise<Void>] = []
    /// The client's streams as far as RFC 9113's rules for closed streams need them: the session keeps none.
    private var closedStreams = ClosedStreams()
    /// The frames' boundaries in what the client sends, and per read the DATA frames to check (where each
    /// begins, its stream) and the streams the client reset.
    private var frames = FrameScanner()
    private var suspect: [(offset: Int, stream: Int32)] = []
    private var resetHere: [Int32] = []
    /// The provider token a connection sends on every request, decoded once (`RepeatedTokenField`); the
    /// token literals to elide from this read's HEADERS frames (where each frame begins, its payload's
    /// length, the literal's octets); the place of the field being decoded in its block (from 0).
    private var token = RepeatedTokenField()
    private var elisions: [(frame: Int, length: Int, literal: Range<Int>)] = []
    private var blockField = 0
    private var firstSettingsSeen = false
    private var advertised = false
    private var closing = false

    /// The session's memory: blocks it frees are kept for its next requests (`SessionMemory.c`), up to
    /// `cachedBytesLimit`, and given back whenever the connection has no stream open.
    private let memory: OpaquePointer
    #if FUZZING
        // None kept: every block goes back to the C library at once, where AddressSanitizer watches it.
        static let cachedBytesLimit = 0
    #else
        static let cachedBytesLimit = 256 * 1024
    #endif

    init(limits: HTTP2Limits) {
        self.limits = limits
        // Out of memory for 144 bytes ends the process, as any of Swift's own allocations would.
        memory = pushgate_session_memory_new(Self.cachedBytesLimit)!
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        pushgate_session_memory_del(memory)
    }

    // MARK: Lifecycle

    func handlerAdded(context: ChannelHandlerContext) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_frame_callback(callbacks) { _, frame, user in
            NGHTTP2Codec.with(user) { $0.beginFrame(frame!.pointee) }
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
            NGHTTP2Codec.with(user) { $0.frameSent(NGHTTP2Codec.header(of: frame)) }
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            NGHTTP2Codec.with(user) { $0.beginHeaders(NGHTTP2Codec.header(of: frame)) }
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameLength, value, valueLength, _, user in
            NGHTTP2Codec.with(user) {
                $0.field(
                    NGHTTP2Codec.header(of: frame), name: UnsafeBufferPointer(start: name, count: nameLength),
                    value: UnsafeBufferPointer(start: value, count: valueLength))
            }
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            NGHTTP2Codec.with(user) { $0.frameReceived(NGHTTP2Codec.header(of: frame)) }
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, stream, data, length, user in
            NGHTTP2Codec.with(user) { $0.dataChunk(stream, UnsafeRawBufferPointer(start: data, count: length)) }
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, stream, code, user in
            NGHTTP2Codec.with(user) { $0.streamClosed(stream, code: code) }
        }
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        nghttp2_option_set_no_closed_streams(option, 1)
        nghttp2_option_set_no_http_messaging(option, 1)
        var allocator = pushgate_session_memory_nghttp2(memory)
        nghttp2_session_server_new3(&session, callbacks, Unmanaged.passUnretained(self).toOpaque(), option, &allocator)
        self.context = context
        if context.channel.isActive { start(context: context) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        receiver = nil
        self.context = nil
        failPromises(ChannelError.ioOnClosedChannel)
    }

    func channelActive(context: ChannelHandlerContext) {
        start(context: context)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        failPromises(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }

    /// The server's SETTINGS: NIO's ceilings are what the session enforces; the peer is told the configured
    /// limits (the first output is rewritten as `AdvertisedSettings` rewrites NIO's).
    private func start(context: ChannelHandlerContext) {
        guard !advertised else { return }
        advertised = true
        let streamLimits = limits.streamLimits
        func entry(_ identifier: UInt16, _ value: Int) -> nghttp2_settings_entry {
            nghttp2_settings_entry(settings_id: Int32(identifier), value: UInt32(clamping: value))
        }
        let settings = [
            entry(AdvertisedSettings.maxConcurrentStreams, streamLimits.concurrentStreamsCeiling),
            entry(AdvertisedSettings.maxHeaderListSize, streamLimits.headerListCeiling),
            entry(AdvertisedSettings.maxFrameSize, limits.maxFrameSize),
        ]
        nghttp2_submit_settings(session, 0, settings, settings.count)
        sendOutput(context: context, rewritingSettings: true)
        context.flush()
    }

    // MARK: Reading

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        guard !closing else { return }
        buffer.withUnsafeReadableBytes { scan($0) }
        if !elisions.isEmpty { buffer = elide(buffer, allocator: context.channel.allocator) }
        input = buffer
        let result = buffer.withUnsafeReadableBytes { bytes in
            inputStart = bytes.baseAddress
            defer { inputStart = nil }
            return receive(bytes)
        }
        input = nil
        token.finishRead()
        deliverInbound(context: context)
        if result < 0 {
            // Fatal for the connection (a bad preface, a flood): what the session queued goes, then the close.
            closing = true
            sendOutput(context: context)
            context.flush()
            context.close(promise: nil)
        }
    }

    /// The frames of a read, before the session reads them: the DATA frames to check (`receive`), and the
    /// HEADERS frames whose provider token can be elided.
    private func scan(_ bytes: UnsafeRawBufferPointer) {
        // A stream opened in these bytes is above `highest` (the session knows it while it reads them); one
        // opened before may have closed, or be reset here.
        suspect.removeAll(keepingCapacity: true)
        resetHere.removeAll(keepingCapacity: true)
        elisions.removeAll(keepingCapacity: true)
        frames.scan(bytes) { frame in
            switch frame.type {
            case FrameType.rstStream: resetHere.append(frame.stream)
            case FrameType.data where frame.stream & 1 == 1:
                if resetHere.contains(frame.stream)
                    || (frame.stream <= closedStreams.highest
                        && nghttp2_session_find_stream(session, frame.stream) == nil)
                {
                    suspect.append((frame.offset, frame.stream))
                }
            case FrameType.headers:
                // HEADERS: its block, when whole in this read and in this frame (END_HEADERS; no PADDED, no
                // PRIORITY), and no longer than every peer may send (shortened, a frame too long must not
                // become one the session accepts).
                let block = frame.offset + 9
                let whole =
                    frame.inPlace
                    && frame.flags & (FrameFlag.endHeaders | FrameFlag.padded | FrameFlag.priority)
                        == FrameFlag.endHeaders
                    && block + frame.length <= bytes.count
                    && frame.length <= 16_384
                guard
                    let literal = token.plan(
                        stream: frame.stream,
                        block: whole ? UnsafeRawBufferPointer(rebasing: bytes[block..<(block + frame.length)]) : nil)
                else { return }
                elisions.append(
                    (frame.offset, frame.length, (literal.lowerBound + block)..<(literal.upperBound + block)))
            default: break
            }
        }
    }

    /// The read's bytes with each elided token's literal replaced (`RepeatedTokenField.replacement`) and
    /// its frame's length shortened to match; the DATA frames to check move with them.
    private func elide(_ buffer: ByteBuffer, allocator: ByteBufferAllocator) -> ByteBuffer {
        buffer.withUnsafeReadableBytes { bytes in
            var out = allocator.buffer(capacity: bytes.count)
            var copied = 0
            var removed: [(at: Int, total: Int)] = []
            for (frame, length, literal) in elisions {
                out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[copied..<frame]))
                let shorter = literal.count - token.replacement.count
                let shortened = length - shorter
                out.writeInteger(UInt8(truncatingIfNeeded: shortened >> 16))
                out.writeInteger(UInt16(truncatingIfNeeded: shortened))
                out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[(frame + 3)..<literal.lowerBound]))
                out.writeBytes(token.replacement)
                copied = literal.upperBound
                if !suspect.isEmpty { removed.append((literal.upperBound, (removed.last?.total ?? 0) + shorter)) }
            }
            out.writeBytes(UnsafeRawBufferPointer(rebasing: bytes[copied...]))
            for index in suspect.indices {
                let offset = suspect[index].offset
                suspect[index].offset -= removed.last(where: { $0.at <= offset })?.total ?? 0
            }
            return out
        }
    }

    /// The session reads `bytes`; a DATA frame on a stream it may have forgotten is checked against
    /// `ClosedStreams` when the session has read what comes before it (it would ignore the frame without a
    /// callback). Negative: the session failed, or a rule ended the connection.
    private func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        var read = 0
        for (offset, stream) in suspect {
            if offset > read {
                let result = nghttp2_session_mem_recv(
                    session, bytes.baseAddress!.assumingMemoryBound(to: UInt8.self) + read, offset - read)
                guard result >= 0 else { return result }
                read = offset
            }
            guard nghttp2_session_find_stream(session, stream) == nil,
                case .connectionError(let code) = closedStreams.verdict(type: FrameType.data, stream: stream)
            else { continue }
            nghttp2_session_terminate_session(session, UInt32(code.networkCode))
            return Int(Self.callbackFailure)
        }
        guard read < bytes.count else { return bytes.count }
        return nghttp2_session_mem_recv(
            session, bytes.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) + read }, bytes.count - read)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        sendOutput(context: context)
        context.flush()
        if announcedCount == 0 { pushgate_session_memory_trim(memory) }
        closeIfFinished(context: context)
    }

    private func deliverInbound(context: ChannelHandlerContext) {
        while !inbound.isEmpty {
            // The two lists trade places, so that neither is copied nor made anew for a read.
            swap(&inbound, &delivering)
            defer { delivering.removeAll(keepingCapacity: true) }
            // No receiver: none attached (it attaches before any read), or the codec left the pipeline.
            guard let receiver else { continue }
            for item in delivering {
                switch item {
                case .established: receiver.connectionEstablished()
                case .head(let head): receiver.receivedHead(head)
                case .data(let stream, let bytes, let endStream):
                    receiver.receivedBody(stream, bytes, endStream: endStream)
                case .trailers(let stream, let fields, let endStream):
                    receiver.receivedTrailers(stream, fields, endStream: endStream)
                case .reset(let stream): receiver.streamReset(stream)
                case .closed(let stream): receiver.streamClosed(stream)
                }
            }
        }
    }

    /// After a GOAWAY or a connection error, the session wants neither to read nor to write once it is done.
    private func closeIfFinished(context: ChannelHandlerContext) {
        guard !closing, nghttp2_session_want_read(session) == 0, nghttp2_session_want_write(session) == 0 else {
            return
        }
        closing = true
        context.close(promise: nil)
    }

    // MARK: The session's callbacks (collecting only)

    /// The codec a callback's user data points to, lent to `body` without retaining it: the session is the
    /// codec's and calls back only inside the codec's own calls, which hold it. (Retained and released in
    /// every callback, several a request, it cost ~3 % of the front door's rate.)
    private static func with<Result>(_ user: UnsafeMutableRawPointer?, _ body: (NGHTTP2Codec) -> Result) -> Result {
        Unmanaged<NGHTTP2Codec>.fromOpaque(user!)._withUnsafeGuaranteedRef(body)
    }

    private static func header(of frame: OpaquePointer?) -> nghttp2_frame_hd {
        UnsafeRawPointer(frame!).load(as: nghttp2_frame_hd.self)
    }

    /// The head being read, when it is this stream's.
    private func pendingHead(of stream: Int32) -> ReceivedHead? {
        guard let pending, pending.streamID == HTTP2StreamID(Int(stream)) else { return nil }
        return pending
    }

    /// Every frame's header, before its payload (but a DATA frame's on a stream the session does not know:
    /// `receive`): RFC 9113's rules for a frame on a stream the session closed and forgot
    /// (`ClosedStreams`), which it would ignore. A violation ends the connection: GOAWAY, and the read fails.
    private func beginFrame(_ frame: nghttp2_frame_hd) -> Int32 {
        let stream = frame.stream_id
        guard stream != 0, stream <= closedStreams.highest,
            frame.type == FrameType.data || frame.type == FrameType.headers,
            nghttp2_session_find_stream(session, stream) == nil,
            case .connectionError(let code) = closedStreams.verdict(type: frame.type, stream: stream)
        else { return 0 }
        nghttp2_session_terminate_session(session, UInt32(code.networkCode))
        return Self.callbackFailure
    }

    /// NGHTTP2_ERR_CALLBACK_FAILURE: the session stops reading, and `nghttp2_session_mem_recv` fails.
    private static let callbackFailure: Int32 = -902

    /// Every frame the session sends: its resets (the handler's, and its own for stream errors), after which
    /// frames the client already sent on the stream are ignored.
    private func frameSent(_ frame: nghttp2_frame_hd) -> Int32 {
        if frame.type == FrameType.rstStream { closedStreams.resetSent(frame.stream_id) }
        return 0
    }

    private func beginHeaders(_ frame: nghttp2_frame_hd) -> Int32 {
        // A stream the session opened (not one it ignores, above its GOAWAY's last stream).
        closedStreams.opened(frame.stream_id)
        blockField = 0
        if isAnnounced(frame.stream_id) {
            pending = nil
            trailers = (frame.stream_id, [:])
        } else {
            pending = ReceivedHead(streamID: HTTP2StreamID(Int(frame.stream_id)))
        }
        return 0
    }

    /// A field of a block, as the session decoded it: its value, or the provider token for a field elided.
    private func field(_ frame: nghttp2_frame_hd, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
        -> Int32
    {
        let place = blockField
        blockField &+= 1
        if let value = token.value(stream: frame.stream_id, field: place, name: name, received: value) {
            return value.withUnsafeBufferPointer { header(frame, name: name, value: $0) }
        }
        return header(frame, name: name, value: value)
    }

    private func header(_ frame: nghttp2_frame_hd, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>)
        -> Int32
    {
        guard let lent = lentPending,
            lent._withUnsafeGuaranteedRef({ $0.streamID }) == HTTP2StreamID(Int(frame.stream_id))
        else {
            if trailers?.stream == frame.stream_id {
                trailers!.fields.add(
                    name: String(decoding: name, as: UTF8.self), value: String(decoding: value, as: UTF8.self))
            }
            return 0
        }
        lent._withUnsafeGuaranteedRef { $0.block.read(name: name, value: value, repeated: &repeated) }
        return 0
    }

    private func frameReceived(_ frame: nghttp2_frame_hd) -> Int32 {
        let stream = HTTP2StreamID(Int(frame.stream_id))
        let endStream = frame.flags & FrameFlag.endStream != 0
        switch frame.type {
        case FrameType.data where endStream:
            // DATA: its bytes came as chunks. The last chunk, when it is this stream's and still waiting,
            // carries the end of the stream; otherwise the end is a frame of its own.
            if case .data(stream, let bytes, endStream: false) = inbound.last {
                inbound[inbound.count - 1] = .data(stream, bytes, endStream: true)
            } else {
                inbound.append(.data(stream, Self.noBytes, endStream: true))
            }
        case FrameType.headers:  // a request's head, or its trailers.
            if let head = pendingHead(of: frame.stream_id) {
                pending = nil
                if nghttp2_session_set_stream_user_data(session, frame.stream_id, Self.announcedMark) == 0 {
                    announcedCount += 1
                }
                head.block.finish()
                head.endStream = endStream
                inbound.append(.head(head))
            } else {
                let fields = trailers?.stream == frame.stream_id ? trailers!.fields : [:]
                trailers = nil
                inbound.append(.trailers(stream, fields, endStream: endStream))
            }
        case FrameType.rstStream:
            inbound.append(.reset(stream))
        case FrameType.settings where frame.flags & FrameFlag.ack == 0 && !firstSettingsSeen:
            // The client's first SETTINGS.
            firstSettingsSeen = true
            inbound.append(.established)
        default:
            break
        }
        return 0
    }

    private func dataChunk(_ stream: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
        guard isAnnounced(stream) else { return 0 }
        // A chunk is most often a span of the bytes being read: a slice of their buffer, not a copy.
        let data: ByteBuffer
        if let start = inputStart, let chunk = bytes.baseAddress, chunk >= start,
            chunk + bytes.count <= start + (input?.readableBytes ?? 0),
            let slice = input?.getSlice(at: input!.readerIndex + (chunk - start), length: bytes.count)
        {
            data = slice
        } else {
            data = ByteBuffer(bytes: bytes)
        }
        inbound.append(.data(HTTP2StreamID(Int(stream)), data, endStream: false))
        return 0
    }

    private func streamClosed(_ stream: Int32, code: UInt32) -> Int32 {
        if pendingHead(of: stream) != nil { pending = nil }
        if trailers?.stream == stream { trailers = nil }
        if !bodies.isEmpty { bodies.removeValue(forKey: stream) }
        // The session calls this before it forgets the stream, so its mark is still there.
        if isAnnounced(stream) {
            announcedCount -= 1
            inbound.append(.closed(HTTP2StreamID(Int(stream))))
        }
        return 0
    }

    private func isAnnounced(_ stream: Int32) -> Bool {
        nghttp2_session_get_stream_user_data(session, stream) == Self.announcedMark
    }

    /// The stream user data that marks a stream announced (the session keeps the pointer, never follows it).
    private static var announcedMark: UnsafeMutableRawPointer? { UnsafeMutableRawPointer(bitPattern: 1) }

    // MARK: Writing

    func flush(context: ChannelHandlerContext) {
        sendOutput(context: context)
        context.flush()
        closeIfFinished(context: context)
    }

    /// The promise of a write, completed with the next output taken from the session.
    private func keep(_ promise: EventLoopPromise<Void>?) {
        if let promise { promises.append(promise) }
    }

    /// NGHTTP2_NV_FLAG_NO_INDEX (unique per answer: indexing would only churn the client's table) and
    /// NGHTTP2_NV_FLAG_NO_COPY_NAME (a constant outlives the session's use of it).
    /// NGHTTP2_DATA_FLAG_EOF: a data callback's last chunk.
    private static let dataFlagEOF: UInt32 = 0x1
    private static let noIndex: UInt8 = 0x1
    private static let noCopyName: UInt8 = 0x2
    private static let status200: StaticString = "200"

    private func submitResponse(_ stream: Int32, _ headers: HPACKHeaders, body: ByteBuffer?) {
        // The session copies names and values: one buffer holds them for the call.
        var text: [UInt8] = []
        text.reserveCapacity(128)
        var spans: [(name: Range<Int>, value: Range<Int>, flags: UInt8)] = []
        spans.reserveCapacity(headers.count)
        for (name, value, indexing) in headers {
            let nameStart = text.count
            text.append(contentsOf: name.utf8)
            let valueStart = text.count
            text.append(contentsOf: value.utf8)
            spans.append((nameStart..<valueStart, valueStart..<text.count, indexing == .indexable ? 0 : Self.noIndex))
        }
        if let body { bodies[stream] = body }
        text.withUnsafeMutableBufferPointer { bytes in
            let base = bytes.baseAddress!
            let fields = spans.map {
                nghttp2_nv(
                    name: base + $0.name.lowerBound, value: base + $0.value.lowerBound, namelen: $0.name.count,
                    valuelen: $0.value.count, flags: $0.flags)
            }
            if body == nil {
                nghttp2_submit_response(session, stream, fields, fields.count, nil)
            } else {
                var provider = nghttp2_data_provider(
                    source: nghttp2_data_source(ptr: nil),
                    read_callback: { _, stream, buffer, length, flags, _, user in
                        NGHTTP2Codec.with(user) { $0.readBody(stream, into: buffer, length: length, flags: flags) }
                    })
                nghttp2_submit_response(session, stream, fields, fields.count, &provider)
            }
        }
    }

    private func readBody(
        _ stream: Int32, into buffer: UnsafeMutablePointer<UInt8>?, length: Int, flags: UnsafeMutablePointer<UInt32>?
    )
        -> Int
    {
        guard var body = bodies[stream] else {
            flags?.pointee |= Self.dataFlagEOF
            return 0
        }
        let count = min(length, body.readableBytes)
        body.withUnsafeReadableBytes { bytes in
            UnsafeMutableRawPointer(buffer!).copyMemory(from: bytes.baseAddress!, byteCount: count)
        }
        body.moveReaderIndex(forwardBy: count)
        if body.readableBytes == 0 {
            bodies.removeValue(forKey: stream)
            flags?.pointee |= Self.dataFlagEOF
        } else {
            bodies[stream] = body
        }
        return count
    }

    /// Takes what the session has to send and writes it (not flushed); the pending writes' promises
    /// complete with it.
    private func sendOutput(context: ChannelHandlerContext, rewritingSettings: Bool = false) {
        var output: ByteBuffer?
        while true {
            var data: UnsafePointer<UInt8>?
            let count = nghttp2_session_mem_send(session, &data)
            guard count > 0, let data else { break }
            if output == nil { output = context.channel.allocator.buffer(capacity: count) }
            output!.writeBytes(UnsafeRawBufferPointer(start: data, count: count))
        }
        let waiting = promises
        promises.removeAll()
        guard var output else {
            for promise in waiting { promise.succeed() }
            return
        }
        if rewritingSettings {
            _ = AdvertisedSettings.rewrite(&output, values: AdvertisedSettings.values(limits.streamLimits))
        }
        let written: EventLoopPromise<Void>? = waiting.isEmpty ? nil : context.eventLoop.makePromise()
        if let written {
            for promise in waiting { written.futureResult.cascade(to: promise) }
        }
        context.write(wrapOutboundOut(output), promise: written)
    }

    private func failPromises(_ error: any Error) {
        let waiting = promises
        promises.removeAll()
        for promise in waiting { promise.fail(error) }
    }
}

extension NGHTTP2Codec: HTTP2ResponseWriter {
    func respond(
        _ stream: HTTP2StreamID, _ fields: HPACKHeaders, body: ByteBuffer?, promise: EventLoopPromise<Void>?
    ) {
        submitResponse(Int32(Int(stream)), fields, body: body)
        keep(promise)
    }

    /// `:status` 200 and the fields' values in one buffer the session copies; the names are constants the
    /// session need not copy (NGHTTP2_NV_FLAG_NO_COPY_NAME).
    func respondOK(
        _ stream: HTTP2StreamID, _ first: UniqueField, _ second: UniqueField?, promise: EventLoopPromise<Void>?
    ) {
        withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: 3) { fields in
            func field(_ name: StaticString, _ value: UnsafeRawBufferPointer, _ flags: UInt8) -> nghttp2_nv {
                nghttp2_nv(
                    name: UnsafeMutablePointer(mutating: name.utf8Start),
                    value: UnsafeMutablePointer(mutating: value.baseAddress!.assumingMemoryBound(to: UInt8.self)),
                    namelen: name.utf8CodeUnitCount, valuelen: value.count, flags: flags | Self.noCopyName)
            }
            fields[0] = field(":status", UnsafeRawBufferPointer(start: Self.status200.utf8Start, count: 3), 0)
            fields[1] = field(first.name, first.value, Self.noIndex)
            if let second { fields[2] = field(second.name, second.value, Self.noIndex) }
            nghttp2_submit_response(session, Int32(Int(stream)), fields.baseAddress, second == nil ? 2 : 3, nil)
        }
        keep(promise)
    }

    func reset(_ stream: HTTP2StreamID, _ code: HTTP2ErrorCode) {
        // A reset drops what the session still holds for the stream: an answer written before it (a 431,
        // then RST_STREAM NO_ERROR for a client still sending) is taken out first.
        if let context { sendOutput(context: context) }
        nghttp2_submit_rst_stream(session, 0, Int32(Int(stream)), UInt32(code.networkCode))
    }

    func goAway(lastStream: HTTP2StreamID, _ code: HTTP2ErrorCode, debugData: ByteBuffer?) {
        let last = Int32(Int(lastStream))
        guard let debugData else {
            nghttp2_submit_goaway(session, 0, last, UInt32(code.networkCode), nil, 0)
            return
        }
        debugData.withUnsafeReadableBytes { bytes in
            _ = nghttp2_submit_goaway(
                session, 0, last, UInt32(code.networkCode), bytes.baseAddress?.assumingMemoryBound(to: UInt8.self),
                bytes.count)
        }
    }

    func widenConnectionWindow(by increment: Int) {
        nghttp2_submit_window_update(session, 0, 0, Int32(clamping: increment))
    }
}
