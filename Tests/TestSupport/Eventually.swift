import Testing

/// A wait that timed out (`eventually`): the test has recorded it.
public struct TimedOut: Error, CustomStringConvertible {
    public let what: String
    public var description: String { "timed out waiting: \(what)" }
}

/// Waits until `condition` holds — a real socket's, server's, process's or browser's effect — polling
/// every `every`, for at most `seconds`; on timeout the test records what it waited for and the wait
/// throws. The one place tests wait on the wall clock, always for a condition, never for a time.
public func eventually(
    _ what: String, seconds: Int = 30, every: Duration = .milliseconds(10), _ condition: () async throws -> Bool
) async throws {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting: \(what)")
            throw TimedOut(what: what)
        }
        try await Task.sleep(for: every)  // clock-ok: polling a condition, bounded
    }
}
