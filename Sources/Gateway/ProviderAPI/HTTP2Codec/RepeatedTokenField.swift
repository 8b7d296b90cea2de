import PushModel

/// A provider token sent again and again, read once.
///
/// A backend signs a provider token every 20–60 minutes and sends it on every request in between. HPACK
/// clients built on libnghttp2 (curl, h2load, most C and Python clients) send `authorization` as a literal
/// that is never indexed, so the same ~200 octets arrive Huffman-coded on every request, and decoding them
/// was the largest single cost left in the front door (about three quarters of libnghttp2's Huffman
/// decoding, ~12 % of the event loop's samples under h2load).
///
/// The codec reads each HEADERS frame's block ahead of libnghttp2 (`locate`): when its provider-token field
/// is a literal without indexing, or never indexed, whose octets are exactly those of the last token the
/// session decoded on this connection, the codec hands the session the block with a short marker in that
/// literal's place — eight octets drawn at random for the connection, sent without Huffman coding — and
/// a field whose value is the marker is read as the token decoded before. The same octets decode to the
/// same token, and such a literal changes no HPACK table, so what the session and the handler see is what
/// they would have seen: every rule, size and status is the same. A block the locator does not follow to
/// the field (a CONTINUATION, padding, priority, an incrementally indexed token, anything malformed) is
/// read as sent, by the session alone.
///
/// A token is learned from the first block of a new stream (no HEADERS frame on that stream came before),
/// so that the field the session decodes at that place of that stream's block is the literal located:
/// learned when the read is done, so that every field elided in a read is the token known when it was
/// planned.
///
/// A pure state machine over one connection: no I/O, no clock.
struct RepeatedTokenField {
    /// The token as last decoded on this connection, and its string literal (H bit, length, octets) as sent.
    private var encoded: [UInt8] = []
    private var decoded: [UInt8]?
    /// What the session decodes in an elided field's place: eight octets drawn at random for the connection.
    private let marker: [UInt8]
    /// What an elided literal becomes: the marker as a string literal (no Huffman coding, length 8).
    let replacement: [UInt8]
    /// A token field the session will decode in this read: where it is (stream, place in the block), its
    /// literal, and once decoded its value.
    private var candidate: (stream: Int32, field: Int, encoded: [UInt8], decoded: [UInt8]?)?
    /// The highest stream a HEADERS frame was seen on.
    private var highestStream: Int32 = 0

    /// A token's literal is remembered up to this size (a provider token is ~200 octets).
    static let maximumLiteral = 4096
    /// The static table's index of `authorization` (RFC 7541, Appendix A).
    static let authorizationIndex = 23

    init<Generator: RandomNumberGenerator>(using generator: inout Generator) {
        marker = withUnsafeBytes(of: generator.next() as UInt64) { Array($0) }
        replacement = [UInt8(marker.count)] + marker
    }

    init() {
        var generator = SystemRandomNumberGenerator()
        self.init(using: &generator)
    }

    /// Every HEADERS frame in the order the client sent them, with its block when it is whole in the read
    /// and in the frame (END_HEADERS, no padding, no priority): the range of the block's octets to replace
    /// with `replacement`, when they are the last token's literal; otherwise nil (and a token on a new
    /// stream is learned once the session decodes it).
    mutating func plan(stream: Int32, block: UnsafeRawBufferPointer?) -> Range<Int>? {
        let newStream = stream > highestStream
        highestStream = max(highestStream, stream)
        guard let block, let (field, literal) = Self.locate(in: block),
            literal.count > replacement.count, literal.count <= Self.maximumLiteral
        else { return nil }
        let octets = UnsafeRawBufferPointer(rebasing: block[literal])
        if decoded != nil, octets.count == encoded.count,
            encoded.withUnsafeBytes({ $0.bindMemory(to: UInt8.self).equals(octets.bindMemory(to: UInt8.self)) })
        {
            return literal
        }
        if newStream, candidate == nil { candidate = (stream, field, Array(octets), nil) }
        return nil
    }

    /// The value of a field as the session decoded it (`field`: its place in its block, from 0): the token,
    /// for the marker; nil to keep the value received (and a candidate's value is kept to be learned).
    mutating func value(
        stream: Int32, field: Int, name: UnsafeBufferPointer<UInt8>, received: UnsafeBufferPointer<UInt8>
    )
        -> [UInt8]?
    {
        if received.count == marker.count, name.equals("authorization"),
            marker.withUnsafeBufferPointer({ $0.equals(received) })
        {
            return decoded
        }
        if let waiting = candidate, waiting.decoded == nil, waiting.stream == stream, waiting.field == field,
            name.equals("authorization")
        {
            candidate!.decoded = Array(received)
        }
        return nil
    }

    /// The read is done: a token decoded in it is the one to recognise from now on.
    mutating func finishRead() {
        if let learned = candidate, let value = learned.decoded {
            encoded = learned.encoded
            decoded = value
        }
        candidate = nil
    }

    // MARK: The block's representations (RFC 7541 §6)

    /// The first field of `block` that is `authorization` by the static table's name, as a literal without
    /// indexing or never indexed: its place among the block's fields and the range of its value's string
    /// literal. Nil when there is none, or the block is malformed before it (the session judges that).
    static func locate(in block: UnsafeRawBufferPointer) -> (field: Int, literal: Range<Int>)? {
        var reader = Reader(bytes: block)
        var field = 0
        while reader.position < block.count {
            let first = block[reader.position]
            if first & 0x80 != 0 {  // §6.1 indexed field
                guard reader.integer(prefix: 7) != nil else { return nil }
            } else if first & 0xC0 == 0x40 {  // §6.2.1 literal with incremental indexing
                guard let name = reader.integer(prefix: 6), name != 0 || reader.string() != nil,
                    reader.string() != nil
                else { return nil }
            } else if first & 0xE0 == 0x20 {  // §6.3 dynamic table size update: no field
                guard reader.integer(prefix: 5) != nil else { return nil }
                continue
            } else {  // §6.2.2, §6.2.3 literal without indexing, never indexed
                guard let name = reader.integer(prefix: 4) else { return nil }
                if name == 0 {
                    guard reader.string() != nil else { return nil }
                }
                let start = reader.position
                guard reader.string() != nil else { return nil }
                if name == authorizationIndex { return (field, start..<reader.position) }
            }
            field += 1
        }
        return nil
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        /// §5.1: an integer with an N-bit prefix; nil past the block's end or above 2^28.
        mutating func integer(prefix: Int) -> Int? {
            guard position < bytes.count else { return nil }
            let mask = (1 << prefix) - 1
            var value = Int(bytes[position]) & mask
            position += 1
            guard value == mask else { return value }
            var shift = 0
            while position < bytes.count, shift <= 21 {
                let byte = bytes[position]
                position += 1
                value += Int(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
            return nil
        }

        /// §5.2: a string literal (H bit, length, octets), skipped; nil when it does not end in the block.
        mutating func string() -> Int? {
            guard let length = integer(prefix: 7), length <= bytes.count - position else { return nil }
            position += length
            return length
        }
    }
}
