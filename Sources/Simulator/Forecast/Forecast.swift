import DeviceRuntime
import PushModel
import PushPolicy
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Runs a scenario in virtual time: the fleet in shards (`ForecastShard`, at most `shardSize` devices
/// each), as many at once as `threads`, each shard made when a thread takes it and dropped once its
/// figures are added, so memory follows the threads, not the fleet. The shards are the same whatever
/// the threads, and their figures add up in shard order: one thread or several, the same result.
public enum Forecast {
    /// Devices per shard.
    public static let shardSize = 2_048

    /// `progress` hears the share done (0…1) now and then, from any thread.
    public static func run(
        _ scenario: ForecastScenario, threads: Int = 1, shardSize: Int = Forecast.shardSize,
        progress: @escaping @Sendable (Double) -> Void = { _ in }
    ) async -> ForecastResult {
        let started = monotonicNanoseconds()
        let devices = scenario.devices
        let ranges = stride(from: 0, to: devices, by: max(1, shardSize)).map {
            $0..<min(devices, $0 + max(1, shardSize))
        }
        let next = Counter()
        let done = Counter()
        let span = max(1, scenario.end.milliseconds - scenario.start.milliseconds)
        let parts = await withTaskGroup(of: [(Int, ShardFigures)].self) { group in
            for _ in 0..<max(1, min(threads, ranges.count)) {
                group.addTask {
                    var mine: [(Int, ShardFigures)] = []
                    while true {
                        let index = next.value.wrappingAdd(1, ordering: .relaxed).oldValue
                        guard index < ranges.count else { break }
                        let shard = ForecastShard(scenario: scenario, range: ranges[index])
                        let weight = ranges[index].count
                        var reported = 0
                        shard.run { at in
                            // Device-milliseconds done, as a share of the whole fleet's.
                            let share = Int(
                                Double(weight) * Double(at - scenario.start.milliseconds) / Double(span) * 1000)
                            let total = done.value.wrappingAdd(share - reported, ordering: .relaxed).newValue
                            reported = share
                            progress(Double(total) / Double(max(1, devices) * 1000))
                        }
                        mine.append((index, ShardFigures(shard)))
                    }
                    return mine
                }
            }
            var all: [(Int, ShardFigures)] = []
            for await part in group { all += part }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
        var ledger = scenario.ledger()
        for kind in scenario.kinds { _ = ledger.profileIndex(kind.name) }
        var costs = Array(repeating: ForecastShard.KindCosts(), count: scenario.kinds.count)
        var events = 0
        var trace: [ForecastShard.TraceLine] = []
        var hourlyPushes: [Int] = []
        var hourlyWakes: [Int] = []
        for part in parts {
            hourlyPushes = hourlyPushes.isEmpty ? part.hourlyPushes : zip(hourlyPushes, part.hourlyPushes).map(+)
            hourlyWakes = hourlyWakes.isEmpty ? part.hourlyWakes : zip(hourlyWakes, part.hourlyWakes).map(+)
            ledger.merge(part.ledger)
            for index in costs.indices { costs[index].add(part.costs[index]) }
            events += part.events
            trace += part.trace
        }
        trace.sort { ($0.time, $0.device, $0.order) < ($1.time, $1.device, $1.order) }
        let seconds = Double(monotonicNanoseconds() - started) / 1e9
        return ForecastResult(
            scenario: scenario, ledger: ledger, costs: costs, hourlyPushes: hourlyPushes, hourlyWakes: hourlyWakes,
            events: events, seconds: seconds, threads: threads, trace: trace.map(\.line))
    }

    /// An atomic count the shards' threads share.
    final class Counter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// What a finished shard leaves behind (the shard itself is dropped).
    struct ShardFigures: Sendable {
        var ledger: FreshnessLedger
        var costs: [ForecastShard.KindCosts]
        var events: Int
        var trace: [ForecastShard.TraceLine]
        var hourlyPushes: [Int]
        var hourlyWakes: [Int]

        init(_ shard: ForecastShard) {
            hourlyPushes = shard.hourlyPushes
            hourlyWakes = shard.hourlyWakes
            ledger = shard.ledger
            costs = shard.costs
            events = shard.events
            trace = shard.trace
        }
    }

    static func monotonicNanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)  // clock-ok: the run's own duration, for the report
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}
