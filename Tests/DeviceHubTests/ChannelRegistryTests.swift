import DeviceHub
import NIOCore
import NIOPosix
import PushIntake
import PushModel
import PushStore
import Testing

/// Broadcast channels: created with a random base64 id and a storage policy, read and listed per app,
/// deleted for good, at most `limit` live ones per app; every change stored before it is answered, and
/// back after a restart; another node's changes applied from its notices.
@Suite struct ChannelRegistryTests {
    let t0 = UnixTime(seconds: 1_800_000_000)
    let loop = MultiThreadedEventLoopGroup.singleton.next()

    @Test func channelsAreCreatedReadListedAndDeletedPerApp() throws {
        let registry = ChannelRegistry(limit: 2)
        guard
            case .success(let (first, _)) = registry.create(
                bundleID: "com.example.scores", policy: .mostRecentMessageStored, now: t0, answeringOn: loop)
        else { throw ChannelRefusal.limitReached }
        #expect(ChannelID(first.id.value) == first.id, "a base64 id")
        #expect(first.storagePolicy == .mostRecentMessageStored)
        #expect(registry.channel(first.id, bundleID: "com.example.scores") == first)
        #expect(registry.channel(first.id, bundleID: "com.example.other") == nil, "another app's channel")
        guard
            case .success(let (second, _)) = registry.create(
                bundleID: "com.example.scores", policy: .noMessageStored, now: t0, answeringOn: loop)
        else { throw ChannelRefusal.limitReached }
        #expect(second.id != first.id)
        #expect(registry.channels(of: "com.example.scores").map(\.id) == [first.id, second.id])
        // The limit is per app, on live channels.
        guard
            case .failure(.limitReached) = registry.create(
                bundleID: "com.example.scores", policy: .noMessageStored, now: t0, answeringOn: loop)
        else { throw ChannelRefusal.limitReached }
        #expect(registry.delete(first.id, bundleID: "com.example.other", now: t0, answeringOn: loop) == nil)
        #expect(registry.delete(first.id, bundleID: "com.example.scores", now: t0, answeringOn: loop) != nil)
        #expect(registry.delete(first.id, bundleID: "com.example.scores", now: t0, answeringOn: loop) == nil)
        #expect(registry.channel(first.id, bundleID: "com.example.scores") == nil)
        #expect(registry.channels(of: "com.example.scores").map(\.id) == [second.id])
        if case .failure = registry.create(
            bundleID: "com.example.scores", policy: .noMessageStored, now: t0, answeringOn: loop)
        {
            Issue.record("a deleted channel frees its place")
        }
        #expect(registry.liveCount == 2)
    }

    @Test func channelsAreStoredBeforeTheAnswerAndComeBack() async throws {
        let backend = MemoryStore()
        _ = try await backend.open(now: t0)
        let writer = StoreWriter(backend: backend)
        let running = Task { await writer.run() }
        let registry = ChannelRegistry(writer: writer)
        guard
            case .success(let (kept, stored)) = registry.create(
                bundleID: "com.example.scores", policy: .mostRecentMessageStored, now: t0, answeringOn: loop),
            case .success(let (gone, _)) = registry.create(
                bundleID: "com.example.scores", policy: .noMessageStored, now: t0, answeringOn: loop)
        else { throw ChannelRefusal.limitReached }
        try await stored.get()
        try await registry.delete(gone.id, bundleID: "com.example.scores", now: t0, answeringOn: loop)!.get()
        writer.finish()
        await running.value

        let snapshot = try await backend.open(now: t0)
        #expect(snapshot.channels.map(\.id) == [kept.id.value, gone.id.value])
        let restored = ChannelRegistry()
        restored.restore(snapshot.channels)
        #expect(restored.channels(of: "com.example.scores") == [kept])
        #expect(restored.channel(gone.id, bundleID: "com.example.scores") == nil)
    }

    @Test func anotherNodesChangesAreApplied() {
        let registry = ChannelRegistry()
        let id = "dHN0LXNyY2gtY2hubA=="
        registry.apply(StoredChannel(id: id, bundleID: "com.example.scores", storagePolicy: 0, createdAt: t0))
        #expect(registry.channels(of: "com.example.scores").map(\.id.value) == [id])
        registry.apply(
            StoredChannel(id: id, bundleID: "com.example.scores", storagePolicy: 0, createdAt: t0, deletedAt: t0))
        #expect(registry.channels(of: "com.example.scores").isEmpty)
        // Unreadable ones are skipped.
        registry.apply(
            StoredChannel(id: "not base64!", bundleID: "com.example.scores", storagePolicy: 0, createdAt: t0))
        registry.apply(StoredChannel(id: "b3RoZXI=", bundleID: "com.example.scores", storagePolicy: 7, createdAt: t0))
        #expect(registry.liveCount == 0)
    }

    @Test func channelIDsAreWellFormedBase64() {
        for good in ["dHN0LXNyY2gtY2hubA==", "b3RoZXI=", "AAAA", "+/+/"] { #expect(ChannelID(good) != nil, "\(good)") }
        for bad in ["", "abc", "a=bc", "dHN0=LXN", "ab c", "abcd===", String(repeating: "A", count: 100)] {
            #expect(ChannelID(bad) == nil, "\(bad)")
        }
    }
}
