import JobQueue
import Synchronization
import Testing

/// Work handed to a service's task group: everything offered before the group finishes runs before the
/// group returns; what is offered after is refused, so its caller answers for it.
@Suite struct JobQueueTests {
    @Test func jobsOfferedBeforeTheEndRunAndLaterOnesAreRefused() async {
        let queue = JobQueue()
        let ran = Atomic<Int>(0)
        for _ in 0..<100 { #expect(queue.offer { ran.add(1, ordering: .relaxed) }) }
        await withDiscardingTaskGroup { group in
            // The group's service stops taking jobs (its shutdown), after these were offered.
            queue.finish()
            await queue.run(in: &group)
        }
        #expect(ran.load(ordering: .relaxed) == 100, "every job offered before the end ran")
        #expect(!queue.offer { ran.add(1, ordering: .relaxed) }, "a job offered after the end is refused")
        #expect(ran.load(ordering: .relaxed) == 100)
    }
}
