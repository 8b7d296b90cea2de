import NIOCore
import NIOHPACK
import NIOPosix
import Synchronization

/// An HTTP/2 client that writes frames exactly as told, for tests of what a well-behaved client never
/// does (more streams than the server allows, header lists over its limit). It answers the server's
/// SETTINGS with an ACK and otherwise only records the frames it receives (response headers decoded).
public final class RawHTTP2: Sendable {
    public struct Frame: Sendable, CustomStringConvertible {
        public var type: UInt8
        public var flags: UInt8
        public var stream: UInt32
        public var payload: [UInt8]
        /// A HEADERS frame's fields, decoded in arrival order (HPACK is stateful).
        public var headers: [(String, String)] = []

        public static let data: UInt8 = 0x0
        public static let headersType: UInt8 = 0x1
        public static let rstStream: UInt8 = 0x3
        public static let settings: UInt8 = 0x4
        public static let goAway: UInt8 = 0x7

        /// RST_STREAM's and GOAWAY's error code.
        public var errorCode: UInt32? {
            let at = type == Self.rstStream ? 0 : type == Self.goAway ? 4 : -1
            guard at >= 0, payload.count >= at + 4 else { return nil }
            return payload[at..<at + 4].reduce(0) { $0 << 8 | UInt32($1) }
        }

        public var status: String? { headers.first { $0.0 == ":status" }?.1 }

        /// A SETTINGS frame's parameters.
        public var settings: [UInt16: UInt32] {
            guard type == Self.settings else { return [:] }
            var result: [UInt16: UInt32] = [:]
            var index = 0
            while index + 6 <= payload.count {
                let id = UInt16(payload[index]) << 8 | UInt16(payload[index + 1])
                result[id] = payload[index + 2..<index + 6].reduce(0) { $0 << 8 | UInt32($1) }
                index += 6
            }
            return result
        }

        public var description: String { "frame(type \(type), flags \(flags), stream \(stream), \(headers))" }
    }

    private final class Reader: ChannelInboundHandler, Sendable {
        typealias InboundIn = ByteBuffer
        typealias OutboundOut = ByteBuffer
        struct State {
            var pending = ByteBuffer()
            var frames: [Frame] = []
            var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
            var closed = false
        }
        let state = Mutex(State())

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var bytes = unwrapInboundIn(data)
            let acks = state.withLock { state -> Int in
                state.pending.writeBuffer(&bytes)
                var acks = 0
                while state.pending.readableBytes >= 9 {
                    let start = state.pending.readerIndex
                    let length =
                        Int(state.pending.getInteger(at: start, as: UInt8.self)!) << 16
                        | Int(state.pending.getInteger(at: start + 1, as: UInt16.self)!)
                    guard state.pending.readableBytes >= 9 + length else { break }
                    let type = state.pending.getInteger(at: start + 3, as: UInt8.self)!
                    let flags = state.pending.getInteger(at: start + 4, as: UInt8.self)!
                    let stream = state.pending.getInteger(at: start + 5, as: UInt32.self)! & 0x7fff_ffff
                    state.pending.moveReaderIndex(forwardBy: 9)
                    var payload = state.pending.readSlice(length: length)!
                    var frame = Frame(
                        type: type, flags: flags, stream: stream, payload: Array(payload.readableBytesView))
                    if type == Frame.headersType {
                        // No padding or priority from the server under test.
                        if let fields = try? state.decoder.decodeHeaders(from: &payload) {
                            frame.headers = fields.map { ($0.name, $0.value) }
                        }
                    }
                    if type == Frame.settings, flags & 0x1 == 0 { acks += 1 }
                    state.frames.append(frame)
                }
                state.pending.discardReadBytes()
                return acks
            }
            for _ in 0..<acks {
                context.writeAndFlush(
                    wrapOutboundOut(ByteBuffer(bytes: [0, 0, 0, Frame.settings, 0x1, 0, 0, 0, 0])), promise: nil)
            }
        }

        /// The preface goes first, before any ACK of the server's SETTINGS (which may arrive at once).
        func channelActive(context: ChannelHandlerContext) {
            var preface = ByteBuffer(string: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
            preface.writeBytes([0, 0, 0, Frame.settings, 0, 0, 0, 0, 0])
            context.writeAndFlush(wrapOutboundOut(preface), promise: nil)
            context.fireChannelActive()
        }

        func channelInactive(context: ChannelHandlerContext) {
            state.withLock { $0.closed = true }
        }
    }

    private let channel: any Channel
    private let reader: Reader
    private let encoder = Mutex(HPACKEncoder(allocator: ByteBufferAllocator()))

    /// Connects over cleartext (h2c with prior knowledge) and sends the preface and an empty SETTINGS.
    public init(host: String = "127.0.0.1", port: Int, group: any EventLoopGroup) async throws {
        let reader = Reader()
        channel = try await ClientBootstrap(group: group)
            .channelInitializer { $0.pipeline.addHandler(reader) }
            .connect(host: host, port: port).get()
        self.reader = reader
    }

    /// A HEADERS frame (END_HEADERS set) carrying `fields` in one block, each a literal without indexing (or as
    /// `indexing` says).
    public func headers(
        stream: UInt32, _ fields: [(String, String)], endStream: Bool, indexing: HPACKIndexing = .nonIndexable
    ) async throws {
        let block = try encoder.withLock { encoder -> ByteBuffer in
            var block = ByteBuffer()
            var headers = HPACKHeaders()
            for (name, value) in fields { headers.add(name: name, value: value, indexing: indexing) }
            try encoder.encode(headers: headers, to: &block)
            return block
        }
        try await frame(type: Frame.headersType, flags: 0x4 | (endStream ? 0x1 : 0), stream: stream, payload: block)
    }

    public func data(stream: UInt32, _ bytes: [UInt8], endStream: Bool) async throws {
        try await frame(type: Frame.data, flags: endStream ? 0x1 : 0, stream: stream, payload: ByteBuffer(bytes: bytes))
    }

    public func frame(type: UInt8, flags: UInt8, stream: UInt32, payload: ByteBuffer) async throws {
        var buffer = ByteBuffer()
        let length = payload.readableBytes
        buffer.writeInteger(UInt8(length >> 16))
        buffer.writeInteger(UInt16(length & 0xffff))
        buffer.writeInteger(type)
        buffer.writeInteger(flags)
        buffer.writeInteger(stream)
        buffer.writeImmutableBuffer(payload)
        try await channel.writeAndFlush(buffer)
    }

    /// The frames received so far.
    public var frames: [Frame] { reader.state.withLock { $0.frames } }
    public var isClosed: Bool { reader.state.withLock { $0.closed } }

    /// Waits (polling, up to `seconds`) until `condition` holds for the frames received; returns them.
    @discardableResult
    public func waitFor(seconds: Double = 10, _ condition: ([Frame]) -> Bool) async throws -> [Frame] {
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < deadline {
            let frames = self.frames
            if condition(frames) { return frames }
            try await Task.sleep(for: .milliseconds(10))  // clock-ok: a poll for a peer's frames, bounded
        }
        return frames
    }

    public func close() async {
        try? await channel.close()
    }
}
