import NIOCore
import NIOEmbedded
import NIOPosix
import PushModel
import PushStore
import Synchronization
import Testing

/// A backend whose commits are made durable apart (`sync`, as SQLite's log): the writer writes the
/// next batch while a sync runs, and answers a request only once a sync that began after its commit
/// has ended.
@Suite struct StoreWriterSyncTests {
    @Test func theNextBatchIsWrittenWhileTheSyncRunsAndAnswersWaitForTheirSync() async throws {
        let backend = SyncGatedBackend()
        let running = RunningWriter(backend)
        let writer = running.writer

        let first = running.enqueue(1)
        await backend.waitFor { $0.syncsStarted == 1 }
        let second = running.enqueue(2)
        // Written while the first sync is held: the disk's wait and the writing overlap.
        await backend.waitFor { $0.commits == 2 }
        #expect(writer.figures.commits == 0, "nothing is counted, or answered, before its sync")
        let answered = Answered()
        first.whenSuccess { answered.note(1) }
        second.whenSuccess { answered.note(2) }

        backend.releaseSync()
        try await first.get()
        // The second commit returned after the first sync began: a sync of its own answers it.
        await backend.waitFor { $0.syncsStarted == 2 }
        #expect(answered.values == [1])
        backend.releaseSync()
        try await second.get()
        await running.finish()
        #expect(writer.figures.commits == 2 && writer.figures.changes == 2)
        #expect(backend.state.withLock { $0.syncsStarted } == 2)
    }

    /// A failed sync fails the answers of the commits it covered, and every later one without writing
    /// it: past a gap the disk never got, SQLite's recovery would drop what came after, 200s included.
    @Test func aFailedSyncFailsItsCommitsAndTheStoreTakesNoWriteUntilARestart() async throws {
        let backend = SyncGatedBackend(failFirstSync: true)
        let running = RunningWriter(backend)
        let writer = running.writer

        let lost = running.enqueue(1)
        await backend.waitFor { $0.syncsStarted == 1 }
        backend.releaseSync()
        await #expect(throws: StoreError.self) { try await lost.get() }
        #expect(writer.isFailing)
        #expect(writer.figures.failures == 1 && writer.figures.commits == 0)

        let refused = running.enqueue(2)
        await #expect {
            try await refused.get()
        } throws: { error in
            "\(error)".contains("no write is taken until the gateway restarts")
        }
        #expect(backend.state.withLock { $0.commits } == 1, "nothing written after the failed sync")
        #expect(writer.isFailing)
        await running.finish()
        #expect(writer.figures.commits == 0 && writer.figures.failures == 2)
    }

    /// Behind a sync that does not end, one more commit is written and no more: the batch after it waits,
    /// and is dropped at the wait limit (503), as behind a commit that does not end.
    @Test func aBatchBehindASyncThatDoesNotEndIsDroppedAtTheWaitLimit() async throws {
        let backend = SyncGatedBackend()
        let writer = StoreWriter(backend: backend, waitLimit: .seconds(10))
        let loop = NIOAsyncTestingEventLoop()
        let running = Task { await writer.run() }
        func enqueue(_ n: Int) -> EventLoopFuture<Void> {
            writer.enqueue(answeringOn: loop) { $0.notifications.append(Samples.stored(n)) }
        }

        let syncing = enqueue(1)
        await backend.waitFor { $0.syncsStarted == 1 }
        let writtenAhead = enqueue(2)
        await backend.waitFor { $0.commits == 2 }
        let behind = enqueue(3)
        for _ in 0..<100 { await Task.yield() }
        await loop.advanceTime(by: .seconds(10))
        #expect(writer.figures.expired == 1)
        #expect(backend.state.withLock { $0.commits } == 2, "the third batch was never written")

        // (Released for as many syncs as a writer that did not wait would start.)
        for _ in 1...3 { backend.releaseSync() }
        try await syncing.get()
        try await writtenAhead.get()
        await #expect(throws: StoreWaitExpired.self) { try await behind.get() }
        writer.finish()
        await running.value
        #expect(writer.figures.expired == 1 && writer.figures.commits == 2)
        #expect(try await backend.inner.notification(Samples.stored(3).notification.id) == nil)
        await loop.shutdownGracefully()
    }

    /// `finish` ends `run` only once the last commit is synced.
    @Test func finishingWaitsForTheLastSync() async throws {
        let backend = SyncGatedBackend()
        let running = RunningWriter(backend)
        let writer = running.writer
        let ended = Mutex(false)
        let answer = running.enqueue(1)
        await backend.waitFor { $0.syncsStarted == 1 }
        writer.finish()
        let finishing = Task {
            await running.finish()
            ended.withLock { $0 = true }
        }
        // The commit loop has nothing left; `run` still waits for the sync.
        await backend.waitFor { $0.commits == 1 }
        for _ in 0..<100 { await Task.yield() }
        #expect(!ended.withLock { $0 })
        backend.releaseSync()
        try await answer.get()
        await finishing.value
        #expect(writer.figures.commits == 1)
    }
}

/// The order answers came in.
private final class Answered: Sendable {
    private let list = Mutex<[Int]>([])
    func note(_ value: Int) { list.withLock { $0.append(value) } }
    var values: [Int] { list.withLock { $0 } }
}

/// A memory store whose commits are durable only after `sync`, each sync held until the test releases
/// it (one release, one sync).
final class SyncGatedBackend: WrapsMemoryStore {
    let kind = "sync-gated"
    let inner = MemoryStore()
    struct State {
        var commits = 0
        var syncsStarted = 0
        var releases = 0
        var waiting: CheckedContinuation<Void, Never>?
        var failFirstSync: Bool
    }
    let state: Mutex<State>

    init(failFirstSync: Bool = false) { state = Mutex(State(failFirstSync: failFirstSync)) }

    var commitsAreDurable: Bool { false }

    func waitFor(_ condition: (State) -> Bool) async {
        while !state.withLock({ condition($0) }) { await Task.yield() }
    }

    func releaseSync() {
        let waiting = state.withLock { state in
            state.releases += 1
            defer { state.waiting = nil }
            return state.waiting
        }
        waiting?.resume()
    }

    func commit(_ batch: StoreBatch) async throws {
        try await inner.commit(batch)
        state.withLock { $0.commits += 1 }
    }

    func sync() async throws {
        let number = state.withLock { state in
            state.syncsStarted += 1
            return state.syncsStarted
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.releases >= number { return true }
                state.waiting = continuation
                return false
            }
            if now { continuation.resume() }
        }
        if number == 1, state.withLock({ $0.failFirstSync }) { throw StoreError("EIO") }
    }

}
