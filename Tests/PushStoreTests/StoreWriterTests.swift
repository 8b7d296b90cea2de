import NIOCore
import NIOEmbedded
import NIOPosix
import PushModel
import PushStore
import Synchronization
import Testing

@Suite struct StoreWriterTests {
    /// While one commit runs, everything enqueued meanwhile goes into the next one, and every answer is
    /// given only once its change is committed (one answer per commit and event loop).
    @Test func changesEnqueuedDuringACommitShareTheNextOne() async throws {
        let backend = GatedBackend()
        let running = RunningWriter(backend)
        let writer = running.writer

        let first = running.enqueue(1)
        await backend.waitForCommits(started: 1)
        // The first commit is held open: these pile up, and share one answer.
        let rest = (2...51).map { running.enqueue($0) }
        #expect(rest.allSatisfy { $0 === rest[0] })
        #expect(rest[0] !== first)
        backend.release()
        try await first.get()
        try await rest[0].get()
        await running.finish()

        #expect(backend.batchSizes == [1, 50])
        #expect(writer.figures.commits == 2)
        #expect(writer.figures.largestBatch == 50)
        #expect(try await backend.inner.counts() == [.pending: 51])
    }

    @Test func aFailedCommitFailsItsPromisesAndTheWriterGoesOn() async throws {
        let backend = GatedBackend(failFirst: true)
        backend.release()
        let running = RunningWriter(backend)
        let writer = running.writer
        let failing = running.enqueue(1)
        await #expect(throws: StoreError.self) { try await failing.get() }
        try await running.enqueue(2).get()
        await running.finish()
        #expect(writer.figures.failures == 1)
        #expect(writer.figures.commits == 1)
    }
}

extension StoreWriterTests {
    /// A batch stuck behind a commit that does not end is dropped at the wait limit, unattempted: its
    /// answers fail with `StoreWaitExpired` (503 on the provider API), nothing of it reaches the store
    /// even once the stuck commit ends, and the writer goes on. On the answer loop's clock, advanced here.
    @Test func aBatchThatWaitsPastTheLimitIsDroppedUnattempted() async throws {
        let backend = GatedBackend()
        let writer = StoreWriter(backend: backend, waitLimit: .seconds(10))
        let loop = NIOAsyncTestingEventLoop()
        let running = Task { await writer.run() }

        let stuck = writer.enqueue(answeringOn: loop) { $0.notifications.append(Samples.stored(1)) }
        await backend.waitForCommits(started: 1)
        let waiting = writer.enqueue(answeringOn: loop) { $0.notifications.append(Samples.stored(2)) }
        await loop.advanceTime(by: .seconds(9))
        #expect(writer.figures.expired == 0, "still within the limit")
        #expect(writer.figures.committing == 1)
        await loop.advanceTime(by: .seconds(1))
        await #expect(throws: StoreWaitExpired.self) { try await waiting.get() }
        #expect(writer.isFailing)

        backend.release()
        try await stuck.get()
        let next = writer.enqueue(answeringOn: loop) { $0.notifications.append(Samples.stored(3)) }
        try await next.get()
        // A batch taken in time is not expired later.
        await loop.advanceTime(by: .seconds(60))
        writer.finish()
        await running.value
        #expect(backend.batchSizes == [1, 1], "the dropped batch was never attempted")
        #expect(try await backend.inner.notification(Samples.stored(2).notification.id) == nil)
        #expect(try await backend.inner.counts() == [.pending: 2])
        #expect(writer.figures.expired == 1 && writer.figures.failures == 0 && !writer.isFailing)
        #expect(writer.figures.committing == 0)
        await loop.shutdownGracefully()
    }
}

extension StoreWriterTests {
    /// Changes no request waits for (acknowledgements, budgets) wait for company: they share one commit
    /// once the first of them has waited `unansweredWait`, on the wait loop's clock (advanced here).
    @Test func unansweredChangesWaitForCompanyAndShareACommit() async throws {
        let (backend, writer, loop, running) = Self.waitingWriter()
        writer.enqueue { $0.notifications.append(Samples.stored(1)) }
        await loop.advanceTime(by: .milliseconds(60))
        writer.enqueue { $0.notifications.append(Samples.stored(2)) }
        writer.enqueue { $0.notifications.append(Samples.stored(3)) }
        await loop.advanceTime(by: .milliseconds(39))
        await Self.settle()
        #expect(backend.batchSizes == [], "the first has waited 99 ms")
        await loop.advanceTime(by: .milliseconds(1))
        await backend.waitForCommits(started: 1)
        writer.finish()
        await running.value
        #expect(backend.batchSizes == [3])
        await loop.shutdownGracefully()
    }

    /// A change a request waits for is committed at once, and takes the waiting ones with it; the timer
    /// of a batch taken early does not cut the next batch's wait short.
    @Test func anAnsweredChangeTakesTheWaitingOnesAtOnce() async throws {
        let (backend, writer, loop, running) = Self.waitingWriter()
        writer.enqueue { $0.notifications.append(Samples.stored(1)) }
        writer.enqueue { $0.notifications.append(Samples.stored(2)) }
        await loop.advanceTime(by: .milliseconds(50))
        try await writer.enqueue(answeringOn: loop) { $0.notifications.append(Samples.stored(3)) }.get()
        #expect(backend.batchSizes == [3])
        await loop.advanceTime(by: .milliseconds(10))
        writer.enqueue { $0.notifications.append(Samples.stored(4)) }
        // The first batch's timer (cancelled) would have run here.
        await loop.advanceTime(by: .milliseconds(40))
        await Self.settle()
        #expect(backend.batchSizes == [3], "the second batch has waited 40 ms")
        await loop.advanceTime(by: .milliseconds(60))
        await backend.waitForCommits(started: 2)
        #expect(backend.batchSizes == [3, 1])
        writer.finish()
        await running.value
        await loop.shutdownGracefully()
    }

    /// Finishing commits what waits for company without waiting.
    @Test func finishingCommitsTheWaitingChangesAtOnce() async throws {
        let (backend, writer, loop, running) = Self.waitingWriter()
        writer.enqueue { $0.notifications.append(Samples.stored(1)) }
        writer.finish()
        await running.value
        #expect(backend.batchSizes == [1])
        #expect(try await backend.inner.counts() == [.pending: 1])
        await loop.shutdownGracefully()
    }

    /// A released backend, a writer whose unanswered changes wait 100 ms on the returned loop's clock, its
    /// run.
    private static func waitingWriter() -> (GatedBackend, StoreWriter, NIOAsyncTestingEventLoop, Task<Void, Never>) {
        let backend = GatedBackend()
        backend.release()
        let loop = NIOAsyncTestingEventLoop()
        let writer = StoreWriter(backend: backend, unansweredWait: .milliseconds(100), waitLoop: loop)
        return (backend, writer, loop, Task { await writer.run() })
    }

    /// Gives a writer that should not commit the chance to (a commit it should not start would show).
    private static func settle() async {
        for _ in 0..<100 { await Task.yield() }
    }
}

/// A memory store whose first commit waits until the test releases it.
final class GatedBackend: WrapsMemoryStore {
    let kind = "gated"
    let inner = MemoryStore()
    private struct State {
        var released = false
        var waiting: [CheckedContinuation<Void, Never>] = []
        var started = 0
        var sizes: [Int] = []
        var failFirst: Bool
    }
    private let state: Mutex<State>

    init(failFirst: Bool = false) { state = Mutex(State(failFirst: failFirst)) }

    var batchSizes: [Int] { state.withLock { $0.sizes } }

    func release() {
        let waiting = state.withLock { state in
            state.released = true
            defer { state.waiting = [] }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    func waitForCommits(started count: Int) async {
        while state.withLock({ $0.started < count }) { await Task.yield() }
    }

    func commit(_ batch: StoreBatch) async throws {
        state.withLock {
            $0.started += 1
            $0.sizes.append(batch.count)
        }
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.released { return true }
                state.waiting.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
        if state.withLock({ state in
            defer { state.failFirst = false }
            return state.failFirst
        }) {
            throw StoreError("disk full")
        }
        try await inner.commit(batch)
    }

}

/// A writer on `backend`, running until `finish`, and the event loop its answers come on.
struct RunningWriter {
    let writer: StoreWriter
    let loop: any EventLoop = MultiThreadedEventLoopGroup.singleton.next()
    private let running: Task<Void, Never>

    init(_ backend: any StoreBackend) {
        let writer = StoreWriter(backend: backend)
        self.writer = writer
        running = Task { await writer.run() }
    }

    /// Notification `n` (`Samples.stored`), answered on `loop`.
    func enqueue(_ n: Int) -> EventLoopFuture<Void> {
        writer.enqueue(answeringOn: loop) { $0.notifications.append(Samples.stored(n)) }
    }

    /// Until `run` has ended, after everything enqueued is committed.
    func finish() async {
        writer.finish()
        await running.value
    }
}

/// A test backend over a `MemoryStore` (`inner`): everything but its commits is the memory store's.
protocol WrapsMemoryStore: StoreBackend {
    var inner: MemoryStore { get }
}

extension WrapsMemoryStore {
    func open(now: UnixTime) async throws -> StoreSnapshot { try await inner.open(now: now) }
    func prune(finishedBefore: UnixTime, now: UnixTime) async throws -> PruneResult {
        try await inner.prune(finishedBefore: finishedBefore, now: now)
    }
    func notification(_ id: APNsID) async throws -> StoredNotification? { try await inner.notification(id) }
    func counts() async throws -> [NotificationState: Int] { try await inner.counts() }
    func ping() async throws {}
    func close() async throws {}
}
