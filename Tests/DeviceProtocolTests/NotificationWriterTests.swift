import Foundation
import PushModel
import Testing

@testable import DeviceProtocol

/// The notification message is written and read by hand (`NotificationWriter`, `NotificationReader`):
/// its bytes are exactly what `JSONEncoder` writes for it (sorted keys, slashes as they are), whatever its
/// strings hold; it reads back as itself; and whatever bytes the reader takes, it reads as `JSONDecoder`
/// does.
@Suite struct NotificationWriterTests {
    /// The message as the coders see it.
    struct Message: Codable {
        var notification: Delivery
        var type = "notification"
    }

    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let strings = [
        "", "plain", #"{"aps":{"alert":"hi"}}"#, "quote \" and backslash \\ and slash /", "line\nfeed\r\ttab",
        "\u{08}\u{0C}\u{01}\u{1F}\u{7F}", "é ü 日本 🚀", "\\u0041 is not an escape here",
    ]

    static var deliveries: [Delivery] {
        var all: [Delivery] = []
        for (index, text) in strings.enumerated() {
            let full = index % 2 == 0
            all.append(
                Delivery(
                    apnsID: "01a3185c-5000-7abc-8def-0123456789ab", topic: "com.example.a" + text,
                    bundleID: "com.example.a", pushType: "background", priority: index % 2 == 0 ? 5 : 10,
                    collapseID: full ? "collapse " + text : nil, kind: "background",
                    deadlineSeconds: full ? 30 : nil, rule: "on_budget", payload: text,
                    token: full ? "ab" + text : nil, channel: full ? "Y2hhbm5lbA==" + text : nil))
        }
        return all
    }

    @Test(arguments: deliveries) func theBytesAreTheEncoders(delivery: Delivery) throws {
        let written = GatewayMessage.notification(delivery).encoded()
        let coded = Array(try Self.encoder.encode(Message(notification: delivery)))
        #expect(String(decoding: written, as: UTF8.self) == String(decoding: coded, as: UTF8.self))
        #expect(written == coded)
    }

    @Test(arguments: deliveries) func itReadsBackAsItself(delivery: Delivery) throws {
        let written = GatewayMessage.notification(delivery).encoded()
        #expect(NotificationReader.read(written) == delivery)
        #expect(try GatewayMessage.decode(written) == .notification(delivery))
    }

    /// The written bytes changed at random (a byte replaced by one JSON cares about, one inserted, one
    /// removed), 3,000 times each: where the reader reads one, the decoder reads the same message.
    @Test(arguments: deliveries) func whatTheReaderTakesTheDecoderReadsTheSame(delivery: Delivery) throws {
        let written = GatewayMessage.notification(delivery).encoded()
        let interesting = Array(#""\u0d8e.-,:{}nl 7"#.utf8) + [0x01, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF]
        var random = FastRandom(seed: UInt64(written.count))
        var read = 0
        for _ in 0..<3000 {
            var bytes = written
            for _ in 0..<Int.random(in: 1...2, using: &random) {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<3, using: &random) {
                case 0: bytes[at] = interesting.randomElement(using: &random)!
                case 1: bytes.insert(interesting.randomElement(using: &random)!, at: at)
                default: bytes.remove(at: at)
                }
            }
            guard let fast = NotificationReader.read(bytes) else { continue }
            read += 1
            let decoded = try? JSONDecoder().decode(Message.self, from: Data(bytes))
            #expect(decoded?.notification == fast, "\(String(decoding: bytes, as: UTF8.self))")
            #expect(decoded?.type == "notification")
        }
        #expect(read > 0)
    }
}
