import NIOCore
import NIOHPACK
import NIOHTTP2

/// The codec's seam, downward: what the request side (`ProviderConnectionHandler`) writes on a connection,
/// handed to `NGHTTP2Codec` by direct calls. Each call is submitted to the session at once; its bytes go out
/// with the channel's next flush (the pipeline's `flush`), or at the end of the read being handled. A
/// promise completes when those bytes are written (or fails with the connection).
protocol HTTP2ResponseWriter: AnyObject {
    /// A response: its head (`:status` first) and, when it has one, a body that ends the stream; without a
    /// body the head ends it. Fields are indexed in HPACK as `fields` says of each.
    func respond(
        _ stream: HTTP2StreamID, _ fields: HPACKHeaders, body: ByteBuffer?, promise: EventLoopPromise<Void>?)

    /// A 200 with no body and at most two more fields whose names are constants and whose values are unique
    /// to this answer (never indexed: they would only churn the client's table) — the request path's
    /// answer, written without a header list or a copy of the names.
    func respondOK(
        _ stream: HTTP2StreamID, _ first: UniqueField, _ second: UniqueField?, promise: EventLoopPromise<Void>?)

    /// Resets a stream. What is still queued for it (an answer written just before) goes out first.
    func reset(_ stream: HTTP2StreamID, _ code: HTTP2ErrorCode)

    /// GOAWAY: no stream above `lastStream` will be processed; `debugData` tells the client why.
    func goAway(lastStream: HTTP2StreamID, _ code: HTTP2ErrorCode, debugData: ByteBuffer?)

    /// Opens the connection's receive window by `increment` octets (a WINDOW_UPDATE on stream 0).
    func widenConnectionWindow(by increment: Int)
}

/// One field of a `respondOK`: a constant name, and a value lent for the call.
struct UniqueField {
    let name: StaticString
    let value: UnsafeRawBufferPointer

    init(_ name: StaticString, _ value: UnsafeRawBufferPointer) {
        self.name = name
        self.value = value
    }
}
