import Testing

/// Waits until `condition` holds — a real socket's, server's, process's or browser's effect — polling
/// every `every`, for at most `seconds`; on timeout the test records what it waited for and goes on (so
/// that its cleanup — fleets, agents, gateways, event loops — still runs; the expectations after it
/// fail with their own messages). The one place tests wait on the wall clock, always for a condition,
/// never for a time.
public func eventually(
    _ what: String, seconds: Int = 30, every: Duration = .milliseconds(50), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting: \(what)")
            return
        }
        try await Task.sleep(for: every)  // clock-ok: polling a condition, bounded
    }
}
