import NIOHPACK
import NIOHTTP2

/// A request's head from a codec that reads header blocks itself (`NGHTTP2Codec`), in place of a HEADERS
/// frame: the block already read header by header from the bytes, so no `HPACKHeaders` is made for it.
struct RequestHeadEvent {
    let streamID: HTTP2StreamID
    let block: RequestHeaderBlock
    /// A broadcast's headers (`BroadcastRequest` reads them at the end of its stream); nil for the rest.
    let broadcastHeaders: HPACKHeaders?
    let endStream: Bool
}
