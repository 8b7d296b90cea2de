import NIOHPACK
import NIOHTTP2

/// A request's head as libnghttp2's codec (`NGHTTP2Codec`) read it, in place of a HEADERS frame: the block
/// read header by header from the bytes, so no `HPACKHeaders` is made for it.
///
/// A class: the codec reads the block (a dozen strings) into it in place and hands it to the request
/// handler as one reference, not copied (each copy of the block retained every string in it). The codec
/// fills it until the block ends; the handler takes the block (`takeBlock`).
final class ReceivedHead {
    let streamID: HTTP2StreamID
    var block = RequestHeaderBlock()
    /// A broadcast's headers (`BroadcastRequest` reads them at the end of its stream); nil for the rest.
    var broadcastHeaders: HPACKHeaders?
    var endStream = false

    init(streamID: HTTP2StreamID) {
        self.streamID = streamID
    }

    /// The block, moved out (an empty one left): the handler takes it once, without the retain of every
    /// string in it that a copy would cost.
    func takeBlock() -> RequestHeaderBlock {
        var taken = RequestHeaderBlock()
        swap(&taken, &block)
        return taken
    }
}
