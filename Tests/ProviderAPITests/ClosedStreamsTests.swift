import NIOHTTP2
import Testing

@testable import ProviderAPI

/// RFC 9113 §5.1's rules for frames on streams libnghttp2 has closed and forgotten (`ClosedStreams`); the
/// conformance suite (`Interop/http2-conformance.sh`, h2spec's cases) checks them end to end on both codecs.
@Suite struct ClosedStreamsTests {
    static let data: UInt8 = 0x0
    static let headers: UInt8 = 0x1

    @Test func aStreamTheClientEndedOrResetRefusesDataAndHeaders() {
        var streams = ClosedStreams()
        streams.opened(1)
        streams.opened(3)
        for type in [Self.data, Self.headers] {
            #expect(streams.verdict(type: type, stream: 1) == .connectionError(.streamClosed))
        }
        // PRIORITY, RST_STREAM and WINDOW_UPDATE may follow a close.
        for type: UInt8 in [0x2, 0x3, 0x8] {
            #expect(streams.verdict(type: type, stream: 1) == .proceed)
        }
    }

    @Test func headersOnAStreamTheClientSkippedAreAProtocolError() {
        var streams = ClosedStreams()
        streams.opened(1)
        streams.opened(7)
        #expect(streams.verdict(type: Self.headers, stream: 3) == .connectionError(.protocolError))
        #expect(streams.verdict(type: Self.headers, stream: 5) == .connectionError(.protocolError))
        #expect(streams.verdict(type: Self.data, stream: 5) == .connectionError(.streamClosed))
        #expect(streams.verdict(type: Self.headers, stream: 1) == .connectionError(.streamClosed))
    }

    @Test func framesOnAStreamTheServerResetAreIgnored() {
        var streams = ClosedStreams()
        streams.opened(1)
        streams.opened(3)
        streams.resetSent(1)
        #expect(streams.verdict(type: Self.data, stream: 1) == .proceed)
        #expect(streams.verdict(type: Self.headers, stream: 1) == .proceed)
        #expect(streams.verdict(type: Self.data, stream: 3) == .connectionError(.streamClosed))
    }

    /// A stream refused without being opened (over the session's ceiling) is remembered as reset: the DATA
    /// its client had already sent is ignored, and the ids below it are skipped.
    @Test func aStreamRefusedUnopenedIsIgnoredAfter() {
        var streams = ClosedStreams()
        streams.opened(1)
        streams.resetSent(5)
        streams.opened(7)
        #expect(streams.verdict(type: Self.data, stream: 5) == .proceed)
        #expect(streams.verdict(type: Self.headers, stream: 3) == .connectionError(.protocolError))
    }

    /// Before any stream, and for ids out of the window or not the client's, nothing is remembered.
    @Test func whatIsNotRememberedIsLeftToTheSession() {
        var streams = ClosedStreams()
        #expect(streams.verdict(type: Self.data, stream: 1) == .proceed)
        streams.opened(1)
        streams.opened(1 + ClosedStreams.window)
        #expect(streams.verdict(type: Self.data, stream: 1) == .proceed)
        #expect(streams.verdict(type: Self.data, stream: 3) == .connectionError(.streamClosed))
        #expect(streams.verdict(type: Self.data, stream: 2) == .proceed)
        streams.opened(2)
        #expect(streams.highest == 1 + ClosedStreams.window)
    }

    /// A slot reused by a later stream starts clean: the reset of the stream it held before does not carry
    /// over, across a step of one stream or a jump past the whole window.
    @Test func aReusedSlotForgetsItsOldStream() {
        var streams = ClosedStreams()
        streams.opened(1)
        streams.resetSent(1)
        var stream: Int32 = 3
        while stream <= 1 + ClosedStreams.window {
            streams.opened(stream)
            stream += 2
        }
        #expect(streams.verdict(type: Self.data, stream: 1 + ClosedStreams.window) == .connectionError(.streamClosed))

        var jumped = ClosedStreams()
        jumped.opened(1)
        jumped.resetSent(1)
        jumped.opened(3 * ClosedStreams.window + 1)
        #expect(
            jumped.verdict(type: Self.headers, stream: 3 * ClosedStreams.window - 1) == .connectionError(.protocolError)
        )
        // The stream that took stream 1's slot: opened, not reset.
        #expect(
            jumped.verdict(type: Self.data, stream: 3 * ClosedStreams.window + 1) == .connectionError(.streamClosed))
    }
}

/// `FrameScanner` finds every frame's header in the client's bytes however a read splits them.
@Suite struct FrameScannerTests {
    static let preface = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    static func frame(type: UInt8, flags: UInt8 = 0, stream: UInt32, payload: Int) -> [UInt8] {
        [UInt8(payload >> 16), UInt8(payload >> 8 & 0xFF), UInt8(payload & 0xFF), type, flags]
            + withUnsafeBytes(of: stream.bigEndian, Array.init) + Array(repeating: 0xAB, count: payload)
    }

    static let bytes =
        preface + frame(type: 0x4, stream: 0, payload: 0) + frame(type: 0x1, flags: 0x4, stream: 1, payload: 20)
        + frame(type: 0x0, flags: 0x1, stream: 1, payload: 100) + frame(type: 0x3, stream: 0x8000_0003, payload: 4)
        + frame(type: 0x0, stream: 3, payload: 0)

    static let expected: [FrameScanner.FrameHeader] = [
        .init(offset: 24, type: 0x4, flags: 0, stream: 0, length: 0, inPlace: true),
        .init(offset: 33, type: 0x1, flags: 0x4, stream: 1, length: 20, inPlace: true),
        .init(offset: 62, type: 0x0, flags: 0x1, stream: 1, length: 100, inPlace: true),
        .init(offset: 171, type: 0x3, flags: 0, stream: 3, length: 4, inPlace: true),
        .init(offset: 184, type: 0x0, flags: 0, stream: 3, length: 0, inPlace: true),
    ]

    @Test func oneReadGivesEveryHeaderWhereItBegins() {
        var scanner = FrameScanner()
        var found: [FrameScanner.FrameHeader] = []
        Self.bytes.withUnsafeBytes { scanner.scan($0) { found.append($0) } }
        #expect(found == Self.expected)
    }

    /// Reads of every size from 1 to 40 bytes: the same headers, each at its place in its read (0 when it
    /// began in an earlier one).
    @Test(arguments: 1...40)
    func readsOfAnySizeGiveTheSameHeaders(_ size: Int) {
        var scanner = FrameScanner()
        var found: [FrameScanner.FrameHeader] = []
        var start = 0
        while start < Self.bytes.count {
            let end = min(start + size, Self.bytes.count)
            Array(Self.bytes[start..<end]).withUnsafeBytes { read in
                scanner.scan(read) { header in
                    // The next header, completed in this read: its place here, or 0 when it began before.
                    guard found.count < Self.expected.count else { return }
                    let expected = Self.expected[found.count]
                    #expect(expected.offset + 9 > start && expected.offset + 9 <= end)
                    #expect(header.offset == max(0, expected.offset - start))
                    // In place when it began in this read.
                    #expect(header.inPlace == (expected.offset >= start))
                    var whole = header
                    whole.offset = expected.offset
                    whole.inPlace = true
                    found.append(whole)
                }
            }
            start = end
        }
        #expect(found == Self.expected)
    }
}
