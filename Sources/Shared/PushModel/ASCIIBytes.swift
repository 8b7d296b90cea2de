extension UnsafeBufferPointer<UInt8> {
    /// Whether these bytes are `literal`'s (header names and values compared as received, no string made).
    @inlinable
    public func equals(_ literal: StaticString) -> Bool {
        guard count == literal.utf8CodeUnitCount else { return false }
        let other = literal.utf8Start
        for index in 0..<count where self[index] != other[index] { return false }
        return true
    }
}
