/// RFC 9113's frame types (§6), as the 9-byte frame header carries them.
enum FrameType {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1
    static let rstStream: UInt8 = 0x3
    static let settings: UInt8 = 0x4
}

/// RFC 9113's frame flags (§6), by the frames that define them.
enum FrameFlag {
    /// DATA, HEADERS: the last frame of the stream.
    static let endStream: UInt8 = 0x1
    /// SETTINGS: an acknowledgement.
    static let ack: UInt8 = 0x1
    /// HEADERS: the header block ends in this frame (no CONTINUATION follows).
    static let endHeaders: UInt8 = 0x4
    /// DATA, HEADERS: padding follows the payload.
    static let padded: UInt8 = 0x8
    /// HEADERS: a priority (stream dependency and weight) precedes the block.
    static let priority: UInt8 = 0x20
}
