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
