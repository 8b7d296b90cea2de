import NIOHPACK
import NIOHTTP2
import ProviderAuth
import ProviderClient
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// RFC 9113 §8.1.1 over real h2c: a malformed request is a stream error of type PROTOCOL_ERROR on its
/// stream only, before any APNs rule answers it; the connection and its other streams go on.
@Suite struct MalformedRequestTests {
    static let path = "/3/device/\(Fixture.token.hex)"

    /// A header block that breaks one rule, and what breaks it.
    struct Case: Sendable, CustomStringConvertible {
        var description: String
        var headers: [(String, String)]
        var body: [UInt8]? = nil
        /// Sent after the body, ending the stream.
        var trailers: [(String, String)]? = nil
    }

    static func valid(_ extra: [(String, String)] = []) -> [(String, String)] {
        [(":method", "POST"), (":scheme", "https"), (":path", path), (":authority", "localhost")] + extra
    }

    static let cases: [Case] = [
        // (A name the good request does not use: NIO's HPACK encoder matches table entries without regard
        // to case, and would send the good request's apns-topic as this entry.)
        Case(description: "an upper-case header name", headers: valid([("X-Trace", "1")])),
        Case(description: "an unknown pseudo-header", headers: valid([(":foo", "bar")])),
        Case(description: "a space in a header name", headers: valid([("x trace", "1")])),
        Case(description: "a control character in a header name", headers: valid([("x-\u{01}", "1")])),
        Case(description: "a DEL in a header name", headers: valid([("x-\u{7f}", "1")])),
        Case(description: "CR LF in a header value", headers: valid([("x-trace", "a\r\nb")])),
        Case(description: "NUL in a header value", headers: valid([("x-trace", "a\u{0}b")])),
        Case(description: "white space before a header value", headers: valid([("x-trace", " a")])),
        Case(description: "a tab after a header value", headers: valid([("x-trace", "a\t")])),
        Case(description: "a response pseudo-header", headers: valid([(":status", "200")])),
        Case(
            description: "a pseudo-header after a regular header",
            headers: [(":method", "POST"), (":scheme", "https"), ("apns-topic", Fixture.bundle), (":path", path)]),
        Case(description: "connection", headers: valid([("connection", "keep-alive")])),
        Case(description: "keep-alive", headers: valid([("keep-alive", "timeout=5")])),
        Case(description: "proxy-connection", headers: valid([("proxy-connection", "keep-alive")])),
        Case(description: "transfer-encoding", headers: valid([("transfer-encoding", "chunked")])),
        Case(description: "upgrade", headers: valid([("upgrade", "h2c")])),
        Case(description: "te other than trailers", headers: valid([("te", "gzip")])),
        Case(description: "no :method", headers: [(":scheme", "https"), (":path", path)]),
        Case(description: "an empty :method", headers: [(":method", ""), (":scheme", "https"), (":path", path)]),
        Case(description: "two :method", headers: valid([(":method", "POST")])),
        Case(description: "no :scheme", headers: [(":method", "POST"), (":path", path)]),
        Case(description: "two :scheme", headers: valid([(":scheme", "https")])),
        Case(description: "no :path", headers: [(":method", "POST"), (":scheme", "https")]),
        Case(description: "an empty :path", headers: [(":method", "POST"), (":scheme", "https"), (":path", "")]),
        Case(description: "two :path", headers: valid([(":path", path)])),
        Case(
            description: "a content-length above the DATA", headers: valid([("content-length", "100")]),
            body: Array(#"{"aps":{"alert":"x"}}"#.utf8)),
        Case(
            description: "a content-length below the DATA", headers: valid([("content-length", "3")]),
            body: Array(#"{"aps":{"alert":"x"}}"#.utf8)),
        Case(description: "a content-length that is not a number", headers: valid([("content-length", "ten")])),
        Case(description: "a content-length with no DATA at all", headers: valid([("content-length", "12")])),
        Case(
            description: "a pseudo-header in trailers", headers: valid(), body: Array(#"{"aps":{"alert":"x"}}"#.utf8),
            trailers: [(":method", "POST")]),
    ]

    @Test(arguments: cases)
    func aMalformedRequestResetsItsStreamOnly(_ malformed: Case) async throws {
        try await TestGateway.with { gateway in
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: gateway.h2cPort, security: .cleartext, group: gateway.group,
                validating: false)
            let authorization = "bearer " + (try Fixture.main.token(issuedAt: gateway.clock.now))
            var head = HPACKHeaders()
            for (name, value) in malformed.headers { head.add(name: name, value: value) }
            head.add(name: "authorization", value: authorization)
            var steps: [ProviderClient.Step] =
                malformed.body.map {
                    [.headers(head, endStream: false), .data($0, endStream: malformed.trailers == nil)]
                }
                ?? [.headers(head, endStream: true)]
            if let trailers = malformed.trailers {
                steps.append(.headers(HPACKHeaders(trailers), endStream: true))
            }
            await #expect(throws: ProviderClient.ClientError.streamReset(.protocolError)) {
                _ = try await client.send(steps)
            }
            // The same connection still serves a well-formed request.
            let good = try await client.post(
                path: Self.path, headers: [("authorization", authorization), ("apns-topic", Fixture.bundle)],
                body: alertPayload)
            #expect(good.status == 200, "\(malformed)")
            await client.close()
        }
    }

    /// RFC 9113 §8.1: a HEADERS frame after the request's head ends the stream. A client that sends trailers
    /// without END_STREAM (NIO's own client refuses to) has its stream reset with PROTOCOL_ERROR; the
    /// connection's next request is answered.
    @Test func trailersWithoutEndStreamResetTheStreamOnly() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.rawClient()
            try await client.headers(stream: 1, gateway.rawRequest(path: Self.path), endStream: false)
            try await client.data(stream: 1, alertPayload, endStream: false)
            try await client.headers(stream: 1, [("x-trace", "1")], endStream: false)
            let reset = try await client.waitFor { frames in
                frames.contains { $0.type == RawHTTP2.Frame.rstStream && $0.stream == 1 }
            }
            #expect(reset.first { $0.type == RawHTTP2.Frame.rstStream && $0.stream == 1 }?.errorCode == 0x1)
            try await client.headers(stream: 3, gateway.rawRequest(path: Self.path), endStream: false)
            try await client.data(stream: 3, alertPayload, endStream: true)
            let answered = try await client.waitFor { frames in
                frames.contains { $0.type == RawHTTP2.Frame.headersType && $0.stream == 3 }
            }
            #expect(answered.first { $0.type == RawHTTP2.Frame.headersType && $0.stream == 3 }?.status == "200")
            #expect(!answered.contains { $0.type == RawHTTP2.Frame.goAway })
            await client.close()
        }
    }

    /// A block read with its connection's repeated values (the provider token kept from the request
    /// before, reused when its bytes repeat) reads as the same block read alone: every case above and a good
    /// request, twice.
    @Test func aBlockReadsTheSameWithTheConnectionsRepeatedValues() {
        let good = Case(
            description: "a good request",
            headers: Self.valid([
                ("authorization", "bearer \(String(repeating: "x", count: 240))"), ("apns-topic", Fixture.bundle),
                ("apns-id", "0A1B2C3D-0000-4000-8000-000000000001"), ("content-length", "21"),
            ]))
        var repeated = RequestHeaderBlock.RepeatedValues()
        let longest = Case(description: "Int.max", headers: Self.valid([("content-length", "9223372036854775807")]))
        let over = Case(description: "past Int.max", headers: Self.valid([("content-length", "9223372036854775808")]))
        for testCase in Self.cases + [good, good, longest, over] {
            let decoded = RequestHeaderBlock(HPACKHeaders(testCase.headers))
            var read = RequestHeaderBlock()
            for (name, value) in testCase.headers {
                var name = name
                var value = value
                name.withUTF8 { name in value.withUTF8 { read.read(name: name, value: $0, repeated: &repeated) } }
            }
            read.finish()
            #expect(read.rules.malformed == decoded.rules.malformed, "\(testCase)")
            #expect(read.rules.contentLength == decoded.rules.contentLength, "\(testCase)")
            #expect(read.head == decoded.head && read.sentID == decoded.sentID, "\(testCase)")
            #expect(read.listSize == decoded.listSize, "\(testCase)")
        }
        #expect(RequestHeaderBlock(HPACKHeaders(good.headers)).rules.malformed == nil)
    }

    /// The value check passes eight bytes at a time until one of them is below 0x0e: whatever the length
    /// and wherever a byte sits, it says what a byte-by-byte look says.
    @Test func aValueIsCheckedAlikeWhereverItsByteSits() {
        func byteByByte(_ bytes: [UInt8]) -> Bool {
            bytes.contains { $0 == 0 || $0 == 0x0a || $0 == 0x0d }
        }
        for length in 2...40 {
            for position in 1..<(length - 1) {
                for byte: UInt8 in [0, 0x01, 0x09, 0x0a, 0x0b, 0x0d, 0x0e, 0x0f, 0x7f, 0x80, 0x8d, 0xff] {
                    var value = [UInt8](repeating: UInt8(ascii: "x"), count: length)
                    value[position] = byte
                    if position + 9 < length { value[position + 9] = 0x0d }
                    let problem = value.withUnsafeBufferPointer { RequestHeaderRules.valueProblem($0) }
                    #expect((problem != nil) == byteByByte(value), "\(length) bytes, \(byte) at \(position)")
                }
            }
        }
    }

    /// Two byte runs compare equal exactly when every byte is, whatever their length.
    @Test func byteRunsCompareByEveryByte() {
        for length in 0...33 {
            let base = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 1) }
            base.withUnsafeBufferPointer { mine in
                let copy = Array(base)
                copy.withUnsafeBufferPointer { #expect(mine.equals($0)) }
                for index in 0..<length {
                    var other = base
                    other[index] ^= 0x20
                    other.withUnsafeBufferPointer { #expect(!mine.equals($0), "\(length) bytes, \(index)") }
                }
                (base + [0]).withUnsafeBufferPointer { #expect(!mine.equals($0)) }
            }
        }
    }

    @Test func aContentLengthThatMatchesIsFine() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let authorization = "bearer " + (try Fixture.main.token(issuedAt: gateway.clock.now))
            let response = try await client.post(
                path: Self.path,
                headers: [
                    ("authorization", authorization), ("apns-topic", Fixture.bundle),
                    ("content-length", String(alertPayload.count)), ("te", "trailers"),
                ], body: alertPayload)
            #expect(response.status == 200)
            await client.close()
        }
    }
}
