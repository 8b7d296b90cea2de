import AsyncHTTPClient
import ContentOrigin
import DeviceProtocol
import DeviceRuntime
import NIOCore
import NIOHTTP1
import NIOPosix
import PushModel
import Synchronization
import Testing

/// The content server over real HTTP on loopback: manifest, items, resuming, pacing, publishing, the log.
@Suite struct OriginServerTests {
    final class Published: Sendable {
        let versions = Mutex<[Int]>([])
    }

    func withOrigin(
        itemBytes: Int = 100_000, link: Int = 0,
        _ body: (OriginServer, HTTPClient, String, Published) async throws -> Void
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let published = Published()
        var settings = OriginServer.Settings()
        settings.itemBytes = itemBytes
        settings.linkBytesPerSecond = link
        let clock = Mutex(UnixTime(seconds: 1_800_000_000))
        let origin = OriginServer(
            settings: settings, group: group,
            clock: {
                clock.withLock { now in
                    now = now.adding(seconds: 60)
                    return now
                }
            },
            published: { version in published.versions.withLock { $0.append(version.version) } })
        try await origin.start()
        let client = HTTPClient(eventLoopGroupProvider: .shared(group))
        do {
            try await body(origin, client, "http://127.0.0.1:\(origin.boundPort!)", published)
        } catch {
            try await client.shutdown()
            await origin.stop()
            try await group.shutdownGracefully()
            throw error
        }
        try await client.shutdown()
        await origin.stop()
        try await group.shutdownGracefully()
    }

    func get(_ client: HTTPClient, _ url: String, headers: [(String, String)] = [], method: HTTPMethod = .GET)
        async throws -> (status: Int, headers: HTTPHeaders, body: [UInt8])
    {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await client.execute(request, timeout: .seconds(30))
        var body = try await response.body.collect(upTo: 1 << 24)
        return (Int(response.status.code), response.headers, body.readBytes(length: body.readableBytes) ?? [])
    }

    @Test func theManifestNamesTheNewestVersionAndItsItemArrivesWhole() async throws {
        try await withOrigin { origin, client, base, published in
            let empty = try await get(client, base + "/manifest")
            #expect(empty.status == 200)
            #expect(ContentManifest.version(of: empty.body) == 0)

            let posted = try await get(client, base + "/publish", method: .POST)
            #expect(posted.status == 200)
            origin.publish()
            #expect(published.versions.withLock { $0 } == [1, 2])
            let manifest = try await get(client, base + "/manifest")
            #expect(ContentManifest.version(of: manifest.body) == 2)
            #expect(String(decoding: manifest.body, as: UTF8.self).contains(#""path":"/items/2""#))

            let item = try await get(client, base + "/items/2", headers: [("x-device-id", "dev-1")])
            #expect(item.status == 200)
            #expect(item.body.count == 100_000)
            #expect(item.body.enumerated().allSatisfy { $0.element == ContentCatalog.byte($0.offset, of: 2) })
            #expect(origin.versions.map(\.version) == [1, 2])
        }
    }

    @Test func aDownloadResumesFromAByteRange() async throws {
        try await withOrigin { origin, client, base, _ in
            origin.publish()
            let tail = try await get(client, base + "/items/1", headers: [("range", "bytes=60000-")])
            #expect(tail.status == 206)
            #expect(tail.headers.first(name: "content-range") == "bytes 60000-99999/100000")
            #expect(tail.body.count == 40_000)
            #expect(tail.body.enumerated().allSatisfy { $0.element == ContentCatalog.byte(60_000 + $0.offset, of: 1) })
            let beyond = try await get(client, base + "/items/1", headers: [("range", "bytes=100000-")])
            #expect(beyond.status == 416)
            let other = try await get(client, base + "/items/1", headers: [("range", "bytes=0-10")])
            #expect(other.status == 416, "only open-ended ranges (resume data)")
            #expect(try await get(client, base + "/items/9").status == 404)
            #expect(try await get(client, base + "/nothing").status == 404)
            #expect(try await get(client, base + "/manifest", method: .DELETE).status == 405)
        }
    }

    /// A paced response (a link rate, slowed further for a background session) still arrives whole.
    @Test func aPacedItemArrivesWhole() async throws {
        try await withOrigin(itemBytes: 64 * 1024, link: 4 * 1024 * 1024) { origin, client, base, _ in
            origin.publish()
            let slow = try await get(client, base + "/items/1?slowdown=4", headers: [("x-device-id", "dev-2")])
            #expect(slow.status == 200)
            #expect(slow.body.count == 64 * 1024)
        }
    }

    @Test func theLogSaysWhoFetchedWhatAndWhen() async throws {
        try await withOrigin(itemBytes: 1000) { origin, client, base, _ in
            origin.publish()
            _ = try await get(client, base + "/manifest", headers: [("x-device-id", "dev-a")])
            _ = try await get(client, base + "/items/1", headers: [("x-device-id", "dev-a")])
            _ = try await get(client, base + "/items/1", headers: [("x-device-id", "dev-b"), ("range", "bytes=400-")])
            let entries = origin.log.all
            #expect(entries.map(\.device) == ["dev-a", "dev-a", "dev-b"])
            #expect(entries.map(\.path) == ["/manifest", "/items/1", "/items/1"])
            #expect(entries.map(\.bytes).suffix(2) == [1000, 600])
            #expect(entries.map(\.status) == [200, 200, 206])
            #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.at < $1.at })
            let log = try await get(client, base + "/log")
            #expect(String(decoding: log.body, as: UTF8.self).contains(#""device":"dev-b""#))
        }
    }

    @Test func theCatalogKeepsEveryVersionsPublishTime() {
        var catalog = ContentCatalog()
        #expect(catalog.manifestJSON == #"{"version":0}"#)
        catalog.publish(at: UnixTime(seconds: 10), bytes: 5)
        catalog.publish(at: UnixTime(seconds: 20), bytes: 7)
        #expect(catalog.versions.map(\.publishedAt) == [10_000, 20_000])
        #expect(ContentManifest.version(of: Array(catalog.manifestJSON.utf8)) == 2)
        #expect(catalog.version(3) == nil && catalog.version(0) == nil)
        #expect(ContentManifest.version(of: Array("not json".utf8)) == nil)
    }
}
