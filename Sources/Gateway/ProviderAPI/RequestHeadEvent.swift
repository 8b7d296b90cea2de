import NIOHPACK
import NIOHTTP2

/// A request's head from a codec that reads header blocks itself (`NGHTTP2Codec`), in place of a HEADERS
/// frame: the block read header by header from the bytes, so no `HPACKHeaders` is made for it.
///
/// A class: the codec reads the block (a dozen strings) into it in place, and it travels up — through the
/// codec's list of what a read produced and the pipeline's untyped event — as one reference, not copied
/// (each copy of the block retained every string in it). The codec fills it until the block ends; the
/// handler only reads it.
final class RequestHeadEvent {
    let streamID: HTTP2StreamID
    var block = RequestHeaderBlock()
    /// A broadcast's headers (`BroadcastRequest` reads them at the end of its stream); nil for the rest.
    var broadcastHeaders: HPACKHeaders?
    var endStream = false

    init(streamID: HTTP2StreamID) {
        self.streamID = streamID
    }
}
