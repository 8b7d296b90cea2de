import PushModel
import Synchronization

/// A simulated app's behaviour, as the YAML files in Config/profiles describe it.
public struct AgentProfile: Codable, Sendable, Equatable {
    public var work_ms_min: Int64 = 50
    public var work_ms_max: Int64 = 2000
    public var new_data_fraction: Double = 0.5
    public var failed_fraction: Double = 0.05
    public var never_fraction: Double = 0.01
    public var keep_alive_jitter: Double = 0.1
    public var force_quit_per_hour: Double = 0.1
    public var reopen_after_seconds: Int64 = 600
    public var low_power_per_hour: Double = 0.05
    public var low_power_seconds: Int64 = 1800
    public var fetch_url: String = ""
    public var fetch_timeout_ms: Int64 = 5000
    /// Live Activity attributes types every app of the device can be started with by a push: the device
    /// asks for a push-to-start token of each (docs/device-protocol.md).
    public var live_activity_types: [String] = []
    /// Every app has `NSSupportsLiveActivitiesFrequentUpdates` (and its person leaves it on): the larger
    /// update budget (`policy.live_activity.frequent_budget.*`).
    public var frequent_pushes = false

    public init() {}

    enum CodingKeys: String, CodingKey, CaseIterable {
        case work_ms_min, work_ms_max, new_data_fraction, failed_fraction, never_fraction, keep_alive_jitter
        case force_quit_per_hour, reopen_after_seconds, low_power_per_hour, low_power_seconds, fetch_url,
            fetch_timeout_ms, live_activity_types, frequent_pushes
    }

    /// Every key is optional (its default applies); an unknown key is an error that names it.
    public init(from decoder: any Decoder) throws {
        try rejectUnknownKeys(decoder, known: CodingKeys.self)
        let values = try decoder.container(keyedBy: CodingKeys.self)
        func read<T: Decodable>(_ key: CodingKeys, _ fallback: T) throws -> T {
            try values.decodeIfPresent(T.self, forKey: key) ?? fallback
        }
        let defaults = AgentProfile()
        work_ms_min = try read(.work_ms_min, defaults.work_ms_min)
        work_ms_max = try read(.work_ms_max, defaults.work_ms_max)
        new_data_fraction = try read(.new_data_fraction, defaults.new_data_fraction)
        failed_fraction = try read(.failed_fraction, defaults.failed_fraction)
        never_fraction = try read(.never_fraction, defaults.never_fraction)
        keep_alive_jitter = try read(.keep_alive_jitter, defaults.keep_alive_jitter)
        force_quit_per_hour = try read(.force_quit_per_hour, defaults.force_quit_per_hour)
        reopen_after_seconds = try read(.reopen_after_seconds, defaults.reopen_after_seconds)
        low_power_per_hour = try read(.low_power_per_hour, defaults.low_power_per_hour)
        low_power_seconds = try read(.low_power_seconds, defaults.low_power_seconds)
        fetch_url = try read(.fetch_url, defaults.fetch_url)
        fetch_timeout_ms = try read(.fetch_timeout_ms, defaults.fetch_timeout_ms)
        live_activity_types = try read(.live_activity_types, defaults.live_activity_types)
        frequent_pushes = try read(.frequent_pushes, defaults.frequent_pushes)
    }

    /// What is wrong with the profile, naming the key; nil when it is valid.
    public func problem() -> String? {
        if work_ms_min < 0 || work_ms_max < work_ms_min { return "work_ms_min/work_ms_max: need 0 <= min <= max" }
        for (key, value) in [
            ("new_data_fraction", new_data_fraction), ("failed_fraction", failed_fraction),
            ("never_fraction", never_fraction),
            ("keep_alive_jitter", keep_alive_jitter),
        ] where !(0...1).contains(value) {
            return "\(key): must be between 0 and 1, got \(value)"
        }
        if failed_fraction + never_fraction > 1 { return "failed_fraction + never_fraction: must not exceed 1" }
        if force_quit_per_hour < 0 || low_power_per_hour < 0 {
            return "force_quit_per_hour/low_power_per_hour: must not be negative"
        }
        if !fetch_url.isEmpty, !WakeFetch.isValid(fetch_url) {
            return "fetch_url: expected http://host:port/path, got '\(fetch_url)'"
        }
        if let bad = live_activity_types.first(where: { $0.isEmpty || $0.contains(where: \.isWhitespace) }) {
            return "live_activity_types: an attributes type is a name without spaces, got '\(bad)'"
        }
        return nil
    }

    /// The wake behaviour this profile describes, its chances drawn from `seed` (the same seed, the same
    /// answers to the same wakes); each of `apps` has the profile's Live Activity types.
    public func behaviour(seed: UInt64, apps: [String] = []) -> AgentBehaviour {
        let profile = self
        let url = fetch_url.isEmpty ? nil : fetch_url
        let random = Mutex(FastRandom(seed: seed ^ 0xA6E7_0BE4))
        let types =
            live_activity_types.isEmpty ? [:] : Dictionary(uniqueKeysWithValues: apps.map { ($0, live_activity_types) })
        return AgentBehaviour(
            keepAliveJitter: keep_alive_jitter, liveActivityTypes: types,
            frequentPushes: frequent_pushes ? Set(apps) : []
        ) { _ in
            random.withLock { random in
                let roll = Double.random(in: 0..<1, using: &random)
                if roll < profile.never_fraction { return .never }
                if let url { return .fetch(url: url, timeoutMilliseconds: profile.fetch_timeout_ms) }
                let work = Int64.random(in: profile.work_ms_min...profile.work_ms_max, using: &random)
                if roll < profile.never_fraction + profile.failed_fraction {
                    return .complete(result: .failed, afterMilliseconds: work)
                }
                let newData = Double.random(in: 0..<1, using: &random) < profile.new_data_fraction
                return .complete(result: newData ? .newData : .noData, afterMilliseconds: work)
            }
        }
    }
}
