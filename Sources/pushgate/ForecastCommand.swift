import IPhoneFleet
import ArgumentParser
import DeviceHub
import DeviceRuntime
import Forecast
import Foundation
import Gateway
import LoadGenerator
import PushModel
import Synchronization

struct ForecastCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forecast",
        abstract:
            "Forecast a day (or any span) of a fleet of iPhones in virtual time: how fresh content is at every open, and what it costs.",
        discussion: """
            The same simulated iPhones as `pushgate simulate` (Config/iphone, --iphones) and the gateway's own \
            policy (policy.* from --config and --set, as `pushgate serve` reads them) run on one virtual clock, \
            without sockets: a day of 100,000 iPhones in seconds. Versions are published every --publish-every \
            seconds and announced with each app's pushes. --compare runs what-ifs side by side on the same fleet \
            and seed; --search runs every combination of the values given and prints the Pareto front of \
            freshness against cost. The same seed gives the same result, on one thread or several. \
            docs/forecast.md says what it models and how it was checked against a real run.
            """)

    @Option(parsing: .unconditional, help: "How many iPhones.")
    var devices = 1000

    @Option(
        help: ArgumentHelp(
            "Kinds of iPhone and their weights: names in Config/iphone (news, chat, podcast, misbehaving, sports) or YAML files.",
            valueName: "name=weight,…"))
    var iphones = IPhoneMix.defaultFlag

    @Option(parsing: .unconditional, help: "Hours of virtual time.")
    var hours: Double = 24

    @Option(
        parsing: .unconditional, help: "Hour of the day (UTC) the forecast starts at (users' habits are times of day).")
    var startHour: Double = 0

    @Option(
        help: ArgumentHelp(
            "The instant the forecast starts at, in milliseconds since 1970 (instead of --start-hour on a fixed day): to forecast the span of a real run, from its first publication (Benchmarks/forecast-validate.sh).",
            valueName: "ms"))
    var startMs: Int64?

    @Option(
        parsing: .unconditional,
        help:
            "Publish a new version every this many seconds (each announced as its apps' backends do); 0: one at the start."
    )
    var publishEvery: Double = 600

    @Option(
        parsing: .unconditional,
        help:
            "Seconds the backends take to send each publication's pushes: they reach the gateway spread evenly over this span, device by device; 0: all at once."
    )
    var announceSeconds: Double = 0

    @Option(
        help: ArgumentHelp(
            "Publish only between these hours of the day, UTC (e.g. 6-23; 22-6 wraps past midnight); default: round the clock.",
            valueName: "from-to"))
    var publishHours: String?

    @Option(parsing: .unconditional, help: "Extra app opens per device per hour, added to every profile's users.")
    var opensPerHour: Double = 0

    @Option(parsing: .unconditional, help: "An item's size in bytes, when the app names none.")
    var itemBytes = 200_000

    @Option(
        parsing: .unconditional,
        help: "Bytes per second a device's transfer gets (background sessions get less); 0: latency only.")
    var linkBytesPerSecond = 1_000_000

    @Option(
        parsing: .unconditional,
        help: "Milliseconds from a request to its first byte (the median, with --latency-p90-ms).")
    var latencyMs: Int64 = 100

    @Option(
        parsing: .unconditional,
        help:
            "The latency's 90th percentile in milliseconds: transfers' latencies spread log-normally between --latency-ms and it (default: every one --latency-ms)."
    )
    var latencyP90Ms: Int64?

    @Option(help: "Seed of the devices' runtimes, users and keep-alives (device i gets seed + i).")
    var seed: UInt64 = 1

    @Option(parsing: .unconditional, help: "Threads to run on (default: one per core).")
    var threads = ProcessInfo.processInfo.activeProcessorCount

    @OptionGroup var config: ConfigOptions

    @Option(
        name: .customLong("compare"),
        help: ArgumentHelp(
            "A what-if to run beside the configured fleet: 'name: key=value, …' with policy.* keys, app.<bundle id>.announce|fetch|background_download|item_bytes, publish_every; repeatable.",
            valueName: "variant"))
    var variants: [String] = []

    @Option(
        name: .customLong("search"),
        help: ArgumentHelp(
            "A dimension to search: key=value1,value2,… (keys as for --compare); repeatable. Every combination runs (or --sample of them) and the Pareto front of freshness against cost is printed.",
            valueName: "key=values"))
    var dimensions: [String] = []

    @Option(help: "With --search: run this many combinations, chosen by the seed, instead of all.")
    var sample: Int?

    @Option(
        name: .customLong("assume"),
        help: ArgumentHelp(
            "A number Apple does not publish, and the values to try: key=value1,value2,… (policy.* keys, as for --compare); repeatable. Every variant runs under every combination, and the variant with the best worst case and the best average is named, with where the recommendation changes.",
            valueName: "key=values"))
    var assumptions: [String] = []

    @Option(
        help: ArgumentHelp(
            "Whose freshness ranks the variants: all (the fleet), or kinds of iPhone by name (news,chat). Default: the kinds whose apps the variants change, else all.",
            valueName: "all|kind,…"))
    var objective: String?

    @Option(help: "Write every event of this many devices (chosen by the seed) as JSON lines to --trace-file.")
    var trace = 0

    @Option(name: .customLong("trace-device"), help: "Trace this device (its index in the fleet); repeatable.")
    var traceDevices: [Int] = []

    @Option(help: "Where --trace writes.")
    var traceFile = "forecast-trace.jsonl"

    @Option(help: "Write the figures as JSON here.")
    var json: String?

    @Option(help: "Write an HTML report here: freshness and cost over the simulated day.")
    var html: String?

    /// The day a forecast starts on: a fixed Monday, so a report's times mean the same on any day.
    static let epochDay: Int64 = 1_767_571_200_000  // 2026-01-05T00:00:00Z

    func validate() throws {
        guard devices > 0 else { throw ValidationError("--devices: at least 1") }
        guard hours > 0, hours <= 24 * 31 else {
            throw ValidationError("--hours: from more than 0 to 744, got \(hours)")
        }
        guard (0..<24).contains(startHour) else {
            throw ValidationError("--start-hour: from 0 to 24, got \(startHour)")
        }
        if let startMs, startMs < 0 { throw ValidationError("--start-ms: milliseconds since 1970, got \(startMs)") }
        guard publishEvery >= 0 else { throw ValidationError("--publish-every: must not be negative") }
        guard announceSeconds >= 0, announceSeconds <= 86_400 else {
            throw ValidationError("--announce-seconds: from 0 to 86400, got \(announceSeconds)")
        }
        guard opensPerHour >= 0 else { throw ValidationError("--opens-per-hour: must not be negative") }
        guard itemBytes >= 1 else { throw ValidationError("--item-bytes: at least 1") }
        guard linkBytesPerSecond >= 0 else { throw ValidationError("--link-bytes-per-second: must not be negative") }
        guard latencyMs >= 0 else { throw ValidationError("--latency-ms: must not be negative") }
        if let latencyP90Ms, latencyP90Ms < latencyMs {
            throw ValidationError("--latency-p90-ms: at least --latency-ms (\(latencyMs)), got \(latencyP90Ms)")
        }
        guard threads >= 1 else { throw ValidationError("--threads: at least 1") }
        guard trace >= 0 else { throw ValidationError("--trace: must not be negative") }
        if let bad = traceDevices.first(where: { !(0..<devices).contains($0) }) {
            throw ValidationError("--trace-device \(bad): devices are numbered 0 to \(devices - 1)")
        }
        if let sample, sample < 1 { throw ValidationError("--sample: at least 1") }
        if sample != nil, dimensions.isEmpty { throw ValidationError("--sample goes with --search") }
        if let bad = assumptions.first(where: { !$0.hasPrefix("policy.") }) {
            throw ValidationError(
                "--assume '\(bad)': an assumption is a policy.* key (a number Apple does not publish), e.g. policy.budget.capacity=2,3,5"
            )
        }
        _ = try publicationHours()
    }

    func publicationHours() throws -> (start: Double, end: Double)? {
        guard let publishHours else { return nil }
        let parts = publishHours.split(separator: "-").map { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 2, let from = parts[0], let to = parts[1], (0...24).contains(from), (0...24).contains(to),
            from != to
        else {
            throw ValidationError(
                "--publish-hours: expected from-to in hours of the day (e.g. 6-23), got '\(publishHours)'")
        }
        return (from, to)
    }

    /// The configured scenario (before any variant).
    func scenario() throws -> ForecastScenario {
        let mix = try failing { try IPhoneMix(flag: iphones) }
        let counts = try failing { try mix.counts(devices: devices, opensPerHour: opensPerHour) }
        let configuration = try failing { try config.load() }
        let publications = PublicationSchedule(everySeconds: publishEvery, hours: try publicationHours())
        var scenario = ForecastScenario(
            kinds: counts.map { ForecastScenario.Kind(name: $0.name, profile: $0.profile, devices: $0.devices) },
            start: UnixTime(milliseconds: startMs ?? Self.epochDay + Int64(startHour * 3_600_000)), hours: hours,
            publications: publications, policy: configuration.policy,
            keepAliveSeconds: configuration.hub.keepAliveSeconds,
            link: LinkModel(
                bytesPerSecond: linkBytesPerSecond, latencyMilliseconds: latencyMs, latencyP90Milliseconds: latencyP90Ms
            ), itemBytes: itemBytes,
            seed: seed)
        scenario.traced = tracedDevices()
        scenario.announcementSeconds = announceSeconds
        return scenario
    }

    /// `--trace-device`s, and `--trace` devices chosen by the seed.
    func tracedDevices() -> Set<Int> {
        var chosen = Set(traceDevices)
        var random = FastRandom(seed: seed ^ 0x7472_6163_65)
        while chosen.count < min(devices, traceDevices.count + trace) {
            chosen.insert(Int(random.next() % UInt64(devices)))
        }
        return chosen
    }

    func run() async throws {
        let base = try scenario()
        // The policy and keep-alive the configuration gives with a variant's gateway keys (as with --set).
        let gatewaySettings: ForecastVariant.GatewaySettings = { [config] settings in
            var options = config
            options.overrides += settings
            let configuration = try options.load()
            return (configuration.policy, configuration.hub.keepAliveSeconds)
        }
        var variants = [ForecastVariant(name: "as configured", overrides: [])]
        let assumed: [ForecastVariant]
        let objective: ForecastObjective
        let grid: [[ForecastScenario]]
        do {
            variants += try self.variants.map { flag throws(ForecastVariantError) in
                try ForecastVariant(flag: flag, option: "--compare")
            }
            if !dimensions.isEmpty { variants += try ForecastVariant.search(dimensions, sample: sample, seed: seed) }
            assumed =
                assumptions.isEmpty
                ? [ForecastVariant(name: "as configured", overrides: [])]
                : try ForecastVariant.search(assumptions, sample: nil, seed: seed, option: "--assume")
            objective = try ForecastObjective.ranking(self.objective, of: variants, in: base)
            // Every variant under every assumption, made (and checked) before any runs.
            let option = assumptions.isEmpty ? "--compare" : "--assume"
            grid = try variants.map { variant throws(ForecastVariantError) in
                try assumed.map { assumption throws(ForecastVariantError) in
                    try ForecastVariant(name: variant.name, overrides: variant.overrides + assumption.overrides)
                        .apply(to: base, option: option, gatewaySettings: gatewaySettings)
                }
            }
        } catch {
            throw ValidationError(error.description)
        }
        let names = variants.flatMap { variant in
            assumed.map { assumed.count > 1 ? "\(variant.name) | \($0.name)" : variant.name }
        }
        let flat = await Self.runAll(grid.flatMap { $0 }, names: names, threads: threads)
        let runs = stride(from: 0, to: flat.count, by: assumed.count).map { Array(flat[$0..<($0 + assumed.count)]) }
        // The tables show the first assumption; the assumptions' own table follows them.
        let results = runs.map { $0[0] }
        print(results[0].summary)
        if !base.traced.isEmpty {
            // One JSON object a line, its keys sorted: the same seed writes the same bytes.
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            let lines = try results[0].trace.map { String(decoding: try encoder.encode($0), as: UTF8.self) }
            try (lines.joined(separator: "\n") + "\n").write(toFile: traceFile, atomically: true, encoding: .utf8)
            print(
                "trace of \(base.traced.count) device\(base.traced.count == 1 ? "" : "s") (\(base.traced.sorted().map(String.init).joined(separator: ", "))) written to \(traceFile)"
            )
        }
        var front: [Int] = []
        if results.count > 1 {
            front = ParetoFront.indices(results.map { (objective.freshness($0), objective.cost($0)) })
            print()
            if assumed.count > 1 { print("The variants under the first assumption (\(assumed[0].name)):") }
            print(
                ForecastComparison.table(
                    variants.map(\.name), results, front: dimensions.isEmpty ? nil : front, objective: objective))
        }
        var robust: RobustChoice?
        if assumed.count > 1 {
            let choice = RobustChoice(
                freshness: runs.map { $0.map(objective.freshness) }, cost: runs.map { $0.map(objective.cost) })
            robust = choice
            print()
            print(
                choice.text(
                    strategies: variants.map(\.name), assumptions: assumed.map(\.name), objective: objective.name))
        }
        if let json {
            var document = ForecastDocument(
                runs: zip(variants, runs).flatMap { variant, row in
                    zip(assumed, row).map { assumption, result in
                        var result = result
                        result.trace = []
                        return .init(
                            name: assumed.count > 1 ? "\(variant.name) | \(assumption.name)" : variant.name,
                            overrides: (variant.overrides + assumption.overrides).map { "\($0.key)=\($0.value)" },
                            result: result)
                    }
                },
                paretoFront: dimensions.isEmpty ? nil : front.map { variants[$0].name }, objective: objective.name)
            if let robust {
                document.assumptions = .init(
                    assumptions: assumed.map(\.name), bestWorstCase: variants[robust.bestWorstCase].name,
                    bestOnAverage: variants[robust.bestOnAverage].name,
                    bestUnder: robust.bestUnder.map { variants[$0].name })
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(document).write(to: URL(fileURLWithPath: json))
            print("figures written to \(json)")
        }
        if let html {
            try ForecastPage.html(
                names: variants.map(\.name), results: results, front: dimensions.isEmpty ? nil : front,
                objective: objective,
                robust: robust.map {
                    $0.text(
                        strategies: variants.map(\.name), assumptions: assumed.map(\.name), objective: objective.name)
                }
            )
            .write(toFile: html, atomically: true, encoding: .utf8)
            print("report written to \(html)")
        }
    }

    /// Several forecasts: `threads` at a time, each on one thread (independent runs keep every core busy,
    /// where one run's shards wait for each other at every step), results in their order; a scenario equal
    /// to an earlier one (today's configuration is often one of a search's variants) runs once, its result
    /// given to both (a forecast depends on its scenario alone). One alone runs on every thread, with its
    /// progress line.
    static func runAll(_ scenarios: [ForecastScenario], names: [String], threads: Int) async -> [ForecastResult] {
        guard scenarios.count > 1 else { return [await run(scenarios[0], threads: threads, label: nil)] }
        var distinct: [Int] = []
        let same = scenarios.indices.map { index in
            if let earlier = distinct.first(where: { scenarios[$0] == scenarios[index] }) { return earlier }
            distinct.append(index)
            return index
        }
        let ran = await runDistinct(distinct.map { scenarios[$0] }, names: distinct.map { names[$0] }, threads: threads)
        return same.map { ran[distinct.firstIndex(of: $0)!] }
    }

    private static func runDistinct(_ scenarios: [ForecastScenario], names: [String], threads: Int) async
        -> [ForecastResult]
    {
        let interactive = isatty(STDOUT_FILENO) != 0
        var results = [ForecastResult?](repeating: nil, count: scenarios.count)
        await withTaskGroup(of: (Int, ForecastResult).self) { group in
            var next = 0
            func start() {
                guard next < scenarios.count else { return }
                let (index, scenario) = (next, scenarios[next])
                group.addTask { (index, await Forecast.run(scenario, threads: 1)) }
                next += 1
            }
            for _ in 0..<min(max(1, threads), scenarios.count) { start() }
            var done = 0
            while let (index, result) = await group.next() {
                results[index] = result
                done += 1
                if interactive {
                    print("\u{1B}[2K\rforecast: \(done) of \(scenarios.count) runs", terminator: "")
                    fflush(nil)
                } else {
                    print(
                        "ran \(names[index]) (\(index + 1) of \(scenarios.count)): \(ForecastComparison.percent(ForecastComparison.fresh(result))) fresh at open, \(ForecastResult.decimal(result.seconds)) s"
                    )
                }
                start()
            }
        }
        if interactive { print("\u{1B}[2K\r", terminator: "") }
        return results.map { $0! }
    }

    /// One forecast, with a progress line on a terminal.
    static func run(_ scenario: ForecastScenario, threads: Int, label: String?) async -> ForecastResult {
        let interactive = isatty(STDOUT_FILENO) != 0
        let shown = Mutex(-1)
        let result = await Forecast.run(scenario, threads: threads) { share in
            guard interactive else { return }
            let percent = Int(share * 100)
            let changed = shown.withLock { last -> Bool in
                guard percent != last else { return false }
                last = percent
                return true
            }
            if changed {
                print("\u{1B}[2K\rforecast\(label.map { " " + $0 } ?? ""): \(percent) %", terminator: "")
                fflush(nil)
            }
        }
        if interactive { print("\u{1B}[2K\r", terminator: "") }
        if let label, !interactive {
            print(
                "ran \(label): \(ForecastComparison.percent(ForecastComparison.fresh(result))) fresh at open, \(ForecastResult.decimal(result.seconds)) s"
            )
        }
        return result
    }
}

/// What `--json` writes: every run with its overrides, and the Pareto front of a search.
struct ForecastDocument: Codable {
    struct Run: Codable {
        var name: String
        var overrides: [String]
        var result: ForecastResult
    }
    /// With `--assume`: the assumptions, and the recommendation across them.
    struct Assumptions: Codable {
        var assumptions: [String]
        var bestWorstCase: String
        var bestOnAverage: String
        /// The best variant under each assumption, in their order.
        var bestUnder: [String]
    }
    var runs: [Run]
    var paretoFront: [String]?
    /// Whose freshness ranked the variants (`all`, or kinds of iPhone).
    var objective: String
    var assumptions: Assumptions?
}
