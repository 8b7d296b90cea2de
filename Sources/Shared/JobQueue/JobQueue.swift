/// Work that event-loop code (a channel handler, a future's callback) hands to a service, to be run as
/// a child of the service's task group instead of in a `Task` of its own: the group's end waits for it,
/// and nothing runs after the service has stopped. A job offered once the group is finishing is
/// refused — `offer` says so, and the caller answers for the job (a 503, a failed claim) — never
/// silently dropped.
public final class JobQueue: Sendable {
    public typealias Job = @Sendable () async -> Void

    private let stream: AsyncStream<Job>
    private let continuation: AsyncStream<Job>.Continuation

    public init() {
        (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .unbounded)
    }

    /// Hands `job` to the service's group; false when the group has finished taking jobs.
    public func offer(_ job: @escaping Job) -> Bool {
        if case .terminated = continuation.yield(job) { return false }
        return true
    }

    /// Runs each job offered as a child of `group`, until `finish()`; the group then waits for the ones
    /// still running.
    public func run(in group: inout DiscardingTaskGroup) async {
        for await job in stream { group.addTask { await job() } }
    }

    /// No more jobs: `run` returns once it has handed over what was offered before.
    public func finish() { continuation.finish() }
}
