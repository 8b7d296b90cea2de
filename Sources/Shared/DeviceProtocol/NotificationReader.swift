/// The `notification` message read without `JSONDecoder`, as the device reads it for every push: in a
/// profile of an alert to 15,000 devices (`Benchmarks/fleet.sh 15000 1 5`, `FLEET_PERF`), the decoder
/// was about 22 % of the simulators' CPU (Benchmarks/HISTORY.md).
///
/// Only the form `NotificationWriter` writes takes this path: the keys in sorted order, each once, no
/// white space, strings with JSON's escapes (a `\u` escape of a surrogate, a raw control character or
/// bytes that are not UTF-8 are left to the decoder), whole numbers. Anything else — another writer's
/// spacing or order, an unknown key, a `null` — returns nil, and the decoder reads the message as before,
/// to the same result or its error.
struct NotificationReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    static func read(_ bytes: some Collection<UInt8>) -> Delivery? {
        bytes.withContiguousStorageIfAvailable { buffer in
            var reader = NotificationReader(bytes: buffer)
            return reader.message()
        } ?? nil
    }

    private init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    private mutating func message() -> Delivery? {
        guard take(Self.opening) else { return nil }
        var fields = Fields()
        var previous = -1
        repeat {
            guard let key = key(after: previous) else { return nil }
            previous = key.rawValue
            if key == .deadlineSeconds || key == .priority {
                guard let number = number() else { return nil }
                if key == .priority { fields.priority = number } else { fields.deadlineSeconds = number }
            } else {
                guard let string = string() else { return nil }
                fields.set(key, string)
            }
        } while take(UInt8(ascii: ","))
        guard take(Self.closing), index == bytes.count else { return nil }
        return fields.delivery
    }

    /// The message's fields, in the writer's (sorted) order.
    private enum Key: Int {
        case apnsID, bundleID, channel, collapseID, deadlineSeconds, kind, payload, priority, pushType, rule, token,
            topic

        /// Each case's name on the wire, in the cases' order.
        static let names = [
            "apns_id", "bundle_id", "channel", "collapse_id", "deadline_seconds", "kind", "payload", "priority",
            "push_type", "rule", "token", "topic",
        ].map { Array($0.utf8) }
    }

    /// What the message gave so far, by field.
    private struct Fields {
        var apnsID, bundleID, channel, collapseID, kind, payload, pushType, rule, token, topic: String?
        var deadlineSeconds, priority: Int?

        mutating func set(_ key: Key, _ value: String) {
            switch key {
            case .apnsID: apnsID = value
            case .bundleID: bundleID = value
            case .channel: channel = value
            case .collapseID: collapseID = value
            case .kind: kind = value
            case .payload: payload = value
            case .pushType: pushType = value
            case .rule: rule = value
            case .token: token = value
            case .topic: topic = value
            case .deadlineSeconds, .priority: break  // numbers
            }
        }

        var delivery: Delivery? {
            guard let apnsID, let topic, let bundleID, let pushType, let priority, let kind, let rule, let payload
            else { return nil }
            return Delivery(
                apnsID: apnsID, topic: topic, bundleID: bundleID, pushType: pushType, priority: priority,
                collapseID: collapseID, kind: kind, deadlineSeconds: deadlineSeconds, rule: rule, payload: payload,
                token: token, channel: channel)
        }
    }

    private static let opening = Array(#"{"notification":{"#.utf8)
    private static let closing = Array(#"},"type":"notification"}"#.utf8)

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func take(_ literal: [UInt8]) -> Bool {
        guard bytes.count - index >= literal.count,
            UnsafeBufferPointer(rebasing: bytes[index..<(index + literal.count)]).elementsEqual(literal)
        else { return false }
        index += literal.count
        return true
    }

    /// `"name":` for one of the message's keys that come after `previous` (sorted, each once).
    private mutating func key(after previous: Int) -> Key? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") { index += 1 }
        let name = UnsafeBufferPointer(rebasing: bytes[start..<index])
        guard take(UInt8(ascii: "\"")), take(UInt8(ascii: ":")),
            let found = Key.names[(previous + 1)...].firstIndex(where: { $0.elementsEqual(name) })
        else { return nil }
        return Key(rawValue: found)
    }

    /// A whole number as JSON writes one: an optional minus, no leading zero, no fraction or exponent.
    private mutating func number() -> Int? {
        let negative = take(UInt8(ascii: "-"))
        let start = index
        var value = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            let (times, overflowTimes) = value.multipliedReportingOverflow(by: 10)
            let (plus, overflowPlus) = times.addingReportingOverflow(Int(bytes[index] - UInt8(ascii: "0")))
            guard !overflowTimes, !overflowPlus else { return nil }
            value = plus
            index += 1
        }
        let digits = index - start
        guard digits > 0, digits == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) {
            return nil
        }
        return negative ? -value : value
    }

    /// A JSON string, its escapes undone; nil for what the decoder should judge (see the type's note).
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        var unescaped: [UInt8] = []
        var escaped = false
        var start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let rest = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                guard escaped else { return String(validating: rest, as: UTF8.self) }
                unescaped.append(contentsOf: rest)
                return String(validating: unescaped, as: UTF8.self)
            }
            if byte < 0x20 { return nil }
            guard byte == UInt8(ascii: "\\") else {
                index += 1
                continue
            }
            escaped = true
            unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            index += 1
            guard index < bytes.count else { return nil }
            let escape = bytes[index]
            index += 1
            if let byte = Self.shortEscapes[escape] {
                unescaped.append(byte)
            } else {
                guard escape == UInt8(ascii: "u"), let scalar = hex4(), !(0xD800...0xDFFF).contains(scalar),
                    let unicode = Unicode.Scalar(scalar)
                else { return nil }
                unescaped.append(contentsOf: String(Character(unicode)).utf8)
            }
            start = index
        }
        return nil
    }

    /// Four hex digits (`\u` escapes), either case.
    private mutating func hex4() -> UInt32? {
        guard bytes.count - index >= 4 else { return nil }
        var value: UInt32 = 0
        for byte in bytes[index..<(index + 4)] {
            let lower = (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte) ? byte + 32 : byte
            guard let digit = Self.hexDigits.firstIndex(of: lower) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        index += 4
        return value
    }

    /// JSON's two-character escapes: the byte after the backslash, and the byte it stands for.
    private static let shortEscapes: [UInt8: UInt8] = [
        UInt8(ascii: "\""): UInt8(ascii: "\""), UInt8(ascii: "\\"): UInt8(ascii: "\\"),
        UInt8(ascii: "/"): UInt8(ascii: "/"),
        UInt8(ascii: "b"): 0x08, UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D,
        UInt8(ascii: "t"): 0x09,
    ]

    private static let hexDigits = Array("0123456789abcdef".utf8)
}
