import Crypto
import DeviceProtocol
import Foundation
import NIOCore
import NIOHPACK
import ProviderAuth
import PushModel

/// The starting inputs of each target, written by `pushgate-fuzz seed <directory>` into
/// Fuzz/corpus/<target>/: valid inputs that reach deep (a signed request, each device message, the
/// shipped configuration), and a few near misses. Fuzzing adds what it finds that covers more.
public enum FuzzSeeds {
    public static func seeds(for target: FuzzTarget, root: String) -> [String: [UInt8]] {
        switch target {
        case .payload: payloads
        case .requestHead: requestHeads
        case .providerToken: providerTokens
        case .deviceMessage: deviceMessages
        case .configuration: configurations(root: root)
        case .registryFile: registryFiles
        case .http2Connection: http2Connections
        }
    }

    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    static let payloads: [String: [UInt8]] = [
        "alert": bytes(
            #"{"aps":{"alert":{"title":"Hi","body":"There","loc-args":["a",1]},"badge":3,"sound":"default"}}"#),
        "silent": bytes(
            #"{"aps":{"content-available":1},"job":{"id":"4f6a","since":1800000000,"ok":true,"none":null}}"#),
        "escapes": bytes(#"{"aps":{"alert":"\u00e9\ud83d\ude00\n\t\"\\\/"},"x":-0.5e-3}"#),
        "nested": bytes(#"{"aps":{"mutable-content":1,"category":"c","thread-id":"t"},"a":[[[{"b":[]}]]]}"#),
        "live": bytes(
            #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{"score":1},"relevance-score":0.5}}"#),
        "not-object": bytes("[1,2,3]"),
        "no-aps": bytes(#"{"x":1}"#),
    ]

    /// `name\0value` lines, then `\u{1}` and the body.
    static func request(_ headers: [(String, String)], body: String) -> [UInt8] {
        bytes(headers.map { $0.0 + "\u{0}" + $0.1 }.joined(separator: "\n") + "\u{1}" + body)
    }

    static var bearer: String { "bearer " + (try! Fixture.signer.token(issuedAt: Fixture.issuedAt)) }

    static var requestHeads: [String: [UInt8]] {
        let base: [(String, String)] = [
            (":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + Fixture.token),
            (":authority", "api.push.apple.com"), ("authorization", bearer), ("apns-topic", Fixture.bundleID),
        ]
        return [
            "alert": request(base + [("apns-push-type", "alert")], body: #"{"aps":{"alert":"hi"}}"#),
            "background": request(
                base + [("apns-push-type", "background"), ("apns-priority", "5"), ("apns-expiration", "0")],
                body: #"{"aps":{"content-available":1}}"#),
            "collapse": request(
                base + [("apns-collapse-id", "c1"), ("apns-id", "01234567-89ab-cdef-0123-456789abcdef")],
                body: #"{"aps":{"alert":"hi"}}"#),
            "live-activity": request(
                base.map { $0.0 == "apns-topic" ? ($0.0, Fixture.bundleID + ".push-type.liveactivity") : $0 }
                    + [("apns-push-type", "liveactivity")],
                body: #"{"aps":{"timestamp":1800000000,"event":"update","content-state":{}}}"#),
            "malformed": request([(":method", "POST"), ("te", "gzip"), (":path", "/")], body: ""),
            "no-token": request(Array(base.prefix(4)) + [("apns-topic", Fixture.bundleID)], body: "{}"),
        ]
    }

    static var providerTokens: [String: [UInt8]] {
        [
            "valid": bytes(bearer),
            "string-iat": bytes("bearer " + (try! Fixture.signer.token(issuedAt: Fixture.issuedAt, iatAsString: true))),
            "wrong-alg": bytes("bearer " + (try! Fixture.signer.token(issuedAt: Fixture.issuedAt, algorithm: "HS256"))),
            "garbage": bytes("bearer a.b.c"),
        ]
    }

    static var deviceMessages: [String: [UInt8]] {
        let id = "01234567-89ab-cdef-0123-456789abcdef"
        let device: [String: DeviceMessage] = [
            "register": .register(enrolment: "fleet secret"), "hello": .hello(deviceID: "d1", secret: "s"),
            "install": .install(bundleID: Fixture.bundleID), "uninstall": .uninstall(bundleID: Fixture.bundleID),
            "ack": .ack(apnsID: id), "complete": .complete(apnsID: id, bundleID: Fixture.bundleID, result: "newData"),
            "keep-alive": .keepAlive(sequence: 7),
            "app-state": .appState(bundleID: Fixture.bundleID, state: "background"),
            "conditions": .conditions(lowPowerMode: true, backgroundAppRefreshOff: false),
        ]
        let delivery = Delivery(
            apnsID: id, topic: Fixture.bundleID, bundleID: Fixture.bundleID, pushType: "background", priority: 5,
            collapseID: "c", kind: "background", deadlineSeconds: 30, rule: "on_budget",
            payload: #"{"aps":{"content-available":1}}"#)
        let gateway: [String: GatewayMessage] = [
            "welcome": .welcome(
                deviceID: "d1", apps: [InstalledApp(bundleID: Fixture.bundleID, token: Fixture.token)],
                keepAliveSeconds: 30),
            "notification": .notification(delivery),
            "keep-alive-ack": .keepAliveAck(sequence: 7, notifications: [delivery]),
            "closing": .closing(reason: "shutdown", reconnectAfterMilliseconds: 500),
        ]
        return device.mapValues { $0.encoded() }.merging(gateway.mapValues { $0.encoded() }) { first, _ in first }
            .merging(["bad-type": bytes(#"{"type":"nope"}"#), "not-json": bytes("{")]) { first, _ in first }
    }

    static func configurations(root: String) -> [String: [UInt8]] {
        var seeds: [String: [UInt8]] = [
            "small": bytes(
                "provider:\n  h2c:\n    port: 2198\ndevices:\n  delivery_window: 8\nstore:\n  backend: memory\n"),
            "bad-value": bytes("provider:\n  http2:\n    max_concurrent_streams: -1\n"),
        ]
        if let shipped = try? Data(contentsOf: URL(fileURLWithPath: root + "/Config/pushgate.yaml")) {
            seeds["shipped"] = Array(shipped)
        }
        return seeds
    }

    static var registryFiles: [String: [UInt8]] {
        let publicKey = Fixture.privateKey.publicKey.pemRepresentation
        let key = """
            keys:
            - team_id: \(Fixture.teamID)
              key_id: \(Fixture.keyID)
              public_key: |
            \(publicKey.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
              topics: [\(Fixture.bundleID)]
              environment: development
            """
        let certificate = """
            certificates:
            - sha256: \(String(repeating: "ab", count: 32))
              team_id: \(Fixture.teamID)
              topics: [\(Fixture.bundleID)]
            """
        let tokens = """
            tokens:
            - token: \(Fixture.token)
              bundle_id: \(Fixture.bundleID)
            - token: \(String(repeating: "cd", count: 32))
              bundle_id: \(Fixture.bundleID)
              unregistered_at: 1800000000000
            """
        return ["keys": [0] + bytes(key), "certificates": [1] + bytes(certificate), "tokens": [2] + bytes(tokens)]
    }

    // MARK: http2-connection

    /// One HTTP/2 frame: its 9-byte header and payload.
    static func frame(_ type: UInt8, flags: UInt8 = 0, stream: UInt32 = 0, _ payload: [UInt8] = []) -> [UInt8] {
        let length = payload.count
        var bytes: [UInt8] = [UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF), type, flags]
        bytes += [
            UInt8(stream >> 24 & 0x7F), UInt8(stream >> 16 & 0xFF), UInt8(stream >> 8 & 0xFF), UInt8(stream & 0xFF),
        ]
        return bytes + payload
    }

    /// An HPACK block of `headers`, as a client's encoder writes it.
    static func block(_ headers: [(String, String)], encoder: inout HPACKEncoder) -> [UInt8] {
        var buffer = ByteBuffer()
        try! encoder.encode(headers: HPACKHeaders(headers), to: &buffer)
        return Array(buffer.readableBytesView)
    }

    static var http2Connections: [String: [UInt8]] {
        let settings = frame(0x4)
        let head: [(String, String)] = [
            (":method", "POST"), (":scheme", "https"), (":path", "/3/device/" + Fixture.token),
            (":authority", "api.push.apple.com"), ("authorization", bearer), ("apns-topic", Fixture.bundleID),
            ("apns-push-type", "alert"),
        ]
        let body = bytes(#"{"aps":{"alert":"hi"}}"#)
        var encoder = HPACKEncoder(allocator: ByteBufferAllocator())
        let first = block(head, encoder: &encoder)
        let second = block(head, encoder: &encoder)  // indexed this time: the table in use
        let request = frame(0x1, flags: 0x4, stream: 1, first) + frame(0x0, flags: 0x1, stream: 1, body)
        let split = first.count / 2
        var fresh = HPACKEncoder(allocator: ByteBufferAllocator())
        let oversized = block(head + [("x-padding", String(repeating: "p", count: 9000))], encoder: &fresh)
        // The provider token as libnghttp2's clients send it (never indexed): the same literal each request,
        // which the nghttp2 codec reads once and then elides (`RepeatedTokenField`).
        var neverIndexed = HPACKEncoder(allocator: ByteBufferAllocator())
        let repeated = (0..<3).map { _ in
            var headers = HPACKHeaders()
            for (name, value) in head {
                headers.add(name: name, value: value, indexing: name == "authorization" ? .neverIndexed : .indexable)
            }
            var buffer = ByteBuffer()
            try! neverIndexed.encode(headers: headers, to: &buffer)
            return Array(buffer.readableBytesView)
        }
        return [
            "alert": settings + request,
            "two-streams": settings + request + frame(0x1, flags: 0x4, stream: 3, second)
                + frame(0x0, flags: 0x1, stream: 3, body),
            "continuation": settings + frame(0x1, stream: 1, Array(first[..<split]))
                + frame(0x9, flags: 0x4, stream: 1, Array(first[split...])) + frame(0x0, flags: 0x1, stream: 1, body),
            "reset": settings + frame(0x1, flags: 0x4, stream: 1, first) + frame(0x3, stream: 1, [0, 0, 0, 8]),
            "ping-window-goaway": settings + frame(0x6, [UInt8](repeating: 1, count: 8))
                + frame(0x8, [0, 1, 0, 0]) + frame(0x7, [0, 0, 0, 0, 0, 0, 0, 0]),
            "oversized-headers": settings + frame(0x1, flags: 0x5, stream: 1, oversized),
            "no-settings": request,
            "repeated-token": settings
                + [1, 3, 5].enumerated().flatMap { index, stream in
                    frame(0x1, flags: 0x4, stream: UInt32(stream), repeated[index])
                        + frame(0x0, flags: 0x1, stream: UInt32(stream), body)
                },
        ]
    }
}
