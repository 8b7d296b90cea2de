extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes are `literal`'s (header names and values compared as received, no string made).
    @inlinable
    public func equals(_ literal: StaticString) -> Bool {
        equals(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether both hold the same bytes, compared eight at a time (a provider token, ~250 bytes, is
    /// compared with the connection's last on every request).
    @inlinable
    public func equals(_ other: UnsafeBufferPointer<UInt8>) -> Bool {
        guard count == other.count else { return false }
        guard let mine = baseAddress, let theirs = other.baseAddress else { return true }
        let a = UnsafeRawPointer(mine)
        let b = UnsafeRawPointer(theirs)
        var index = 0
        while index &+ 8 <= count {
            guard
                a.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                    == b.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            else { return false }
            index &+= 8
        }
        while index < count {
            guard self[index] == other[index] else { return false }
            index &+= 1
        }
        return true
    }
}

/// Lower-case hex digits of 32 bits, eight at a time in one 64-bit register (ids and tokens are written on
/// every request): the first digit (the highest nibble) in the lowest byte, so that storing the word
/// little-endian writes the digits in order.
func lowerHexDigits(_ value: UInt32) -> UInt64 {
    let ones: UInt64 = 0x0101_0101_0101_0101
    var spread = UInt64(value)
    spread = ((spread & 0xFFFF_0000) << 16) | (spread & 0xFFFF)
    spread = ((spread & 0x0000_FF00_0000_FF00) << 8) | (spread & 0x0000_00FF_0000_00FF)
    spread = ((spread & 0x00F0_00F0_00F0_00F0) << 4) | (spread & 0x000F_000F_000F_000F)
    // A nibble in each byte, the lowest first; 10–15 get 0x27 more to land on 'a'–'f'.
    let letters = ((spread &+ ones &* 0x06) >> 4) & ones
    return (spread &+ ones &* 0x30 &+ letters &* 0x27).byteSwapped
}
