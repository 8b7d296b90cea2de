/// `apns-priority`: 10 (immediate, the default), 5 (considering power), 1 (power first, never wakes the device).
public enum Priority: Int, Sendable, Codable, Comparable {
    case low = 1
    case conservePower = 5
    case immediate = 10

    public init?(header: String) {
        guard let value = Int(header), let priority = Priority(rawValue: value) else { return nil }
        self = priority
    }

    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// `apns-expiration`, parsed: absent means the default storage; `0` one attempt and never stored;
/// otherwise store and retry until this UNIX time (seconds).
public enum Expiration: Equatable, Sendable, Codable {
    case storeByDefault
    case immediateOnly
    case at(unixSeconds: Int64)

    public init?(header: String) {
        guard let value = Int64(header), value >= 0 else { return nil }
        self = value == 0 ? .immediateOnly : .at(unixSeconds: value)
    }

    /// As the stores and the node links keep it: nil (store by default), 0 (`apns-expiration: 0`) or the
    /// expiry in Unix seconds.
    public var storedSeconds: Int64? {
        switch self {
        case .storeByDefault: nil
        case .immediateOnly: 0
        case .at(let seconds): seconds
        }
    }

    /// The value `storedSeconds` gave.
    public init(storedSeconds: Int64?) {
        switch storedSeconds {
        case nil: self = .storeByDefault
        case 0?: self = .immediateOnly
        case let seconds?: self = .at(unixSeconds: seconds)
        }
    }

    /// Whether a notification with this expiration may still be delivered at `now`.
    public func isLive(at now: UnixTime) -> Bool {
        switch self {
        case .storeByDefault, .immediateOnly: return true
        case .at(let seconds): return now.milliseconds <= seconds * 1000
        }
    }
}

/// `apns-collapse-id`: at most 64 bytes.
public struct CollapseID: Hashable, Sendable, Codable {
    public static let maximumBytes = 64
    public let value: String

    public init?(header: String) {
        guard !header.isEmpty, header.utf8.count <= Self.maximumBytes else { return nil }
        value = header
    }
}

/// `apns-id`: a canonical UUID (8-4-4-4-12 hex). Answered exactly as the client sent it, since clients
/// match responses by the exact string; a generated one is lower case.
///
/// Held as plain bits (128 for the UUID, 32 for which hex digits were upper case), not as text: ids
/// are copied into every policy state, action and log entry, and a value without a reference costs no
/// reference counting there. The text is written when it is needed (a response, a JSON body).
public struct APNsID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The 128 bits, for comparing and hashing (ids are compared as UUIDs, whatever their case).
    public let high: UInt64
    public let low: UInt64
    /// Bit `i` set: the i-th hex digit (of 32) was an upper-case letter in the text sent.
    private let upperCaseDigits: UInt32

    public init?(header: String) {
        guard let parsed = Self.parse(header.utf8) else { return nil }
        (high, low, upperCaseDigits) = parsed
    }

    public init(high: UInt64, low: UInt64) {
        self.init(high: high, low: low, upperCaseDigits: 0)
    }

    private init(high: UInt64, low: UInt64, upperCaseDigits: UInt32) {
        self.high = high
        self.low = low
        self.upperCaseDigits = upperCaseDigits
    }

    /// A new random (version 4) id, lower case.
    public static func generate<R: RandomNumberGenerator>(using generator: inout R) -> APNsID {
        var high = generator.next()
        var low = generator.next()
        high = (high & ~0xF000) | 0x4000  // version 4 (bits 12-15 of the third group)
        low = (low & ~(0xC << 60)) | (0x8 << 60)  // RFC 4122 variant
        return APNsID(high: high, low: low)
    }

    /// A new time-ordered (version 7, RFC 9562) id, lower case: 48 bits of Unix milliseconds, then 74 random
    /// bits. Ids generated one after another sort together, so the store's index on apns-id grows at its end
    /// instead of touching a random page per notification.
    public static func generate<R: RandomNumberGenerator>(at time: UnixTime, using generator: inout R) -> APNsID {
        let milliseconds = UInt64(truncatingIfNeeded: max(0, time.milliseconds)) & 0xFFFF_FFFF_FFFF
        let high = (milliseconds << 16) | 0x7000 | (generator.next() & 0x0FFF)
        let low = (generator.next() & ~(0xC << 60)) | (0x8 << 60)  // RFC 4122 variant
        return APNsID(high: high, low: low)
    }

    /// A new id from the system's random source (one syscall per id). The provider hot path uses a
    /// per-connection `FastRandom` instead.
    public static func generate() -> APNsID {
        var generator = SystemRandomNumberGenerator()
        return generate(using: &generator)
    }

    /// The id of a UUID's 16 bytes (most significant first, as `appendBytes` writes them), lower case;
    /// nil for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        let words = bytes.withUnsafeBytes {
            (
                UInt64(bigEndian: $0.loadUnaligned(as: UInt64.self)),
                UInt64(bigEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            )
        }
        self.init(high: words.0, low: words.1)
    }

    /// Whether the text sent had upper-case digits (`value` gives them back as sent).
    public var hasUpperCaseDigits: Bool { upperCaseDigits != 0 }

    /// The UUID's 16 bytes, most significant first, appended to `bytes`.
    public func appendBytes(to bytes: inout [UInt8]) {
        withUnsafeBytes(of: high.bigEndian) { bytes.append(contentsOf: $0) }
        withUnsafeBytes(of: low.bigEndian) { bytes.append(contentsOf: $0) }
    }

    /// The id as the client sent it (or lower case, when generated).
    public var value: String {
        String(unsafeUninitializedCapacity: 36) { write(into: $0) }
    }

    /// `value`'s 36 bytes appended to `bytes` (no string made on the way).
    public func appendText(to bytes: inout [UInt8]) {
        let start = bytes.count
        bytes.append(contentsOf: repeatElement(0, count: 36))
        bytes.withUnsafeMutableBufferPointer { _ = write(into: UnsafeMutableBufferPointer(rebasing: $0[start...])) }
    }

    /// Writes `value`'s 36 bytes at the start of `buffer` (which has room for them); returns 36.
    @discardableResult
    public func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        // 8-4-4-4-12 from four words of eight digits (`lowerHexDigits`): a word split by a dash is stored
        // whole, then its last four digits again one place on; the dashes go in last.
        precondition(buffer.count >= 36)
        let out = UnsafeMutableRawPointer(buffer.baseAddress!)
        func store(_ digits: UInt64, at offset: Int) {
            out.storeBytes(of: digits.littleEndian, toByteOffset: offset, as: UInt64.self)
        }
        func storeLastFour(_ digits: UInt64, at offset: Int) {
            out.storeBytes(
                of: UInt32(truncatingIfNeeded: digits >> 32).littleEndian, toByteOffset: offset, as: UInt32.self)
        }
        let second = lowerHexDigits(UInt32(truncatingIfNeeded: high))
        let third = lowerHexDigits(UInt32(truncatingIfNeeded: low >> 32))
        store(lowerHexDigits(UInt32(truncatingIfNeeded: high >> 32)), at: 0)
        store(second, at: 9)
        storeLastFour(second, at: 14)
        store(third, at: 19)
        storeLastFour(third, at: 24)
        store(lowerHexDigits(UInt32(truncatingIfNeeded: low)), at: 28)
        buffer[8] = UInt8(ascii: "-")
        buffer[13] = UInt8(ascii: "-")
        buffer[18] = UInt8(ascii: "-")
        buffer[23] = UInt8(ascii: "-")
        if upperCaseDigits != 0 {
            // As sent: the digits that were upper case letters are again.
            for nibble in 0..<32 where upperCaseDigits & (1 << UInt32(nibble)) != 0 {
                let position =
                    nibble + (nibble >= 8 ? 1 : 0) + (nibble >= 12 ? 1 : 0) + (nibble >= 16 ? 1 : 0)
                    + (nibble >= 20 ? 1 : 0)
                if buffer[position] >= UInt8(ascii: "a") { buffer[position] -= 0x20 }
            }
        }
        return 36
    }

    public static func == (lhs: APNsID, rhs: APNsID) -> Bool { lhs.high == rhs.high && lhs.low == rhs.low }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(high)
        hasher.combine(low)
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = APNsID(header: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a UUID: \(text)"))
        }
        self = id
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(value)
    }

    public var description: String { value }

    /// The 128 bits of a canonical UUID (8-4-4-4-12 hex digits) and its upper-case digits, or nil.
    static func parse(_ utf8: String.UTF8View) -> (UInt64, UInt64, UInt32)? {
        guard utf8.count == 36 else { return nil }
        func read(_ bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, UInt32)? {
            var high: UInt64 = 0
            var low: UInt64 = 0
            var upperCase: UInt32 = 0
            var nibbles = 0
            for index in 0..<36 {
                let byte = bytes[index]
                if index == 8 || index == 13 || index == 18 || index == 23 {
                    guard byte == UInt8(ascii: "-") else { return nil }
                    continue
                }
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte &- UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte &- UInt8(ascii: "a") &+ 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"):
                    digit = byte &- UInt8(ascii: "A") &+ 10
                    upperCase |= 1 << UInt32(nibbles)
                default: return nil
                }
                if nibbles < 16 { high = high << 4 | UInt64(digit) } else { low = low << 4 | UInt64(digit) }
                nibbles += 1
            }
            return (high, low, upperCase)
        }
        if let result = utf8.withContiguousStorageIfAvailable(read) { return result }
        return Array(utf8).withUnsafeBufferPointer(read)
    }
}

/// The device token from `/3/device/<token>`: hex, normalised to lower case. APNs tokens are 32 bytes
/// (64 hex characters); the accepted length range is configurable for fleets with longer tokens.
///
/// An APNs token is held as its 32 bytes in four words, not as text: it is parsed, hashed and compared on
/// every request (the directory's and the registry's lookups) and kept for every device of a fleet, and
/// inline bits cost no allocation and hash as four words. A token of any other length keeps its text.
/// The two forms never hold the same token, so equality is the tokens'.
public struct DeviceToken: Hashable, Sendable, Codable, CustomStringConvertible {
    private enum Storage: Hashable, Sendable {
        case bytes32(UInt64, UInt64, UInt64, UInt64)
        case text(String)
    }
    private let storage: Storage

    /// A head's token before its path is read.
    public static let placeholder = DeviceToken(storage: .bytes32(0, 0, 0, 0))

    private init(storage: Storage) {
        self.storage = storage
    }

    public init?(_ text: Substring, lengths: ClosedRange<Int> = 64...64) {
        let utf8 = text.utf8
        guard lengths.contains(utf8.count), utf8.count % 2 == 0 else { return nil }
        guard
            let storage = utf8.withContiguousStorageIfAvailable(Self.storage)
                ?? Array(utf8).withUnsafeBufferPointer(Self.storage)
        else { return nil }
        self.storage = storage
    }

    public init?(_ text: String, lengths: ClosedRange<Int> = 64...64) {
        self.init(Substring(text), lengths: lengths)
    }

    /// Hex digits (any case) as a token: 64 of them as four words, any other count as lower-case text.
    private static func storage(_ digits: UnsafeBufferPointer<UInt8>) -> Storage? {
        if digits.count == 64 {
            let base = digits.baseAddress!
            let (a, b, c, d) = (word(base), word(base + 16), word(base + 32), word(base + 48))
            guard a.invalid | b.invalid | c.invalid | d.invalid == 0 else { return nil }
            return .bytes32(a.value, b.value, c.value, d.value)
        }
        var hasUpperCase = false
        for byte in digits {
            guard byte.isHexDigit else { return nil }
            if byte < UInt8(ascii: "a"), byte > UInt8(ascii: "9") { hasUpperCase = true }
        }
        guard hasUpperCase else { return .text(String(decoding: digits, as: UTF8.self)) }
        return .text(
            String(unsafeUninitializedCapacity: digits.count) { out in
                for (index, byte) in digits.enumerated() { out[index] = byte > UInt8(ascii: "9") ? byte | 0x20 : byte }
                return digits.count
            })
    }

    /// Sixteen hex digits (any case) as a word, eight digits at a time in one 64-bit register
    /// (`hexDigitsValue`): a digit by digit loop was slower than the string it replaced. `invalid` is not 0
    /// when a byte is no hex digit.
    @inline(__always)
    private static func word(_ digits: UnsafePointer<UInt8>) -> (value: UInt64, invalid: UInt64) {
        let raw = UnsafeRawPointer(digits)
        let high = hexDigitsValue(UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)))
        let low = hexDigitsValue(UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        return (high.value << 32 | low.value, high.invalid | low.invalid)
    }

    /// The token as lower-case hex (made when asked for: a response, a row, a log line).
    public var hex: String {
        switch storage {
        case .text(let text): return text
        case .bytes32:
            return String(unsafeUninitializedCapacity: 64) { writeHex(into: $0) }
        }
    }

    /// `hex`'s bytes appended to `bytes` (no string made on the way).
    public func appendHex(to bytes: inout [UInt8]) {
        switch storage {
        case .text(let text): bytes.append(contentsOf: text.utf8)
        case .bytes32:
            let start = bytes.count
            bytes.append(contentsOf: repeatElement(0, count: 64))
            bytes.withUnsafeMutableBufferPointer {
                _ = writeHex(into: UnsafeMutableBufferPointer(rebasing: $0[start...]))
            }
        }
    }

    /// A 32-byte token's 64 digits at the start of `buffer` (which has room for them); returns 64.
    private func writeHex(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard case .bytes32(let a, let b, let c, let d) = storage else { return 0 }
        precondition(buffer.count >= 64)
        let out = UnsafeMutableRawPointer(buffer.baseAddress!)
        func store(_ word: UInt64, at offset: Int) {
            let first = lowerHexDigits(UInt32(truncatingIfNeeded: word >> 32))
            out.storeBytes(of: first.littleEndian, toByteOffset: offset, as: UInt64.self)
            let second = lowerHexDigits(UInt32(truncatingIfNeeded: word))
            out.storeBytes(of: second.littleEndian, toByteOffset: offset + 8, as: UInt64.self)
        }
        store(a, at: 0)
        store(b, at: 16)
        store(c, at: 32)
        store(d, at: 48)
        return 64
    }

    /// The token's bytes (half as many as its hex digits), appended to `bytes`.
    public func appendBytes(to bytes: inout [UInt8]) {
        switch storage {
        case .bytes32(let a, let b, let c, let d):
            func append(_ word: UInt64) { withUnsafeBytes(of: word.bigEndian) { bytes.append(contentsOf: $0) } }
            append(a)
            append(b)
            append(c)
            append(d)
        case .text(let text):
            // An even count of hex digits by construction (`storage`), so it always decodes.
            bytes.append(contentsOf: Hex.decode(text) ?? [])
        }
    }

    /// An APNs token's 32 bytes as four words, for a map of very many tokens to key by: 32 bytes a key,
    /// where a `DeviceToken` takes 40 with its form's tag. Nil for a token of any other length.
    public var words: Words? {
        guard case .bytes32(let a, let b, let c, let d) = storage else { return nil }
        return Words(a: a, b: b, c: c, d: d)
    }

    /// A 32-byte token's words, most significant first.
    public struct Words: Hashable, Sendable {
        public var a, b, c, d: UInt64
    }

    /// Whether the token is held inline (an APNs token's 32 bytes) rather than as text.
    public var isInline: Bool {
        if case .bytes32 = storage { return true }
        return false
    }

    public var description: String { hex }

    // The same JSON as ever: `{"hex": "…"}`.
    private enum CodingKeys: String, CodingKey { case hex }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let hex = try container.decode(String.self, forKey: .hex)
        guard let token = DeviceToken(hex, lengths: 2...4096) else {
            throw DecodingError.dataCorruptedError(forKey: .hex, in: container, debugDescription: "not a device token")
        }
        self = token
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(hex, forKey: .hex)
    }
}

/// `apns-topic`: a bundle id, possibly with a push type's suffix.
public struct Topic: Hashable, Sendable, Codable, CustomStringConvertible {
    public static let maximumBytes = 255
    public let value: String

    /// A topic is printable ASCII without spaces, 1 to 255 bytes.
    public init?(_ text: String) {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= Self.maximumBytes,
            utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { return nil }
        value = text
    }

    /// The bundle id this topic addresses for `pushType`, or `nil` when the topic lacks the suffix the
    /// push type requires.
    public func bundleID(for pushType: PushType) -> String? {
        guard let suffix = pushType.topicSuffix else { return value }
        guard value.hasSuffix(suffix), value.utf8.count > suffix.utf8.count else { return nil }
        return String(value.dropLast(suffix.count))
    }

    public var description: String { value }
}

/// Wall-clock time as milliseconds since the UNIX epoch. Policy code receives it as an argument.
public struct UnixTime: Comparable, Hashable, Sendable, Codable {
    public var milliseconds: Int64

    public init(milliseconds: Int64) { self.milliseconds = milliseconds }
    public init(seconds: Int64) { self.milliseconds = seconds * 1000 }

    public var seconds: Int64 { milliseconds / 1000 }

    public static func < (lhs: UnixTime, rhs: UnixTime) -> Bool { lhs.milliseconds < rhs.milliseconds }

    public func adding(seconds: Int64) -> UnixTime { UnixTime(milliseconds: milliseconds + seconds * 1000) }
    public func adding(milliseconds ms: Int64) -> UnixTime { UnixTime(milliseconds: milliseconds + ms) }
}

extension UInt8 {
    @usableFromInline
    var isHexDigit: Bool {
        (self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9"))
            || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f"))
            || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
    }
}
