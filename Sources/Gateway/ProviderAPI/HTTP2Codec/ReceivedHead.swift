import NIOHTTP2

/// A request's head as the codec (`NGHTTP2Codec`) read it: the block read field by field from the bytes
/// where libnghttp2 hands them over, so no `HPACKHeaders` is made for it. The one place the codec knows the
/// provider API: it reads into the API's `RequestHeaderBlock` (a string is made only for a value the head
/// keeps; reading the fields into a header list first, then the block from it, cost a `String` per name and
/// value — docs/provider-api.md, "The codec").
///
/// A class: the codec reads the block (a dozen strings) into it in place and hands it to the request
/// handler as one reference, not copied (each copy of the block retained every string in it). The codec
/// fills it until the block ends; the handler takes the block (`takeBlock`).
final class ReceivedHead {
    let streamID: HTTP2StreamID
    var block = RequestHeaderBlock()
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
