import PushModel

/// R6: when the system fetches an app in the background. It learns from the app's recent results
/// (newData is fetched again sooner than noData, failed later still) and from the user's launch pattern
/// (a fetch is moved to just before the time of day the user usually opens the app).
public struct FetchSchedule: Sendable, Equatable {
    public internal(set) var lastFetchAt: UnixTime?
    public internal(set) var nextFetchAt: UnixTime?
    /// What set `nextFetchAt`: the interval (with the back-off of the recent results), or the user's
    /// launch habit (a fetch just before a habitual open).
    public internal(set) var plannedBy = Planner.interval

    public enum Planner: String, Sendable, Equatable {
        case interval
        case launchHabit = "launch_habit"
    }
    /// The last results, newest last (at most 3).
    var results: [CompletionResult] = []
    /// Milliseconds into the day of the user's recent opens (at most 20).
    var launchTimesOfDay: [Int64] = []

    static let day: Int64 = 86_400_000
    /// How long before a predicted open the system fetches.
    static let leadMilliseconds: Int64 = 10 * 60_000

    mutating func recordLaunch(at now: UnixTime) {
        launchTimesOfDay.append(now.milliseconds % Self.day)
        if launchTimesOfDay.count > 20 { launchTimesOfDay.removeFirst() }
    }

    mutating func recordFetch(at now: UnixTime, result: CompletionResult) {
        lastFetchAt = now
        results.append(result)
        if results.count > 3 { results.removeFirst() }
    }

    /// How much longer than the base interval the system waits, from the recent results: 1 after
    /// newData, 2 after noData, 4 after failed, averaged over the last three.
    var backoff: Double {
        guard !results.isEmpty else { return 1 }
        var sum = 0.0
        for result in results {
            switch result {
            case .newData: sum += 1
            case .noData: sum += 2
            case .failed: sum += 4
            }
        }
        return sum / Double(results.count)
    }

    /// The next fetch after `now` for an app whose interval is `interval`, on `profile`; nil for `never`.
    mutating func schedule(after now: UnixTime, interval: AppBehaviour.FetchInterval, profile: IOSProfile) {
        let base: Int64
        switch interval {
        case .never:
            nextFetchAt = nil
            return
        case .minimum: base = profile.minimumFetchIntervalSeconds * 1000
        case .custom(let seconds): base = max(seconds, profile.minimumFetchIntervalSeconds) * 1000
        }
        let spacing = Int64(Double(base) * backoff)
        let candidate = max(now, lastFetchAt ?? now).adding(milliseconds: spacing)
        nextFetchAt = candidate
        plannedBy = .interval
        // With a launch habit (three opens or more), land a fetch just before the next habitual open
        // when that is no later than one more spacing away.
        guard launchTimesOfDay.count >= 3 else { return }
        let candidateOfDay = candidate.milliseconds % Self.day
        let dayStart = candidate.milliseconds - candidateOfDay
        let upcoming = launchTimesOfDay.map { time -> Int64 in
            let fetchTime = time - Self.leadMilliseconds
            return fetchTime >= candidateOfDay ? dayStart + fetchTime : dayStart + Self.day + fetchTime
        }.min()!
        if upcoming <= candidate.milliseconds + spacing {
            nextFetchAt = UnixTime(milliseconds: upcoming)
            plannedBy = .launchHabit
        }
    }
}
