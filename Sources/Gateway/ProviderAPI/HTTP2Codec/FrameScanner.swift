/// Where each frame of the client's HTTP/2 byte stream begins, read ahead of libnghttp2 in the same bytes:
/// after the 24-byte connection preface, a frame is a 9-byte header (its payload's length, type, flags,
/// stream) and that many bytes, and a read may end anywhere in either. `NGHTTP2Codec` needs the DATA
/// frames' headers before the session reads them: the session ignores a DATA frame on a stream it has
/// forgotten without telling its callbacks, where RFC 9113 §5.1 wants some of them refused
/// (`ClosedStreams`).
struct FrameScanner {
    struct FrameHeader: Equatable {
        /// Where the frame's header begins in the bytes scanned (0 when it began in an earlier read).
        var offset: Int
        var type: UInt8
        var flags: UInt8
        var stream: Int32
        /// The payload's length.
        var length: Int
        /// The header's nine bytes are in the bytes scanned, at `offset` (it did not begin in an earlier read).
        var inPlace: Bool
    }

    private var prefaceLeft = 24
    /// The header being read, when a read ended inside it.
    private var partial: [UInt8] = []
    /// Where it began in the bytes being scanned (0 when it began in an earlier read).
    private var partialStart = 0
    private var payloadLeft = 0

    /// Calls `each` with every frame header completed in `bytes`, in order.
    mutating func scan(_ bytes: UnsafeRawBufferPointer, _ each: (FrameHeader) -> Void) {
        var offset = 0
        let count = bytes.count
        // A header carried over from the last read begins, as far as these bytes go, at their start.
        partialStart = 0
        if prefaceLeft > 0 {
            let skipped = min(prefaceLeft, count)
            prefaceLeft -= skipped
            offset = skipped
        }
        while offset < count {
            if payloadLeft > 0 {
                let skipped = min(payloadLeft, count - offset)
                payloadLeft -= skipped
                offset += skipped
                continue
            }
            if partial.isEmpty, count - offset >= 9 {
                // The whole header is here (the usual case): read in place.
                payloadLeft = Int(bytes[offset]) << 16 | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2])
                let header = FrameHeader(
                    offset: offset, type: bytes[offset + 3], flags: bytes[offset + 4],
                    stream: Self.stream(bytes[offset + 5], bytes[offset + 6], bytes[offset + 7], bytes[offset + 8]),
                    length: payloadLeft, inPlace: true)
                offset += 9
                each(header)
                continue
            }
            if partial.isEmpty { partialStart = offset }
            let taken = min(9 - partial.count, count - offset)
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + taken)]))
            offset += taken
            guard partial.count == 9 else { continue }
            payloadLeft = Int(partial[0]) << 16 | Int(partial[1]) << 8 | Int(partial[2])
            let header = FrameHeader(
                offset: partialStart, type: partial[3], flags: partial[4],
                stream: Self.stream(partial[5], partial[6], partial[7], partial[8]), length: payloadLeft,
                inPlace: false)
            partial.removeAll(keepingCapacity: true)
            each(header)
        }
    }

    /// The stream identifier, without the reserved bit.
    private static func stream(_ a: UInt8, _ b: UInt8, _ c: UInt8, _ d: UInt8) -> Int32 {
        Int32(bitPattern: (UInt32(a) << 24 | UInt32(b) << 16 | UInt32(c) << 8 | UInt32(d)) & 0x7FFF_FFFF)
    }
}
