import NIOCore

/// Rewrites the values of chosen parameters in the first frame the server writes — its SETTINGS — so that
/// the session keeps enforcing its ceilings while the peer sees the configured limits.
enum AdvertisedSettings {
    private static let frameHeaderLength = 9
    private static let settingLength = 6

    /// RFC 9113 §6.5.2's identifiers.
    static let maxConcurrentStreams: UInt16 = 0x3
    static let maxHeaderListSize: UInt16 = 0x6
    static let maxFrameSize: UInt16 = 0x5

    /// The parameters told to the peer, by identifier.
    static func values(_ limits: StreamLimits) -> [UInt16: UInt32] {
        [
            maxConcurrentStreams: UInt32(clamping: limits.concurrentStreams),
            maxHeaderListSize: UInt32(clamping: limits.headerListSize),
        ]
    }

    /// Rewrites the listed parameters of the SETTINGS frame at the start of `buffer`; false when the buffer
    /// does not start with a complete, non-ACK SETTINGS frame on stream 0 (it is then left alone).
    static func rewrite(_ buffer: inout ByteBuffer, values: [UInt16: UInt32]) -> Bool {
        let start = buffer.readerIndex
        guard let lengthHigh = buffer.getInteger(at: start, as: UInt8.self),
            let lengthLow = buffer.getInteger(at: start + 1, as: UInt16.self),
            let type = buffer.getInteger(at: start + 3, as: UInt8.self),
            let flags = buffer.getInteger(at: start + 4, as: UInt8.self),
            let stream = buffer.getInteger(at: start + 5, as: UInt32.self)
        else { return false }
        let length = Int(lengthHigh) << 16 | Int(lengthLow)
        guard type == FrameType.settings, flags == 0, stream == 0, length % settingLength == 0,
            buffer.readableBytes >= frameHeaderLength + length
        else { return false }
        var offset = start + frameHeaderLength
        while offset < start + frameHeaderLength + length {
            if let parameter = buffer.getInteger(at: offset, as: UInt16.self), let value = values[parameter] {
                buffer.setInteger(value, at: offset + 2)
            }
            offset += settingLength
        }
        return true
    }
}
