import Crypto
import Logging
import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import ProviderAuth
import PushModel
import TestSupport
import Testing

@testable import ProviderAPI

/// The frame-level handler on an `EmbeddedChannel`: frames in, frames out, time advanced by hand.
@Suite struct ConnectionHandlerTests {
    let clock = ManualClock()

    func makeChannel(_ configure: (inout ProviderSettings) -> Void = { _ in }) throws -> EmbeddedChannel {
        var settings = ProviderSettings()
        settings.http2.idleTimeoutSeconds = 30
        configure(&settings)
        let clock = self.clock
        let context = ProviderContext(
            settings: settings, keys: Fixture.keys, directory: Fixture.directory, intake: RecordingIntake(),
            clock: { clock.now })
        let channel = EmbeddedChannel()
        try channel.pipeline.syncOperations.addHandler(
            ProviderConnectionHandler(context: context, logger: Logger(label: "test")))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return channel
    }

    func request(_ id: Int, token: DeviceToken = Fixture.token) -> [HTTP2Frame] {
        var headers: HPACKHeaders = [":method": "POST", ":scheme": "https", ":path": "/3/device/\(token.hex)"]
        headers.add(name: "authorization", value: "bearer " + (try! Fixture.main.token(issuedAt: clock.now)))
        headers.add(name: "apns-topic", value: Fixture.bundle)
        return [
            HTTP2Frame(streamID: HTTP2StreamID(id), payload: .headers(.init(headers: headers))),
            HTTP2Frame(
                streamID: HTTP2StreamID(id),
                payload: .data(.init(data: .byteBuffer(ByteBuffer(bytes: alertPayload)), endStream: true))),
        ]
    }

    func outbound(_ channel: EmbeddedChannel) throws -> [HTTP2Frame] {
        var frames: [HTTP2Frame] = []
        while let frame = try channel.readOutbound(as: HTTP2Frame.self) { frames.append(frame) }
        return frames
    }

    @Test func answersOnHeadersAndOpensTheConnectionWindow() throws {
        let channel = try makeChannel()
        for frame in request(1) { try channel.writeInbound(frame) }
        channel.embeddedEventLoop.run()
        let frames = try outbound(channel)
        guard case .windowUpdate(let increment) = frames.first?.payload else {
            Issue.record("expected a connection WINDOW_UPDATE first, got \(frames)")
            return
        }
        #expect(frames.first?.streamID == .rootStream)
        #expect(increment == (1 << 20) - 65_535)
        guard case .headers(let headers) = frames.last?.payload else {
            Issue.record("expected HEADERS")
            return
        }
        #expect(headers.endStream)
        #expect(headers.headers.first(name: ":status") == "200")
        _ = try? channel.finish()
    }

    @Test func replenishesTheWindowWhenItRunsLow() throws {
        let channel = try makeChannel()
        for frame in request(1) { try channel.writeInbound(frame) }
        _ = try outbound(channel)
        channel.pipeline.fireUserInboundEventTriggered(
            NIOHTTP2WindowUpdatedEvent(streamID: .rootStream, inboundWindowSize: 100_000, outboundWindowSize: 65_535))
        channel.embeddedEventLoop.run()
        let frames = try outbound(channel)
        guard case .windowUpdate(let increment) = frames.first?.payload else {
            Issue.record("expected WINDOW_UPDATE, got \(frames)")
            return
        }
        #expect(increment == (1 << 20) - 100_000)
        _ = try? channel.finish()
    }

    @Test func idleConnectionGetsGoAwayWithIdleTimeout() throws {
        let channel = try makeChannel()
        for frame in request(1) { try channel.writeInbound(frame) }
        _ = try outbound(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        // Activity pushes the deadline back.
        for frame in request(3) { try channel.writeInbound(frame) }
        _ = try outbound(channel)
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(channel.isActive)
        #expect(try outbound(channel).isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        let frames = try outbound(channel)
        guard case .goAway(let lastStreamID, let code, let data) = frames.last?.payload else {
            Issue.record("expected GOAWAY, got \(frames)")
            return
        }
        #expect(lastStreamID == 3)
        #expect(code == .noError)
        #expect(data.map { String(buffer: $0) } == #"{"reason":"IdleTimeout"}"#)
        #expect(!channel.isActive)
    }

    @Test func drainingSendsGoAwayAndAnswersLateStreamsWithShutdown() throws {
        let channel = try makeChannel()
        // A request whose body has not arrived yet is in flight when draining starts.
        let inFlight = request(1)
        try channel.writeInbound(inFlight[0])
        channel.pipeline.fireUserInboundEventTriggered(ProviderDrainEvent())
        let goAway = try outbound(channel).last
        guard case .goAway(_, _, let data) = goAway?.payload else {
            Issue.record("expected GOAWAY")
            return
        }
        #expect(data.map { String(buffer: $0) } == #"{"reason":"Shutdown"}"#)
        #expect(channel.isActive, "open streams finish first")
        // A stream the client opened before it saw GOAWAY.
        for frame in request(3) { try channel.writeInbound(frame) }
        try channel.writeInbound(inFlight[1])
        channel.embeddedEventLoop.run()
        let statuses = try outbound(channel).compactMap { frame -> String? in
            guard case .headers(let headers) = frame.payload else { return nil }
            return headers.headers.first(name: ":status")
        }
        #expect(statuses == ["503", "200"])
        #expect(!channel.isActive, "closed once the last stream is answered")
    }

    @Test func resetStreamIsForgotten() throws {
        let channel = try makeChannel()
        let frames = request(1)
        try channel.writeInbound(frames[0])
        try channel.writeInbound(HTTP2Frame(streamID: 1, payload: .rstStream(.cancel)))
        try channel.writeInbound(frames[1])
        channel.embeddedEventLoop.run()
        let responses = try outbound(channel).filter {
            if case .headers = $0.payload { return true }
            return false
        }
        #expect(responses.isEmpty)
        _ = try? channel.finish()
    }
}
