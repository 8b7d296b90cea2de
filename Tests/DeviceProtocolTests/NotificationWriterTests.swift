import DeviceProtocol
import Foundation
import Testing

/// The notification message is written by hand (`NotificationWriter`): its bytes are exactly what
/// `JSONEncoder` writes for it (sorted keys, slashes as they are), whatever its strings hold, and it
/// reads back as itself.
@Suite struct NotificationWriterTests {
    /// The message as the coders see it.
    struct Message: Encodable {
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
        #expect(try GatewayMessage.decode(written) == .notification(delivery))
    }
}
