import NIOHTTP2

/// What a provider connection remembers of its client's streams once libnghttp2 has forgotten them — the
/// session keeps no closed streams (`NGHTTP2Codec`; retaining them, as it does by default, cost 6 % of the
/// front door's rate and ~0.75 MB a busy connection) — so that RFC 9113 §5.1's rules for frames on a closed
/// stream still hold:
/// - DATA or HEADERS on a stream the client ended, or reset, is a connection error STREAM_CLOSED (§5.1:
///   "closed"; a stream error after a reset the client sent, which an endpoint may make a connection
///   error);
/// - HEADERS on a stream the client skipped (an id below one it opened, never used: §5.1.1 closes it) is a
///   connection error PROTOCOL_ERROR;
/// - frames on a stream the server reset are ignored (§5.1: its peer may have sent them before it saw the
///   reset), as are PRIORITY, RST_STREAM and WINDOW_UPDATE on any closed stream.
/// The last `window` stream ids are remembered (two bits each, 512 bytes a connection); a frame on an older
/// one is ignored, as §5.1 allows an endpoint that limits how long it remembers a reset.
///
/// A pure state machine: told of each stream the client opens and each reset the server sends, it decides
/// about a frame on a stream the session no longer knows.
struct ClosedStreams {
    /// How far back stream ids are remembered (the client's ids are odd: 2,048 of them).
    static let window: Int32 = 4096
    private static let words = Int(window) / 2 / 64

    /// The highest stream id the client opened.
    private(set) var highest: Int32 = 0
    /// One bit per odd id in the window (by `slot`): the client opened it; the server reset it.
    private var opened: [UInt64] = []
    private var reset: [UInt64] = []

    enum Verdict: Equatable {
        /// Let the session go on (it ignores a frame on a stream it does not know).
        case proceed
        /// End the connection: GOAWAY with this code.
        case connectionError(HTTP2ErrorCode)
    }

    /// The session opened `stream` for the client's HEADERS (or refused it): above every stream before it,
    /// the ids between are closed without having been used. (A new stream the session ignores — above the
    /// last stream of its GOAWAY — is not opened, and frames on it stay ignored.)
    mutating func opened(_ stream: Int32) {
        guard stream > highest, stream & 1 == 1 else { return }
        if opened.isEmpty {
            opened = Array(repeating: 0, count: Self.words)
            reset = opened
        }
        if stream - highest >= Self.window {
            for word in 0..<Self.words {
                opened[word] = 0
                reset[word] = 0
            }
        } else {
            var skipped = highest + 2
            while skipped < stream {
                clear(skipped)
                skipped += 2
            }
        }
        clear(stream)
        let (word, bit) = Self.slot(stream)
        opened[word] |= bit
        highest = stream
    }

    /// The server sent RST_STREAM on `stream` (its own, or one the session sent for a stream error) — one
    /// it opened, or one it refused without opening it (above every stream opened so far).
    mutating func resetSent(_ stream: Int32) {
        if stream > highest { opened(stream) }
        guard remembers(stream) else { return }
        let (word, bit) = Self.slot(stream)
        reset[word] |= bit
    }

    /// A frame of `type` (RFC 9113's code) arrives on `stream`, at or below `highest`, which the session no
    /// longer knows (it closed).
    func verdict(type: UInt8, stream: Int32) -> Verdict {
        guard type == FrameType.data || type == FrameType.headers, remembers(stream) else { return .proceed }
        let (word, bit) = Self.slot(stream)
        if reset[word] & bit != 0 { return .proceed }
        if opened[word] & bit == 0, type == FrameType.headers { return .connectionError(.protocolError) }
        return .connectionError(.streamClosed)
    }

    private func remembers(_ stream: Int32) -> Bool {
        stream & 1 == 1 && stream <= highest && highest - stream < Self.window && !opened.isEmpty
    }

    private mutating func clear(_ stream: Int32) {
        let (word, bit) = Self.slot(stream)
        opened[word] &= ~bit
        reset[word] &= ~bit
    }

    private static func slot(_ stream: Int32) -> (word: Int, bit: UInt64) {
        let index = Int(stream >> 1) & (Int(window) / 2 - 1)
        return (index >> 6, 1 << UInt64(index & 63))
    }
}
