import NIOCore
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// RFC 9113 §5.1 over real h2c, on the codec under test: frames a client sends on a stream after it closed
/// end the connection — but not those it sent before it saw the server's reset, which are ignored and the
/// connection goes on (`ClosedStreams`; h2spec's cases in `Interop/http2-conformance.sh`).
@Suite struct ClosedStreamFramesTests {
    static let path = "/3/device/\(Fixture.token.hex)"
    static let protocolError: UInt32 = 0x1
    static let streamClosed: UInt32 = 0x5

    func goAway(_ client: RawHTTP2) async throws -> UInt32? {
        try await client.waitFor { frames in frames.contains { $0.type == RawHTTP2.Frame.goAway } }
            .first { $0.type == RawHTTP2.Frame.goAway }?.errorCode
    }

    /// The body a client had sent for streams the server reset (REFUSED_STREAM over the limit, a 431 then
    /// RST_STREAM NO_ERROR) is ignored: the other streams are answered and the connection stays.
    @Test func framesOnAStreamTheServerResetAreIgnored() async throws {
        try await TestGateway.with(configure: {
            $0.http2.maxConcurrentStreams = 2
            $0.http2.maxHeaderListSize = 4096
        }) { gateway in
            let client = try await gateway.rawClient()
            let request = gateway.rawRequest(path: Self.path)
            try await client.headers(stream: 1, request, endStream: false)
            try await client.headers(stream: 3, request, endStream: false)
            try await client.headers(stream: 5, request, endStream: false)
            let padding = String(repeating: "p", count: 5000)
            try await client.headers(
                stream: 7, gateway.rawRequest(path: Self.path, extra: [("x-padding", padding)]), endStream: false)
            try await client.waitFor { frames in
                frames.contains { $0.type == RawHTTP2.Frame.rstStream && $0.stream == 5 }
                    && frames.contains { $0.type == RawHTTP2.Frame.rstStream && $0.stream == 7 }
            }
            for stream: UInt32 in [5, 7, 1, 3] { try await client.data(stream: stream, alertPayload, endStream: true) }
            let answers = try await client.waitFor { frames in
                Set(frames.filter { $0.type == RawHTTP2.Frame.headersType && $0.status == "200" }.map(\.stream))
                    == [1, 3]
            }
            #expect(!answers.contains { $0.type == RawHTTP2.Frame.goAway })
            try await client.headers(stream: 9, request, endStream: false)
            try await client.data(stream: 9, alertPayload, endStream: true)
            let later = try await client.waitFor { frames in
                frames.contains { $0.type == RawHTTP2.Frame.headersType && $0.stream == 9 }
            }
            #expect(later.first { $0.stream == 9 && $0.type == RawHTTP2.Frame.headersType }?.status == "200")
            #expect(!client.isClosed)
            await client.close()
        }
    }

    /// DATA on a stream the client ended and the server answered: connection error STREAM_CLOSED.
    @Test func dataOnAStreamTheClientEndedEndsTheConnection() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.rawClient()
            try await client.headers(stream: 1, gateway.rawRequest(path: Self.path), endStream: false)
            try await client.data(stream: 1, alertPayload, endStream: true)
            try await client.waitFor { frames in
                frames.contains { $0.type == RawHTTP2.Frame.headersType && $0.stream == 1 && $0.flags & 0x1 != 0 }
            }
            try await client.data(stream: 1, alertPayload, endStream: true)
            #expect(try await goAway(client) == Self.streamClosed)
            await client.close()
        }
    }

    /// HEADERS on a stream id below one the client already used, which it never opened: connection error
    /// PROTOCOL_ERROR (§5.1.1).
    @Test func headersOnASkippedStreamEndTheConnection() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.rawClient()
            try await client.headers(stream: 5, gateway.rawRequest(path: Self.path), endStream: false)
            try await client.headers(stream: 3, gateway.rawRequest(path: Self.path), endStream: false)
            #expect(try await goAway(client) == Self.protocolError)
            await client.close()
        }
    }
}
