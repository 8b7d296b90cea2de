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

/// The request handler above the codec's seam, on an `EmbeddedChannel`: requests in as the codec hands
/// them up (`HTTP2RequestReceiver`), what it writes recorded as the codec would take it
/// (`HTTP2ResponseWriter`), time advanced by hand. The codec itself is exercised through real connections
/// (the other suites) and the fuzz target.
@Suite struct ConnectionHandlerTests {
    let clock = ManualClock()

    /// What the handler wrote, call by call.
    final class RecordingWriter: HTTP2ResponseWriter {
        enum Written: Equatable {
            case respond(stream: Int, status: String?, body: String?)
            case ok(stream: Int, fields: [String])
            case reset(stream: Int, HTTP2ErrorCode)
            case goAway(last: Int, HTTP2ErrorCode, debug: String?)
            case window(Int)
        }
        var written: [Written] = []

        func take() -> [Written] {
            defer { written = [] }
            return written
        }

        func respond(
            _ stream: HTTP2StreamID, _ fields: HPACKHeaders, body: ByteBuffer?, promise: EventLoopPromise<Void>?
        ) {
            written.append(
                .respond(
                    stream: Int(stream), status: fields.first(name: ":status"), body: body.map { String(buffer: $0) }))
            promise?.succeed()
        }

        func respondOK(
            _ stream: HTTP2StreamID, _ first: UniqueField, _ second: UniqueField?, promise: EventLoopPromise<Void>?
        ) {
            written.append(.ok(stream: Int(stream), fields: [first, second].compactMap { $0.map { "\($0.name)" } }))
            promise?.succeed()
        }

        func reset(_ stream: HTTP2StreamID, _ code: HTTP2ErrorCode) {
            written.append(.reset(stream: Int(stream), code))
        }

        func goAway(lastStream: HTTP2StreamID, _ code: HTTP2ErrorCode, debugData: ByteBuffer?) {
            written.append(.goAway(last: Int(lastStream), code, debug: debugData.map { String(buffer: $0) }))
        }

        func widenConnectionWindow(by increment: Int) {
            written.append(.window(increment))
        }
    }

    struct Connection {
        let channel: EmbeddedChannel
        let handler: ProviderConnectionHandler
        let writer: RecordingWriter
    }

    func connect(_ configure: (inout ProviderSettings) -> Void = { _ in }) throws -> Connection {
        var settings = ProviderSettings()
        settings.http2.idleTimeoutSeconds = 30
        configure(&settings)
        let clock = self.clock
        let context = ProviderContext(
            settings: settings, keys: Fixture.keys, directory: Fixture.directory, intake: RecordingIntake(),
            clock: { clock.now })
        let channel = EmbeddedChannel()
        let writer = RecordingWriter()
        let handler = ProviderConnectionHandler(context: context, logger: Logger(label: "test"), writer: writer)
        try channel.pipeline.syncOperations.addHandler(handler)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        handler.connectionEstablished()
        return Connection(channel: channel, handler: handler, writer: writer)
    }

    /// A request's head as the codec hands it up.
    func head(_ id: Int, token: DeviceToken = Fixture.token) -> ReceivedHead {
        var headers: HPACKHeaders = [":method": "POST", ":scheme": "https", ":path": "/3/device/\(token.hex)"]
        headers.add(name: "authorization", value: "bearer " + (try! Fixture.main.token(issuedAt: clock.now)))
        headers.add(name: "apns-topic", value: Fixture.bundle)
        let head = ReceivedHead(streamID: HTTP2StreamID(id))
        head.block = RequestHeaderBlock(headers)
        return head
    }

    func body(_ id: Int, _ connection: Connection) {
        connection.handler.receivedBody(HTTP2StreamID(id), ByteBuffer(bytes: alertPayload), endStream: true)
    }

    /// A whole request in one read: its head, its body, then the read's end (which the codec passes on,
    /// and where the handler forgets the read's times and flushes).
    func request(_ id: Int, _ connection: Connection) {
        connection.handler.receivedHead(head(id))
        body(id, connection)
        connection.channel.pipeline.fireChannelReadComplete()
        connection.channel.embeddedEventLoop.run()
    }

    @Test func answersOnHeadersAndOpensTheConnectionWindow() throws {
        let connection = try connect()
        request(1, connection)
        let written = connection.writer.take()
        #expect(written.first == .window((1 << 20) - 65_535))
        #expect(written.last == .ok(stream: 1, fields: ["apns-id", "apns-unique-id"]))
        _ = try? connection.channel.finish()
    }

    @Test func theProductionEnvironmentAnswersWithoutTheUniqueID() throws {
        let connection = try connect { $0.environment = .production }
        request(1, connection)
        #expect(connection.writer.take().last == .ok(stream: 1, fields: ["apns-id"]))
        _ = try? connection.channel.finish()
    }

    @Test func idleConnectionGetsGoAwayWithIdleTimeout() throws {
        let connection = try connect()
        let channel = connection.channel
        request(1, connection)
        _ = connection.writer.take()
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        // Activity pushes the deadline back.
        request(3, connection)
        _ = connection.writer.take()
        channel.embeddedEventLoop.advanceTime(by: .seconds(20))
        #expect(channel.isActive)
        #expect(connection.writer.take().isEmpty)
        channel.embeddedEventLoop.advanceTime(by: .seconds(10))
        #expect(connection.writer.take().last == .goAway(last: 3, .noError, debug: #"{"reason":"IdleTimeout"}"#))
        #expect(!channel.isActive)
    }

    @Test func drainingSendsGoAwayAndAnswersLateStreamsWithShutdown() throws {
        let connection = try connect()
        let channel = connection.channel
        // A request whose body has not arrived yet is in flight when draining starts.
        connection.handler.receivedHead(head(1))
        channel.pipeline.fireUserInboundEventTriggered(ProviderDrainEvent())
        #expect(connection.writer.take().last == .goAway(last: 1, .noError, debug: #"{"reason":"Shutdown"}"#))
        #expect(channel.isActive, "open streams finish first")
        // A stream the client opened before it saw GOAWAY.
        request(3, connection)
        body(1, connection)
        channel.embeddedEventLoop.run()
        let answers = connection.writer.take().compactMap { written -> String? in
            switch written {
            case .respond(_, let status, _): status
            case .ok: "200"
            default: nil
            }
        }
        #expect(answers == ["503", "200"])
        #expect(!channel.isActive, "closed once the last stream is answered")
    }

    @Test func resetStreamIsForgotten() throws {
        let connection = try connect()
        connection.handler.receivedHead(head(1))
        connection.handler.streamReset(1)
        body(1, connection)
        connection.channel.embeddedEventLoop.run()
        let answers = connection.writer.take().filter {
            switch $0 {
            case .respond, .ok: true
            default: false
            }
        }
        #expect(answers.isEmpty)
        _ = try? connection.channel.finish()
    }

    /// RFC 9113 §8.1: trailers with a pseudo-header, or without END_STREAM, reset their stream alone.
    @Test func malformedTrailersResetTheirStream() throws {
        let connection = try connect()
        connection.handler.receivedHead(head(1))
        connection.handler.receivedTrailers(1, [":path": "/"], endStream: true)
        connection.handler.receivedHead(head(3))
        connection.handler.receivedTrailers(3, ["x-trace": "1"], endStream: false)
        request(5, connection)
        let written = connection.writer.take()
        #expect(written.contains(.reset(stream: 1, .protocolError)))
        #expect(written.contains(.reset(stream: 3, .protocolError)))
        #expect(written.last == .ok(stream: 5, fields: ["apns-id", "apns-unique-id"]))
        _ = try? connection.channel.finish()
    }
}
