import NIOCore
import NIOPosix
import PushModel
import Synchronization

/// Group commit: changes from every connection collect in one batch while the previous commit runs;
/// then one transaction (one fsync) commits them all and their promises are kept. Under load a commit
/// carries hundreds of notifications, so durability costs little throughput; when idle, a change
/// commits at once.
public final class StoreWriter: Sendable {
    public let backend: any StoreBackend

    private struct State {
        var batch = StoreBatch()
        /// One per event loop that enqueued an answered change into this batch: every change from that
        /// loop shares it, so a commit of hundreds of requests costs each loop one promise and one task.
        var promises: [EventLoopPromise<Void>] = []
        var wakeup: CheckedContinuation<Void, Never>?
        /// A loop will wake the writer at the end of its round.
        var wakeScheduled = false
        var finishing = false
        var figures = CommitFigures()
        /// The last commit failed (until one succeeds).
        var failing = false
        /// Which batch is collecting (the count of batches taken or expired before it), and the timer
        /// that drops it if it is still collecting after the wait limit.
        var batchNumber: UInt64 = 0
        var expiry: Scheduled<Void>?
        /// The batch holds only changes no request waits for, and they wait for company until a timer
        /// runs (`unansweredWait`): the writer takes the batch then, or sooner with an answered change. The
        /// timer of a batch taken sooner is left to run: it names its batch, and finds it gone.
        var waitsForCompany = false
        /// Commits written and not yet durable, oldest first (a backend whose `sync` makes them durable),
        /// and the sync loop waiting for one; `writingEnded` once the commit loop has ended.
        var unsynced: [Written] = []
        var syncWakeup: CheckedContinuation<Void, Never>?
        /// The commit loop waiting for the sync loop to take what it wrote (one commit is written ahead of
        /// the sync, no more: behind a sync that does not end, the next batch waits and meets the wait limit).
        var writeWakeup: CheckedContinuation<Void, Never>?
        var writingEnded = false
        /// Set by the first sync that fails, for good: the log may hold a gap the disk never got, past which
        /// SQLite's recovery would drop every later commit, so nothing more is written until a restart.
        var syncFailure: StoreError?

        /// Whether the commit loop takes the batch now: it holds something, and no change of it waits for
        /// company any longer (an answered one never does; finishing takes everything).
        var isReady: Bool {
            (!batch.isEmpty || !promises.isEmpty) && (!waitsForCompany || !promises.isEmpty || finishing)
        }
    }

    /// A commit the backend returned from: its answers, its size, when it began.
    private struct Written {
        var promises: [EventLoopPromise<Void>]
        var changes: Int
        var started: ContinuousClock.Instant
    }

    private let state = Mutex(State())
    /// Told of every commit: how many changes it carried and how long it took (the metrics).
    private let onCommit: @Sendable (_ changes: Int, _ elapsed: Duration) -> Void
    /// Told of every failed commit: its error and how many changes it lost (their requests are answered
    /// with the error).
    private let onFailure: @Sendable (_ error: any Error, _ changes: Int) -> Void
    /// How long a batch with an answered change may collect while the commit before it runs: past it the
    /// batch is dropped, never attempted, and its answers fail with `StoreWaitExpired` (nil: no limit).
    private let waitLimit: Duration?
    /// How long a change no request waits for (an acknowledgement, a decision about an earlier push, a
    /// budget) may wait for others before it is committed (nil: it is committed at once). Such changes
    /// otherwise trickle in one by one — a device's acknowledgement, an app's completion — and each would
    /// make a transaction of its own; an answered change never waits, and takes them with it.
    private let unansweredWait: Duration?
    /// The loop whose clock times that wait (a test's loop advances it); nil: the loop the change is
    /// enqueued on (a change enqueued off any loop is committed at once).
    private let waitLoop: (any EventLoop)?

    public init(
        backend: any StoreBackend, waitLimit: Duration? = nil, unansweredWait: Duration? = nil,
        waitLoop: (any EventLoop)? = nil,
        onCommit: @escaping @Sendable (_ changes: Int, _ elapsed: Duration) -> Void = { _, _ in },
        onFailure: @escaping @Sendable (_ error: any Error, _ changes: Int) -> Void = { _, _ in }
    ) {
        self.backend = backend
        self.waitLimit = waitLimit
        self.unansweredWait = unansweredWait
        self.waitLoop = waitLoop
        self.onCommit = onCommit
        self.onFailure = onFailure
    }

    /// Whether the last commit failed (none has succeeded since): the store cannot write.
    public var isFailing: Bool { state.withLock { $0.failing } }

    /// Adds changes to the next commit, with no answer.
    ///
    /// Called on an event loop, the writer is woken once that loop has handled what it read in this
    /// round, so that every request of the round shares one commit (rather than the first one waking
    /// the writer, which then commits it alone).
    public func enqueue(_ change: (inout StoreBatch) -> Void) {
        _ = add(change, answeringOn: nil)
    }

    /// Adds changes to the next commit; the future succeeds on `eventLoop` once they are durable, or
    /// fails with the commit's error. Changes enqueued on the same loop into the same commit get the
    /// same future (compare with `===` to answer them together).
    public func enqueue(
        answeringOn eventLoop: any EventLoop, _ change: (inout StoreBatch) -> Void
    ) -> EventLoopFuture<Void> {
        add(change, answeringOn: eventLoop)!
    }

    private func add(
        _ change: (inout StoreBatch) -> Void, answeringOn answerLoop: (any EventLoop)?
    ) -> EventLoopFuture<Void>? {
        let loop = MultiThreadedEventLoopGroup.currentEventLoop
        let (future, wakeup, deferToLoop) = state.withLock {
            state -> (EventLoopFuture<Void>?, CheckedContinuation<Void, Never>?, Bool) in
            let first = state.batch.isEmpty && state.promises.isEmpty
            change(&state.batch)
            var future: EventLoopFuture<Void>?
            if let answerLoop {
                if let shared = state.promises.first(where: { $0.futureResult.eventLoop === answerLoop }) {
                    future = shared.futureResult
                } else {
                    let promise = answerLoop.makePromise(of: Void.self)
                    state.promises.append(promise)
                    future = promise.futureResult
                }
                if let waitLimit, state.expiry == nil {
                    // On the answer loop's clock (a test's loop advances it); cancelled when the batch is
                    // taken, so only a batch stuck behind a commit that does not end runs it.
                    let number = state.batchNumber
                    state.expiry = answerLoop.scheduleTask(in: TimeAmount(waitLimit)) {
                        self.expire(batch: number)
                    }
                }
            }
            if answerLoop == nil {
                if first, !state.finishing, let unansweredWait, let loop = waitLoop ?? loop {
                    // The batch's first change, unanswered: it waits for company on this loop's clock, and
                    // the timer wakes the writer.
                    let number = state.batchNumber
                    state.waitsForCompany = true
                    loop.scheduleTask(in: TimeAmount(unansweredWait)) { self.companyWaited(batch: number) }
                    return (future, nil, false)
                }
                if state.waitsForCompany { return (future, nil, false) }
            }
            guard state.wakeup != nil else { return (future, nil, false) }
            if loop != nil {
                guard !state.wakeScheduled else { return (future, nil, false) }
                state.wakeScheduled = true
                return (future, nil, true)
            }
            defer { state.wakeup = nil }
            return (future, state.wakeup, false)
        }
        if deferToLoop, let loop {
            loop.execute { self.wake() }
        }
        wakeup?.resume()
        return future
    }

    /// The batch `number` is still collecting after the wait limit (the commit before it has not ended):
    /// dropped, as a failed commit is, without being attempted — so nothing of it lands later.
    private func expire(batch number: UInt64) {
        let expired = state.withLock { state -> (Int, [EventLoopPromise<Void>])? in
            guard state.batchNumber == number, !state.batch.isEmpty || !state.promises.isEmpty else { return nil }
            defer {
                state.batch = StoreBatch()
                state.promises = []
                state.batchNumber &+= 1
                state.expiry = nil
                state.waitsForCompany = false
                state.figures.expired += 1
                state.failing = true
            }
            return (state.batch.count, state.promises)
        }
        guard let expired, let waitLimit else { return }
        let (changes, promises) = expired
        let error = StoreWaitExpired(limit: waitLimit)
        onFailure(error, changes)
        for promise in promises { promise.fail(error) }
    }

    /// The batch `number`'s unanswered changes have waited for company long enough: taken now.
    private func companyWaited(batch number: UInt64) {
        let wakeup = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.batchNumber == number else { return nil }
            state.waitsForCompany = false
            defer { state.wakeup = nil }
            return state.wakeup
        }
        wakeup?.resume()
    }

    private func wake() {
        let wakeup = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.wakeScheduled = false
            defer { state.wakeup = nil }
            return state.wakeup
        }
        wakeup?.resume()
    }

    /// Commits until `finish()` is called and everything enqueued before it is committed (and durable).
    ///
    /// For a backend whose commits are made durable apart (`commitsAreDurable` false: SQLite, which
    /// syncs its log after the commit), a second loop syncs while the next batch is written, so the
    /// disk's wait and the writing overlap; each answer still waits for the sync that covers it.
    public func run() async {
        guard !backend.commitsAreDurable else { return await commitLoop() }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.syncLoop() }
            await commitLoop()
            let wakeup = state.withLock { state in
                state.writingEnded = true
                defer { state.syncWakeup = nil }
                return state.syncWakeup
            }
            wakeup?.resume()
        }
    }

    private func commitLoop() async {
        while true {
            await waitUntilSyncTookWhatWasWritten()
            let taken = await next()
            guard let (batch, promises) = taken else { return }
            let written = Written(promises: promises, changes: batch.count, started: .now)
            do {
                if let refused = state.withLock({ $0.syncFailure }) { throw refused }
                try await backend.commit(batch)
                state.withLock { $0.figures.committing = 0 }
                if backend.commitsAreDurable {
                    durable([written])
                } else {
                    let wakeup = state.withLock { state in
                        state.unsynced.append(written)
                        defer { state.syncWakeup = nil }
                        return state.syncWakeup
                    }
                    wakeup?.resume()
                }
            } catch {
                state.withLock {
                    $0.figures.failures += 1
                    $0.figures.committing = 0
                    $0.failing = true
                }
                onFailure(error, batch.count)
                for promise in promises { promise.fail(error) }
            }
        }
    }

    /// Returns once no written commit waits for the sync loop to take it.
    private func waitUntilSyncTookWhatWasWritten() async {
        guard !backend.commitsAreDurable else { return }
        await park(in: \.writeWakeup, unless: { $0.unsynced.isEmpty })
    }

    /// Waits in `slot` until woken, unless `ready` holds already (checked under the lock that wakes it).
    private func park(
        in slot: WritableKeyPath<State, CheckedContinuation<Void, Never>?>, unless ready: (State) -> Bool
    ) async {
        guard !state.withLock({ ready($0) }) else { return }
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if ready(state) { return true }
                state[keyPath: slot] = continuation
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    /// Commits that are on disk: counted, and their requests answered.
    private func durable(_ commits: [Written]) {
        let now = ContinuousClock.now
        state.withLock { state in
            for commit in commits { state.figures.committed(commit.changes, elapsed: now - commit.started) }
            state.failing = false
        }
        for commit in commits {
            onCommit(commit.changes, now - commit.started)
            for promise in commit.promises { promise.succeed() }
        }
    }

    /// Syncs what the commit loop wrote, every commit written before a sync in that sync, until the
    /// commit loop has ended and nothing is left. A failed sync fails the answers of the commits it
    /// covered, as a failed commit does (they may be on disk: a provider that sends again may deliver
    /// a push twice, which APNs allows too) — and every commit after it, until a restart (`syncFailure`).
    private func syncLoop() async {
        while true {
            enum Step {
                case sync([Written])
                case stop
                case wait
            }
            // Taking what was written lets the commit loop write the next batch.
            let (step, writer) = state.withLock { state -> (Step, CheckedContinuation<Void, Never>?) in
                guard !state.unsynced.isEmpty else { return (state.writingEnded ? .stop : .wait, nil) }
                defer {
                    state.unsynced = []
                    state.writeWakeup = nil
                }
                return (.sync(state.unsynced), state.writeWakeup)
            }
            writer?.resume()
            switch step {
            case .stop: return
            case .wait:
                await park(in: \.syncWakeup, unless: { !$0.unsynced.isEmpty || $0.writingEnded })
            case .sync(let commits):
                do {
                    if let refused = state.withLock({ $0.syncFailure }) { throw refused }
                    try await backend.sync()
                    durable(commits)
                } catch {
                    let changes = commits.reduce(0) { $0 + $1.changes }
                    state.withLock {
                        $0.figures.failures += 1
                        $0.failing = true
                        if $0.syncFailure == nil {
                            $0.syncFailure = StoreError(
                                "the store's log could not be synced (\(error)): no write is taken until the gateway restarts"
                            )
                        }
                    }
                    onFailure(error, changes)
                    for commit in commits { for promise in commit.promises { promise.fail(error) } }
                }
            }
        }
    }

    /// Stops `run` once what was enqueued so far is committed.
    public func finish() {
        let wakeup = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.finishing = true
            defer { state.wakeup = nil }
            return state.wakeup
        }
        wakeup?.resume()
    }

    public var figures: CommitFigures { state.withLock { $0.figures } }

    /// The next batch, waiting for one; nil when finishing with nothing left.
    private func next() async -> (StoreBatch, [EventLoopPromise<Void>])? {
        while true {
            enum Step {
                case take(StoreBatch, [EventLoopPromise<Void>])
                case stop
                case wait
            }
            let step = state.withLock { state -> Step in
                if state.isReady {
                    state.figures.committing = state.batch.count
                    defer {
                        // Sized like the last one: under load, commits are alike.
                        let size = state.batch.notifications.count
                        state.batch = StoreBatch()
                        state.batch.notifications.reserveCapacity(size)
                        state.promises = []
                        state.batchNumber &+= 1
                        state.expiry?.cancel()
                        state.expiry = nil
                        state.waitsForCompany = false
                    }
                    return .take(state.batch, state.promises)
                }
                return state.finishing ? .stop : .wait
            }
            switch step {
            case .take(let batch, let promises): return (batch, promises)
            case .stop: return nil
            case .wait:
                await park(in: \.wakeup, unless: { $0.isReady || $0.finishing })
            }
        }
    }
}

/// The writer's figures: how many commits, how big, how long.
public struct CommitFigures: Sendable, Equatable, Codable {
    public var commits = 0
    public var changes = 0
    public var largestBatch = 0
    public var failures = 0
    public var totalMicroseconds: Int64 = 0
    public var slowestMicroseconds: Int64 = 0
    /// Batches dropped unattempted after waiting past the wait limit behind a commit that did not end.
    public var expired = 0
    /// Changes in the commit running now (0: none runs).
    public var committing = 0

    public init() {}

    mutating func committed(_ size: Int, elapsed: Duration) {
        let micros = elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000
        commits += 1
        changes += size
        largestBatch = max(largestBatch, size)
        totalMicroseconds += micros
        slowestMicroseconds = max(slowestMicroseconds, micros)
    }
}
