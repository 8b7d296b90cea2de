extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes are `literal`'s (header names and values compared as received, no string made).
    @inlinable
    public func equals(_ literal: StaticString) -> Bool {
        equals(UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

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

/// Eight hex digits of either case, the first in the lowest byte (as loaded little-endian), as 32 bits with
/// the first digit highest: `lowerHexDigits` read back, in the register too. `invalid` is not 0 when a byte
/// is no hex digit.
func hexDigitsValue(_ bytes: UInt64) -> (value: UInt64, invalid: UInt64) {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highBits: UInt64 = 0x8080_8080_8080_8080
    // For bytes below 0x80, the high bit of each byte says whether it lies in lo...hi.
    func within(_ x: UInt64, _ lo: UInt64, _ hi: UInt64) -> UInt64 {
        (x &+ ones &* (0x80 - lo)) & ~(x &+ ones &* (0x7F - hi)) & highBits
    }
    let lower = bytes | (ones &* 0x20)
    let valid = within(bytes, 0x30, 0x39) | within(lower, 0x61, 0x66)
    let invalid = (bytes & highBits) | (valid ^ highBits)
    // '0'–'9' → 0–9, 'a'–'f' → 1–6 plus 9 (letters have 0x40 set).
    var value = (lower & (ones &* 0x0F)) &+ ((lower >> 6) & ones) &* 9
    value = ((value << 4) | (value >> 8)) & 0x00FF_00FF_00FF_00FF
    value = ((value << 8) | (value >> 16)) & 0x0000_FFFF_0000_FFFF
    value = ((value << 16) | (value >> 32)) & 0xFFFF_FFFF
    return (value, invalid)
}
