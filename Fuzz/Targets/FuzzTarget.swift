import Crypto
import DeviceProtocol
import Foundation
import Gateway
import GatewayFiles
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import ProviderAPI
import ProviderAuth
import PushIntake
import PushModel

/// Every parser that reads a peer's or a user's input, as a function of bytes: the fuzz driver
/// (`pushgate-fuzz`, built with libFuzzer by Fuzz/run.sh) calls one per input, and FuzzRegressionTests
/// replays the corpus and every input that once failed through the same functions.
///
/// A target traps only on a broken invariant (`check`); a refused input is the expected outcome.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// The provider payload scanner (`PayloadScanner`), checked against Foundation's JSON parser.
    /// (Changed while a fuzz run was under way: `aps` became optional; the invariant follows.)
    case payload
    /// A request's header block and body through everything the provider API decides before the intake:
    /// RFC 9113's rules, the APNs head, authentication (a token signed by `Fixture.signer`), the body.
    /// Input: lines `name\0value` separated by `\n`; after a `\u{1}` byte, the body.
    case requestHead = "request-head"
    /// An `authorization` header through the bearer/JWT parser and the ES256 verification.
    case providerToken = "provider-token"
    /// A device's WebSocket text through the device protocol decoder (and the gateway's messages through
    /// theirs), each checked to round-trip.
    case deviceMessage = "device-message"
    /// A configuration file (YAML) through the layered configuration and its typed validation.
    case configuration
    /// A registry file (keys, certificates or device tokens, by the first byte) through its loader.
    case registryFile = "registry-file"
    /// What a provider sends on a connection after the client preface — frames, HPACK blocks, bodies —
    /// through the HTTP/2 codec (libnghttp2's) and the request handler, on an embedded channel, then two
    /// hours of its timers.
    case http2Connection = "http2-connection"

    public func run(_ input: UnsafeRawBufferPointer) {
        switch self {
        case .payload: Self.payload(input)
        case .requestHead: Self.requestHead(Array(input))
        case .providerToken: Self.providerToken(String(decoding: input, as: UTF8.self))
        case .deviceMessage: Self.deviceMessage(input)
        case .configuration: Self.configuration(String(decoding: input, as: UTF8.self))
        case .registryFile: Self.registryFile(Array(input))
        case .http2Connection: Self.http2Connection(input)
        }
    }

    public func run(_ input: [UInt8]) { input.withUnsafeBytes { run($0) } }

    // MARK: Targets

    static func payload(_ input: UnsafeRawBufferPointer) {
        guard case .success = PayloadScanner.scan(input) else { return }
        // What the scanner accepts is JSON with an `aps` object. Foundation refuses numbers it cannot
        // represent (1e400, long integers), which RFC 8259 allows: those inputs are not compared.
        if Self.hasUnrepresentableNumber(input) { return }
        let object = try? JSONSerialization.jsonObject(with: Data(input))
        check(object is [String: Any], "accepted a payload Foundation reads differently")
    }

    static func requestHead(_ input: [UInt8]) { _ = decideRequest(input) }

    static func http2Connection(_ input: UnsafeRawBufferPointer) {
        for perRequest in [false, true] {
            let written = connectionWrites(input, readPerRequest: perRequest)
            // Whatever the client sent, the server spoke HTTP/2 first: its SETTINGS frame.
            check(
                written.first?.getInteger(at: written.first!.readerIndex + 3, as: UInt8.self) == 0x4,
                "the codec's first bytes are not a SETTINGS frame")
        }
    }

    /// The `:status` a provider connection answered each stream with, for `input` (frames read
    /// back from its bytes, its HEADERS blocks through NIO's HPACK decoder).
    public static func answeredStatuses(_ input: [UInt8], readPerRequest: Bool = false)
        -> [UInt32: String]
    {
        var bytes = ByteBuffer()
        for buffer in input.withUnsafeBytes({ connectionWrites($0, readPerRequest: readPerRequest) }) {
            bytes.writeImmutableBuffer(buffer)
        }
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        var statuses: [UInt32: String] = [:]
        while let high = bytes.readInteger(as: UInt8.self), let low = bytes.readInteger(as: UInt16.self),
            let type = bytes.readInteger(as: UInt8.self), bytes.readInteger(as: UInt8.self) != nil,
            let stream = bytes.readInteger(as: UInt32.self),
            var payload = bytes.readSlice(length: Int(high) << 16 | Int(low))
        {
            guard type == 0x1, let headers = try? decoder.decodeHeaders(from: &payload) else { continue }
            statuses[stream & 0x7FFF_FFFF] = headers.first(name: ":status")
        }
        return statuses
    }

    /// The bytes a provider connection wrote for `input` (sent after the client preface), in order:
    /// read at once, or a read from each HEADERS frame to the next (as a client that writes each request
    /// apart is read: what one read teaches the codec, the next uses — the provider token it elides).
    public static func connectionWrites(
        _ input: UnsafeRawBufferPointer, readPerRequest: Bool = false
    ) -> [ByteBuffer] {
        let channel = EmbeddedChannel()
        try! ProviderServer.addHTTP2Handlers(to: channel, context: Fixture.context, logger: Fixture.logger)
        try! channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        var buffer = channel.allocator.buffer(capacity: 24 + input.count)
        buffer.writeString("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        buffer.writeBytes(input)
        // A connection error closes the channel; what was written before is read below either way.
        if readPerRequest {
            var reads: [ByteBuffer] = []
            var start = buffer.readerIndex
            var at = start + 24
            while at + 9 <= buffer.writerIndex, let high = buffer.getInteger(at: at, as: UInt8.self),
                let low = buffer.getInteger(at: at + 1, as: UInt16.self),
                let type = buffer.getInteger(at: at + 3, as: UInt8.self)
            {
                if type == 0x1, at > start {
                    reads.append(buffer.getSlice(at: start, length: at - start)!)
                    start = at
                }
                at += 9 + (Int(high) << 16 | Int(low))
            }
            reads.append(buffer.getSlice(at: start, length: buffer.writerIndex - start)!)
            for read in reads where channel.isActive { _ = try? channel.writeInbound(read) }
        } else {
            _ = try? channel.writeInbound(buffer)
        }
        channel.embeddedEventLoop.advanceTime(by: .hours(2))
        var written: [ByteBuffer] = []
        while let data = try? channel.readOutbound(as: IOData.self) {
            if case .byteBuffer(let bytes) = data { written.append(bytes) }
        }
        _ = try? channel.finish(acceptAlreadyClosed: true)
        return written
    }

    /// What the provider API decides for a request-head input: nil when the block is malformed (or, as
    /// NIO's decoder would refuse it, undecodable).
    public static func decideRequest(_ input: [UInt8]) -> Result<PushNotification, Rejection>? {
        let split = input.firstIndex(of: 0x01) ?? input.endIndex
        // The lines become an HPACK block (literals, raw bytes) that NIO's decoder reads, as a peer's would
        // be: names and values reach the handler exactly as the decoder makes them.
        var block = ByteBuffer()
        for line in input[..<split].split(separator: 0x0A, omittingEmptySubsequences: true) {
            let nul = line.firstIndex(of: 0) ?? line.endIndex
            block.writeInteger(UInt8(0))  // literal header field without indexing, new name
            writeHPACKString(line[..<nul], to: &block)
            writeHPACKString(nul < line.endIndex ? line[(nul + 1)...] : [], to: &block)
        }
        var decoder = HPACKDecoder(allocator: ByteBufferAllocator())
        guard let headers = try? decoder.decodeHeaders(from: &block) else { return nil }
        let body = split < input.endIndex ? Array(input[(split + 1)...]) : []
        let read = RequestHeaderBlock(headers)
        check(read.listSize >= 32 * headers.count, "a header list smaller than its fields")
        guard read.rules.malformed == nil else { return nil }
        var decider = PushRequestDecider(context: Fixture.context, identity: .token)
        switch decider.decideHead(read.head, now: Fixture.now) {
        case .failure(let rejection):
            check(rejection.reason.status >= 400, "a rejection that is not an error")
            return .failure(rejection)
        case .success(let accepted):
            let id = APNsID(header: "01234567-89ab-cdef-0123-456789abcdef")!
            let decided = decider.decideBody(accepted, body: body, id: id, now: Fixture.now)
            if case .success(let notification) = decided {
                check(notification.payload == body, "an accepted notification whose payload is not its body")
            }
            return decided
        }
    }

    static func providerToken(_ header: String) {
        guard case .success(let jwt) = ProviderTokenVerifier.jwt(fromAuthorization: header) else { return }
        let verifier = ProviderTokenVerifier()
        guard case .success(let token) = verifier.verify(jwt, keys: Fixture.keys) else { return }
        check(token.key.keyID == Fixture.keyID, "verified under a key that is not registered")
        _ = verifier.checkTime(token, now: Fixture.now)
    }

    static func deviceMessage(_ input: UnsafeRawBufferPointer) {
        if let message = try? DeviceMessage.decode(input) {
            check(
                (try? DeviceMessage.decode(message.encoded())) == message, "a device message that does not round-trip")
        }
        if let message = try? GatewayMessage.decode(input) {
            check(
                (try? GatewayMessage.decode(message.encoded())) == message, "a gateway message that does not round-trip"
            )
        }
    }

    static func configuration(_ yaml: String) {
        guard let raw = try? RawConfiguration(fileYAML: yaml, filePath: "fuzz.yaml") else { return }
        _ = try? GatewayConfiguration(raw)
    }

    static func registryFile(_ input: [UInt8]) {
        guard let kind = input.first else { return }
        let yaml = String(decoding: input.dropFirst(), as: UTF8.self)
        switch kind % 3 {
        case 0: _ = try? RegistryFiles.keys(yaml: yaml, path: "keys.yaml")
        case 1: _ = try? RegistryFiles.certificates(yaml: yaml, path: "certificates.yaml")
        default: _ = try? RegistryFiles.tokens(yaml: yaml, path: "tokens.yaml", lengths: 64...64)
        }
    }

    // MARK: Support

    /// An HPACK string literal, not Huffman-coded: a length with a 7-bit prefix (RFC 7541 §5.1), the bytes.
    static func writeHPACKString(_ bytes: ArraySlice<UInt8>, to buffer: inout ByteBuffer) {
        var length = bytes.count
        if length < 127 {
            buffer.writeInteger(UInt8(length))
        } else {
            buffer.writeInteger(UInt8(127))
            length -= 127
            while length >= 128 {
                buffer.writeInteger(UInt8(length & 0x7f | 0x80))
                length >>= 7
            }
            buffer.writeInteger(UInt8(length))
        }
        buffer.writeBytes(bytes)
    }

    /// A broken invariant: a crash libFuzzer records with the input that caused it.
    static func check(_ condition: Bool, _ message: @autoclosure () -> String) {
        if !condition { fatalError("fuzz invariant: \(message())") }
    }

    /// An exponent, or an integer of more than 15 digits, anywhere in the input.
    static func hasUnrepresentableNumber(_ input: UnsafeRawBufferPointer) -> Bool {
        var digits = 0
        var previous: UInt8 = 0
        for byte in input {
            if byte &- UInt8(ascii: "0") < 10 {
                digits += 1
                if digits > 15 { return true }
            } else {
                if (byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E")) && previous &- UInt8(ascii: "0") < 10 {
                    return true
                }
                digits = 0
            }
            previous = byte
        }
        return false
    }
}

/// The fixed world the provider targets run in: one key, one registered device token, a fixed clock.
public enum Fixture {
    public static let teamID = "FUZZTEAM01"
    public static let keyID = "FUZZKEY001"
    public static let bundleID = "com.example.fuzz"
    public static let token = String(repeating: "ab", count: 32)
    /// A key for fuzzing only: the seeds carry tokens it signed.
    static let privateKey = try! P256.Signing.PrivateKey(rawRepresentation: [UInt8](repeating: 7, count: 32))
    public static let signer = ProviderTokenSigner(teamID: teamID, keyID: keyID, privateKey: privateKey)
    public static let issuedAt = UnixTime(milliseconds: 1_800_000_000_000)
    public static let now = UnixTime(milliseconds: 1_800_000_060_000)

    public static let keys = KeyRegistry([
        ProviderKey(teamID: teamID, keyID: keyID, publicKey: privateKey.publicKey, topics: [bundleID])
    ])

    static let context = makeContext()
    /// Quiet: a fuzzed connection's errors are the expected outcome.
    static let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    static func makeContext() -> ProviderContext {
        var settings = ProviderSettings()
        // Limiters keep state between inputs; off, so an input's outcome is its own.
        settings.perDeviceTokenRate = .unlimited
        settings.perTeamRate = .unlimited
        settings.auth.failedVerificationsPerAddress = .unlimited
        let directory = InMemoryDeviceDirectory([DeviceToken(token, lengths: 64...64)!: .active(bundleID: bundleID)])
        return ProviderContext(
            settings: settings, keys: keys, directory: directory, intake: RefusingIntake(), clock: { now })
    }

    /// The provider targets never reach the intake.
    struct RefusingIntake: NotificationIntake {
        func submit(_ notification: PushNotification, on eventLoop: any EventLoop) -> IntakeReply {
            .now(.rejected(Rejection(.internalServerError)))
        }
    }
}
