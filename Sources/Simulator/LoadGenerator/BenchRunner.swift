import Foundation
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import ProviderAuth
import ProviderClient
import PushModel
import Synchronization

/// Where and how to run a load test.
public struct BenchOptions: Sendable {
    /// The provider API: one address, or a fleet's nodes — connection i goes to address i modulo their
    /// count, so the connections spread evenly over the nodes.
    public var addresses: [(host: String, port: Int)]
    public var host: String { addresses[0].host }
    public var port: Int { addresses[0].port }
    public var tls: Bool
    /// PEM files to trust (empty: no verification, for development certificates).
    public var trustRoots: [String] = []
    public var scenario: Scenario
    public var targets: [PushTarget]
    /// Signs the provider tokens (nil: no `authorization` header, e.g. certificate auth or a test server).
    public var signer: ProviderTokenSigner?
    /// A new provider token this often (APNs: no more than once every 20 minutes, none older than an hour).
    public var tokenRefreshSeconds: Int = 50 * 60
    /// After the last request is due, how long to wait for answers before counting them as failed.
    public var drainSeconds: Double = 10
    public var seed: UInt64 = UInt64.random(in: 0...UInt64.max)

    public init(host: String, port: Int, tls: Bool, scenario: Scenario, targets: [PushTarget]) {
        self.init(addresses: [(host, port)], tls: tls, scenario: scenario, targets: targets)
    }

    /// `addresses`: at least one.
    public init(addresses: [(host: String, port: Int)], tls: Bool, scenario: Scenario, targets: [PushTarget]) {
        precondition(!addresses.isEmpty, "a load test needs an address")
        self.addresses = addresses
        self.tls = tls
        self.scenario = scenario
        self.targets = targets
    }
}

/// A moment of a running test, for live progress.
public struct BenchProgress: Sendable {
    public var elapsedSeconds: Double
    public var plannedSeconds: Double
    public var sent: Int
    public var accepted: Int
    public var rejected: Int
    public var failed: Int
    /// The last whole second's figures.
    public var lastSecond: BenchRecorder.Second?

    public var line: String {
        let rate = lastSecond.map { "\($0.accepted + $0.rejected)/s" } ?? "-"
        let p99 = lastSecond.map { String(format: "%.2f ms", $0.p99Milliseconds) } ?? "-"
        let remaining = max(0, plannedSeconds - elapsedSeconds)
        return String(
            format: "%5.0fs elapsed, %4.0fs left  sent %d  accepted %d  rejected %d  failed %d  %@  p99 %@",
            elapsedSeconds, remaining, sent, accepted, rejected, failed, rate, p99)
    }
}

public enum BenchRunError: Error, CustomStringConvertible {
    case cannotConnect(String)
    case invalid(String)

    public var description: String {
        switch self {
        case .cannotConnect(let message): return message
        case .invalid(let message): return message
        }
    }
}

/// Runs a load test: opens the connections, drives them through the plan, refreshes the provider
/// token, reports progress each second, and returns what the recorder measured.
public enum BenchRunner {
    public static func run(
        _ options: BenchOptions, group: any EventLoopGroup,
        progress: (@Sendable (BenchProgress) -> Void)? = nil
    ) async throws -> BenchResult {
        if let problem = options.scenario.problem() { throw BenchRunError.invalid("scenario: \(problem)") }
        guard !options.targets.isEmpty else { throw BenchRunError.invalid("no device tokens to push to") }
        if let problem = TargetPool(options.targets).problem(mix: options.scenario.mix) {
            throw BenchRunError.invalid(problem)
        }
        let scenario = options.scenario
        let schedule = scenario.schedule
        let durationNanoseconds = Int64(scenario.effectiveDuration * 1e9)
        let plan = RunPlan(
            schedule: schedule, limit: min(scenario.count ?? Int.max, schedule?.count ?? Int.max),
            durationNanoseconds: durationNanoseconds, connections: scenario.effectiveConnections,
            streams: scenario.effectiveStreams)
        let authorization = AuthorizationSource(
            try options.signer.map { "bearer " + (try $0.token(issuedAt: wallClock())) })
        let sslContext = try options.tls ? ProviderClient.tlsContext(trustRoots: options.trustRoots, alpn: ["h2"]) : nil
        let startedAt = Date()
        let shared = RunShared(
            plan: plan, mix: TrafficMix(scenario.mix), targets: options.targets,
            authority: "\(options.host):\(options.port)", authorization: authorization,
            start: .now() + .milliseconds(50), wallClock: wallClock)
        let channels = OpenChannels()

        // Fail early and clearly when nothing listens there.
        for (host, port) in options.addresses {
            do {
                let probe = try await ClientBootstrap(group: group).connect(host: host, port: port).get()
                try? await probe.close()
            } catch {
                throw BenchRunError.cannotConnect("cannot connect to \(host):\(port): \(error)")
            }
        }

        let plannedSeconds =
            schedule.map { min($0.seconds, Double(plan.limit) / max(1, $0.stages[0].fromRate)) }
            ?? scenario.effectiveDuration
        return try await withThrowingTaskGroup(of: Void.self) { helpers in
            // Provider token refresh and progress, until the connections are done.
            helpers.addTask {
                var sinceRefresh = 0
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(1))
                    sinceRefresh += 1
                    if let signer = options.signer, sinceRefresh >= options.tokenRefreshSeconds {
                        authorization.replace("bearer " + (try signer.token(issuedAt: wallClock())))
                        sinceRefresh = 0
                    }
                    if let progress {
                        let elapsed = Double(shared.nanoseconds(.now())) / 1e9
                        progress(
                            shared.recorder.withLock {
                                BenchProgress(
                                    elapsedSeconds: elapsed, plannedSeconds: plannedSeconds, sent: $0.sent,
                                    accepted: $0.accepted, rejected: $0.answered - $0.accepted, failed: $0.failures,
                                    lastSecond: $0.seconds.last)
                            })
                    }
                }
            }
            // The hard stop: the plan's time and the drain, then whatever is still open is closed.
            helpers.addTask {
                try await Task.sleep(for: .seconds(plannedSeconds + options.drainSeconds + 0.05))
                channels.closeAll()
            }
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for slot in 0..<plan.connections {
                    let loop = group.next()
                    let cursor = ConnectionCursor(slot: slot, seed: options.seed)
                    tasks.addTask {
                        try await drive(
                            slot: cursor, address: options.addresses[slot % options.addresses.count], loop: loop,
                            shared: shared, options: options, sslContext: sslContext, channels: channels)
                    }
                }
                try await tasks.waitForAll()
            }
            // The connections are done: the helpers end (their sleeps are cancelled).
            helpers.cancelAll()
            let end = shared.nanoseconds(.now())
            let recorder = shared.recorder.withLock { recorder in
                recorder.finish(at: end)
                return recorder
            }
            return BenchResult(
                recorder: recorder, mix: scenario.mix, scenario: scenario,
                target: options.addresses.map { "\(options.tls ? "https" : "http")://\($0.host):\($0.port)" }
                    .joined(separator: ","), startedAt: startedAt,
                seconds: Double(end) / 1e9)
        }
    }

    /// One connection slot: connects, runs until its part of the plan is done, reconnects after a
    /// connection loss while there is more to send.
    private static func drive(
        slot cursor: ConnectionCursor, address: (host: String, port: Int), loop: any EventLoop, shared: RunShared,
        options: BenchOptions,
        sslContext: NIOSSLContext?, channels: OpenChannels
    ) async throws {
        var attempts = 0
        while true {
            let finished = loop.makePromise(of: Void.self)
            do {
                // Frames straight to one handler per connection (no stream channels): the client must
                // outrun the gateway it measures.
                let channel = try await ProviderClient.bootstrap(group: loop, tls: sslContext, serverName: nil) {
                    channel in
                    let sync = channel.pipeline.syncOperations
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.headerBlockValidation = .disabled
                    try sync.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: configuration))
                    try sync.addHandler(BenchConnectionHandler(shared: shared, cursor: cursor, finished: finished))
                }
                .connect(host: address.host, port: address.port).get()
                channels.add(channel)
                attempts = 0
            } catch {
                finished.fail(error)
                attempts += 1
                if attempts >= 5 {
                    throw BenchRunError.cannotConnect("cannot reconnect to \(address.host):\(address.port): \(error)")
                }
            }
            try? await finished.futureResult.get()
            let done = try await loop.submit {
                shared.plan.isDone(next: cursor.next, elapsed: shared.nanoseconds(.now()))
            }.get()
            let pastEnd =
                shared.nanoseconds(.now()) > Int64((options.scenario.effectiveDuration + options.drainSeconds) * 1e9)
            if done || pastEnd { return }
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// The run's connections, to close at the hard stop.
final class OpenChannels: Sendable {
    private let channels = Mutex<[any Channel]>([])
    func add(_ channel: any Channel) { channels.withLock { $0.append(channel) } }
    func closeAll() { for channel in channels.withLock({ $0 }) { channel.close(promise: nil) } }
}

/// The system's wall clock, for provider tokens' `iat` and `apns-expiration` values.
@Sendable func wallClock() -> UnixTime {
    var spec = timespec()
    clock_gettime(CLOCK_REALTIME, &spec)
    return UnixTime(milliseconds: Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000)
}
