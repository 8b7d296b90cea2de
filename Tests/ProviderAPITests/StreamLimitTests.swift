import NIOCore
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// A stream over `max_concurrent_streams` or `max_header_list_size` is refused alone (REFUSED_STREAM,
/// 431) and the connection's other streams go on; the provider is told the configured limits, not NIO's
/// ceilings. Driven over real h2c by a client that ignores the limits.
@Suite struct StreamLimitTests {
    static let path = "/3/device/\(Fixture.token.hex)"
    static let refusedStream: UInt32 = 0x7

    func request(_ gateway: TestGateway, extra: [(String, String)] = []) -> [(String, String)] {
        gateway.rawRequest(path: Self.path, extra: extra)
    }

    func connect(_ gateway: TestGateway) async throws -> RawHTTP2 {
        try await gateway.rawClient()
    }

    @Test func theConfiguredLimitsAreAdvertisedNotNIOsCeilings() async throws {
        try await TestGateway.with(configure: {
            $0.http2.maxConcurrentStreams = 7
            $0.http2.maxHeaderListSize = 3000
        }) { gateway in
            let client = try await connect(gateway)
            let settings = client.frames.first { $0.type == RawHTTP2.Frame.settings && $0.flags == 0 }!.settings
            #expect(settings[0x3] == 7)
            #expect(settings[0x6] == 3000)
            await client.close()
        }
    }

    @Test func streamsOverTheLimitAreRefusedAloneAndTheOthersAnswered() async throws {
        try await TestGateway.with(configure: { $0.http2.maxConcurrentStreams = 4 }) { gateway in
            let client = try await connect(gateway)
            // Four requests left open (no END_STREAM), then two more: over the limit.
            let open: [UInt32] = [1, 3, 5, 7]
            for stream in open + [9, 11] {
                try await client.headers(stream: stream, request(gateway), endStream: false)
            }
            let refused = try await client.waitFor { frames in
                frames.filter { $0.type == RawHTTP2.Frame.rstStream }.count >= 2
            }.filter { $0.type == RawHTTP2.Frame.rstStream }
            #expect(refused.map(\.stream) == [9, 11])
            #expect(refused.allSatisfy { $0.errorCode == Self.refusedStream })
            // The open ones are answered once their bodies arrive, and the connection takes new streams —
            // once those are answered: until its answer ends it, a stream still counts against the limit.
            for stream in open { try await client.data(stream: stream, alertPayload, endStream: true) }
            _ = try await client.waitFor { frames in
                frames.filter { $0.type == RawHTTP2.Frame.headersType }.count >= 4
            }
            try await client.headers(stream: 13, request(gateway), endStream: false)
            try await client.data(stream: 13, alertPayload, endStream: true)
            let answers = try await client.waitFor { frames in
                frames.filter { $0.type == RawHTTP2.Frame.headersType }.count >= 5
            }.filter { $0.type == RawHTTP2.Frame.headersType }
            let answered = answers.map { $0.stream }.sorted()
            #expect(answered == open + [13])
            #expect(answers.allSatisfy { $0.status == "200" })
            #expect(!client.frames.contains { $0.type == RawHTTP2.Frame.goAway })
            #expect(!client.isClosed)
            await client.close()
        }
    }

    @Test func anOversizedHeaderListIsAnswered431AloneAndTheConnectionGoesOn() async throws {
        try await TestGateway.with(configure: { $0.http2.maxHeaderListSize = 4096 }) { gateway in
            let client = try await connect(gateway)
            try await client.headers(stream: 1, request(gateway), endStream: false)
            // Over 4096 once decoded; under NIO's ceiling, so the block is decoded and HPACK stays in step.
            let padding = String(repeating: "p", count: 5000)
            try await client.headers(stream: 3, request(gateway, extra: [("x-padding", padding)]), endStream: true)
            // Still sending its body: answered, then reset with NO_ERROR.
            try await client.headers(stream: 5, request(gateway, extra: [("x-padding", padding)]), endStream: false)
            try await client.data(stream: 1, alertPayload, endStream: true)
            try await client.headers(stream: 7, request(gateway), endStream: true)
            let frames = try await client.waitFor { frames in
                frames.filter { $0.type == RawHTTP2.Frame.headersType }.count >= 4
            }
            let answers = Dictionary(
                frames.filter { $0.type == RawHTTP2.Frame.headersType }.map { ($0.stream, $0.status ?? "") },
                uniquingKeysWith: { first, _ in first })
            #expect(answers[1] == "200")
            #expect(answers[3] == "431")
            #expect(answers[5] == "431")
            // Stream 7 has no body: an APNs answer (PayloadEmpty), which shows the connection still decides.
            #expect(answers[7] == "400")
            #expect(frames.contains { $0.type == RawHTTP2.Frame.rstStream && $0.stream == 5 && $0.errorCode == 0 })
            #expect(!frames.contains { $0.type == RawHTTP2.Frame.goAway })
            await client.close()
        }
    }
}
