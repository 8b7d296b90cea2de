import NIOCore
import NIOHPACK
import NIOHTTP2

/// The codec's seam, upward: what `NGHTTP2Codec` read of a connection's requests, handed to the request
/// side (`ProviderConnectionHandler`) by direct calls, in the order the client sent it — no `HTTP2Frame`,
/// pipeline event, box or dynamic cast. Called on the channel's event loop, after the C library's call has
/// returned, never inside it. Answers go back down through `HTTP2ResponseWriter`.
protocol HTTP2RequestReceiver: AnyObject {
    /// The client's first SETTINGS frame, after its preface: the connection is established.
    func connectionEstablished()

    /// A new stream's request head: its header block, read in place (`ReceivedHead`, handed over by
    /// reference); `endStream` when no body follows.
    func receivedHead(_ head: ReceivedHead)

    /// A chunk of a request's body, most often a slice of the bytes read (not a copy); the last chunk
    /// carries the end of its stream (an empty one when the end came in a frame of its own).
    func receivedBody(_ stream: HTTP2StreamID, _ bytes: ByteBuffer, endStream: Bool)

    /// A header block on a stream whose head was handed up: trailers, with their fields as sent, for RFC
    /// 9113 §8.1's rules (no pseudo-header; they end the stream).
    func receivedTrailers(_ stream: HTTP2StreamID, _ fields: HPACKHeaders, endStream: Bool)

    /// The client reset a stream (RST_STREAM).
    func streamReset(_ stream: HTTP2StreamID)

    /// A stream whose head was handed up closed (both sides ended it, or one reset it): it no longer counts
    /// against the connection's open streams.
    func streamClosed(_ stream: HTTP2StreamID)
}
