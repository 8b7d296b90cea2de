import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import ProviderClient
import PushModel
import Testing

@testable import ProviderAPI

/// Hostile and broken requests get Apple's reason or an HTTP/2 error on their own stream; the
/// connection's other streams and the server carry on.
@Suite struct BadInputTests {
    let path = "/3/device/\(Fixture.token.hex)"

    func head(_ gateway: TestGateway, extra: [(String, String)] = []) -> HPACKHeaders {
        var head: HPACKHeaders = [":method": "POST", ":scheme": "https", ":path": path, ":authority": "localhost"]
        for (name, value) in gateway.headers(extra: extra) { head.add(name: name, value: value) }
        return head
    }

    static let unreadable: [[UInt8]] = [
        Array("{".utf8),  // malformed
        Array(#"["aps"]"#.utf8),  // not an object
        [0x7B, 0x22, 0x61, 0x70, 0x73, 0x22, 0x3A, 0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D, 0x7D],  // invalid UTF-8
        Array(#"{"aps":{"alert":"x"},}"#.utf8),  // trailing comma
        Array(#"{"aps":{"alert":"x"}} extra"#.utf8),
    ]

    @Test(arguments: unreadable)
    func unreadablePayloadIsPayloadEmpty(_ body: [UInt8]) async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let response = try await client.post(path: path, headers: gateway.headers(), body: body)
            #expect(response.status == 400)
            #expect(response.reason == "PayloadEmpty")
            await client.close()
        }
    }

    @Test func truncatedBodyAndResetMidBodyLeaveOtherStreamsAlone() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            // A body cut short but ended: unreadable.
            let truncated = try await client.send([
                .headers(head(gateway), endStream: false), .data(Array(#"{"aps":{"al"#.utf8), endStream: true),
            ])
            #expect(truncated.reason == "PayloadEmpty")
            // A stream reset mid-body gets nothing; meanwhile good requests on the same connection succeed.
            let resetHead = head(gateway)
            let reset = Task {
                try await client.send([
                    .headers(resetHead, endStream: false), .data(Array(#"{"aps":"#.utf8), endStream: false),
                    .reset(.cancel),
                ])
            }
            #expect(try await client.post(path: path, headers: gateway.headers(), body: alertPayload).status == 200)
            await #expect(throws: (any Error).self) { _ = try await reset.value }
            #expect(try await client.post(path: path, headers: gateway.headers(), body: alertPayload).status == 200)
            #expect(gateway.intake.notifications.count == 2)
            await client.close()
        }
    }

    @Test func bodyInManyFramesAndOversizedBodyNotEnded() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let bytes = alertPayload
            let split = try await client.send([
                .headers(head(gateway), endStream: false), .data(Array(bytes[0..<5]), endStream: false),
                .data(Array(bytes[5...]), endStream: true),
            ])
            #expect(split.status == 200)
            // A client that keeps sending past the limit is answered 413 at once, without waiting for its end.
            let chunk = [UInt8](repeating: 0x20, count: 4000)
            let oversized = try await client.send([
                .headers(head(gateway), endStream: false), .data(chunk, endStream: false),
                .data(chunk, endStream: false),
            ])
            #expect(oversized.status == 413)
            #expect(try await client.post(path: path, headers: gateway.headers(), body: alertPayload).status == 200)
            await client.close()
        }
    }

    @Test func unknownPushTypeAndTrailers() async throws {
        try await TestGateway.with { gateway in
            let client = try await gateway.client()
            let unknown = try await client.post(
                path: path, headers: gateway.headers(extra: [("apns-push-type", "ALERT")]), body: alertPayload)
            #expect(unknown.reason == "InvalidPushType")
            // A request ended by trailers is complete.
            let trailers: HPACKHeaders = ["x-trailer": "1"]
            let withTrailers = try await client.send([
                .headers(head(gateway), endStream: false), .data(alertPayload, endStream: false),
                .headers(trailers, endStream: true),
            ])
            #expect(withTrailers.status == 200)
            await client.close()
        }
    }

    @Test func oversizedHeadersAreAnsweredOnTheirStreamAndPastTheCeilingEndOnlyThatConnection() async throws {
        try await TestGateway.with(configure: { $0.http2.maxHeaderListSize = 4096 }) { gateway in
            // Over the configured size: 431 on that stream, and the same connection goes on.
            let client = try await gateway.client()
            let large = head(gateway, extra: [("x-padding", String(repeating: "p", count: 16_000))])
            let refused = try await client.send([
                .headers(large, endStream: false), .data(alertPayload, endStream: true),
            ])
            #expect(refused.status == 431)
            #expect(try await client.post(path: path, headers: gateway.headers(), body: alertPayload).status == 200)
            // Over NIO's ceiling (the HPACK decoder stops mid-block): that connection ends, no other.
            let bad = try await gateway.client()
            let huge = head(gateway, extra: [("x-padding", String(repeating: "p", count: 70_000))])
            await #expect(throws: (any Error).self) {
                _ = try await bad.send([.headers(huge, endStream: false), .data(alertPayload, endStream: true)])
            }
            #expect(try await client.post(path: path, headers: gateway.headers(), body: alertPayload).status == 200)
            await bad.close()
            await client.close()
        }
    }

    @Test func garbageBytesCloseOnlyThatConnection() async throws {
        try await TestGateway.with { gateway in
            let good = try await gateway.client()
            let bad = try await gateway.client()
            // Raw bytes that are no HTTP/2 frame at all, written under the HTTP/2 handler.
            let garbage = bad.channel.allocator.buffer(bytes: [UInt8](repeating: 0xFF, count: 64))
            try await bad.channel.eventLoop.submit {
                let context = try bad.channel.pipeline.syncOperations.context(handlerType: NIOHTTP2Handler.self)
                context.writeAndFlush(NIOAny(garbage), promise: nil)
            }.get()
            try await bad.channel.closeFuture.get()
            #expect(try await good.post(path: path, headers: gateway.headers(), body: alertPayload).status == 200)
            await good.close()
        }
    }
}
