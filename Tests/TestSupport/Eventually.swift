import Testing

/// Waits until `condition` holds — a real socket's, server's, process's or browser's effect — polling
/// every `every`, for at most `seconds`; on timeout the test records what it waited for and goes on (so
/// that its cleanup — fleets, agents, gateways, event loops — still runs; the expectations after it
/// fail with their own messages). The one place tests wait on the wall clock, always for a condition,
/// never for a time.
///
/// `state`, when given, is read on timeout and recorded with it: what the test can see of the system it
/// waited on (counters, a writer's figures), so that a failure in CI says where things stood.
public func eventually(
    _ what: String, seconds: Int = 30, every: Duration = .milliseconds(50), state: (() -> String)? = nil,
    _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            let seen = state.map { " — \($0())" } ?? ""
            Issue.record("timed out waiting: \(what)\(seen)")
            return
        }
        try await Task.sleep(for: every)  // clock-ok: polling a condition, bounded
    }
}
