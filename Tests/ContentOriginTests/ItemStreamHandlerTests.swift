import NIOCore
import NIOEmbedded
import NIOHTTP1
import PushModel
import Testing

@testable import ContentOrigin

/// The paced item stream on an embedded channel, its time advanced by hand: no socket, no wall clock.
@Suite struct ItemStreamHandlerTests {
    /// A device that cancels a paced download mid-item: the server stops sending, and the log has the
    /// request with the bytes it got, the request no longer in flight.
    @Test func aCancelledDownloadIsLoggedWithTheBytesItGot() throws {
        let loop = EmbeddedEventLoop()
        var settings = OriginServer.Settings()
        settings.itemBytes = 64 * 1024
        settings.linkBytesPerSecond = ItemStreamHandler.chunk  // a chunk a second
        let origin = OriginServer(settings: settings, group: loop, clock: { UnixTime(seconds: 1_800_000_000) })
        let version = origin.publish()
        let channel = EmbeddedChannel(handler: ItemStreamHandler(server: origin), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()

        var head = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/items/\(version.version)")
        head.headers.add(name: "x-device-id", value: "dev-1")
        try channel.writeInbound(HTTPServerRequestPart.head(head))
        try channel.writeInbound(HTTPServerRequestPart.end(nil))
        #expect(origin.log.inFlight == 1)

        // The response's head and its first chunk at once; the second a second later.
        guard case .head(let response) = try channel.readOutbound(as: HTTPServerResponsePart.self) else {
            Issue.record("no response head")
            return
        }
        #expect(response.status == .ok)
        #expect(response.headers.first(name: "content-length") == "\(settings.itemBytes)")
        #expect(try bodyBytes(channel) == ItemStreamHandler.chunk)
        loop.advanceTime(by: .milliseconds(999))
        #expect(try bodyBytes(channel) == 0, "paced: nothing before its second")
        loop.advanceTime(by: .milliseconds(1))
        #expect(try bodyBytes(channel) == ItemStreamHandler.chunk)

        // The device goes away; the next chunk finds the connection closed.
        try channel.close().wait()
        #expect(origin.log.inFlight == 1, "logged when the server notices, at its next chunk")
        loop.advanceTime(by: .seconds(1))
        #expect(origin.log.inFlight == 0)
        #expect(
            origin.log.all == [
                FetchLog.Entry(
                    at: 1_800_000_000_000, device: "dev-1", path: "/items/\(version.version)", status: 200,
                    bytes: 2 * ItemStreamHandler.chunk)
            ])
        _ = try channel.finish(acceptAlreadyClosed: true)
    }

    /// The body bytes written since the last look.
    private func bodyBytes(_ channel: EmbeddedChannel) throws -> Int {
        var bytes = 0
        while let part = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            if case .body(.byteBuffer(let buffer)) = part { bytes += buffer.readableBytes }
        }
        return bytes
    }
}
