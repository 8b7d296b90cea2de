import NIOCore

/// The two limits of a provider connection that are answered per stream, and the connection-level
/// ceilings NIO enforces above them.
///
/// NIOHTTP2 enforces exactly what it advertises, and what it enforces ends the connection: a stream over
/// SETTINGS_MAX_CONCURRENT_STREAMS is a connection error (GOAWAY PROTOCOL_ERROR), and a header list over
/// SETTINGS_MAX_HEADER_LIST_SIZE stops its HPACK decoder mid-block (GOAWAY COMPRESSION_ERROR), taking every
/// other stream in flight with it. RFC 9113 lets a server refuse one stream instead (§5.1.2: a stream error
/// of type REFUSED_STREAM, which the client may retry; §10.5.1: a 431 response). So NIO is given ceilings
/// above the configured limits, the provider is told the configured limits (`AdvertisedSettings` rewrites
/// the values in the connection's first SETTINGS frame), and the connection handler answers a stream over a
/// configured limit on that stream alone. A peer that goes past a ceiling still loses its connection.
public struct StreamLimits: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS as advertised; a stream over it is refused with REFUSED_STREAM.
    public var concurrentStreams: Int
    /// SETTINGS_MAX_HEADER_LIST_SIZE as advertised; a request over it is answered 431.
    public var headerListSize: Int

    public init(concurrentStreams: Int, headerListSize: Int) {
        self.concurrentStreams = concurrentStreams
        self.headerListSize = headerListSize
    }

    /// Open streams past which NIO ends the connection: room for a client that races the limit (or
    /// ignores it) to be refused stream by stream.
    public var concurrentStreamsCeiling: Int { max(2 * concurrentStreams, concurrentStreams + 100) }

    /// The header list NIO's HPACK decoder still decodes (so its table stays in step with the client's)
    /// for the handler to answer 431.
    public var headerListCeiling: Int { max(4 * headerListSize, 64 * 1024) }
}

/// Rewrites the values of chosen parameters in the first frame the server writes — its SETTINGS, which
/// NIOHTTP2Handler writes as one buffer on channel activation — then leaves the pipeline.
///
/// It sits between NIOHTTP2Handler and the transport (TLS or TCP). NIO keeps believing it advertised its
/// own values; the peer sees these.
final class AdvertisedSettings: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private static let frameHeaderLength = 9
    private static let settingsFrameType: UInt8 = 0x4
    private static let settingLength = 6

    /// RFC 9113 §6.5.2's identifiers (NIO keeps its own internal).
    static let maxConcurrentStreams: UInt16 = 0x3
    static let maxHeaderListSize: UInt16 = 0x6
    static let maxFrameSize: UInt16 = 0x5

    private let values: [UInt16: UInt32]

    /// The configured limits, told to the peer in place of NIO's ceilings.
    init(_ limits: StreamLimits) {
        self.values = Self.values(limits)
    }

    /// The parameters told to the peer, by identifier.
    static func values(_ limits: StreamLimits) -> [UInt16: UInt32] {
        [
            maxConcurrentStreams: UInt32(clamping: limits.concurrentStreams),
            maxHeaderListSize: UInt32(clamping: limits.headerListSize),
        ]
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var rewritten = data
        if case .byteBuffer(var buffer) = unwrapOutboundIn(data), Self.rewrite(&buffer, values: values) {
            rewritten = wrapOutboundOut(.byteBuffer(buffer))
        }
        context.write(rewritten, promise: promise)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }

    /// Rewrites the listed parameters of the SETTINGS frame at the start of `buffer`; false when the buffer
    /// does not start with a complete, non-ACK SETTINGS frame on stream 0 (it is then left alone).
    static func rewrite(_ buffer: inout ByteBuffer, values: [UInt16: UInt32]) -> Bool {
        let start = buffer.readerIndex
        guard let lengthHigh = buffer.getInteger(at: start, as: UInt8.self),
            let lengthLow = buffer.getInteger(at: start + 1, as: UInt16.self),
            let type = buffer.getInteger(at: start + 3, as: UInt8.self),
            let flags = buffer.getInteger(at: start + 4, as: UInt8.self),
            let stream = buffer.getInteger(at: start + 5, as: UInt32.self)
        else { return false }
        let length = Int(lengthHigh) << 16 | Int(lengthLow)
        guard type == settingsFrameType, flags == 0, stream == 0, length % settingLength == 0,
            buffer.readableBytes >= frameHeaderLength + length
        else { return false }
        var offset = start + frameHeaderLength
        while offset < start + frameHeaderLength + length {
            if let parameter = buffer.getInteger(at: offset, as: UInt16.self), let value = values[parameter] {
                buffer.setInteger(value, at: offset + 2)
            }
            offset += settingLength
        }
        return true
    }
}
