import IPhoneFleet
import AdminAPI
import ArgumentParser
import Foundation
import Gateway
import LoadGenerator
import NIOCore
import NIOPosix
import ProviderAuth
import PushModel
import Yams

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Load-test an APNs-compatible provider API (Pushgate or any other) with a push mix.",
        discussion: """
            Open loop (--rate, optionally --ramp-to) measures latency from each request's intended send time, \
            so a stalled server shows as latency, not as fewer requests; --rate 0 is closed loop (as fast as \
            --streams allow). With --admin pointing at a Pushgate admin API, the summary adds what the \
            gateway did with the pushes (woken on budget, held, piggybacked, coalesced, deadline misses) and \
            accept-to-device latency.
            """)

    @Option(
        help:
            "Server URL: https://host:port (TLS) or http://host:port (h2c); several, comma-separated (one scheme), spread the connections over a fleet's nodes."
    )
    var url = "http://127.0.0.1:2198"

    @Option(help: "Scenario: a name in Config/scenarios or a YAML file (default: the embedded 'realistic').")
    var scenario: String?

    @Option(help: "Requests per second, open loop (0: closed loop).")
    var rate: Double?

    @Option(help: "Ramp the rate linearly to this by the end.")
    var rampTo: Double?

    @Option(help: "Seconds to run.")
    var duration: Double?

    @Option(help: "Stop after this many requests.")
    var count: Int?

    @Option(help: "HTTP/2 connections.")
    var connections: Int?

    @Option(help: "Concurrent streams per connection.")
    var streams: Int?

    @Option(
        help:
            "Mix of built-in kinds, e.g. silent=60,alert=40 (kinds: \(PushKind.builtIn.map(\.name).joined(separator: ", ")))."
    )
    var mix: String?

    @Option(help: "Device tokens: 'token topic' lines, as `pushgate simulate` writes them.")
    var tokens = "simulated-tokens.txt"

    @Option(help: "Topic for tokens listed without one.")
    var topic: String?

    @Option(
        help:
            "Broadcast channels (comma-separated apns-channel-ids) for the mix's broadcast kinds (live-broadcast), of --topic's app or the tokens file's first; with --admin the summary gives each broadcast's fan-out."
    )
    var channels: String?

    @Option(help: "The .p8 key that signs provider tokens (absent: no authorization header).")
    var key: String?

    @Option(help: "Team id (the token's iss).")
    var teamId: String?

    @Option(help: "Key id (the token's kid).")
    var keyId: String?

    @Option(help: "Sign a new provider token every this many minutes (APNs: between 20 and 60).")
    var tokenRefreshMinutes = 50

    @Option(help: "CA to trust for https (PEM); absent: no verification (development).")
    var caFile: String?

    @Option(help: "A Pushgate admin API (http://127.0.0.1:2201) to read the gateway's own figures from.")
    var admin: String?

    @Option(help: "Bearer token for --admin when it requires one.")
    var adminToken: String?

    @Option(help: "Write every figure as JSON here.")
    var json: String?

    @Option(help: "Write a self-contained HTML report here.")
    var html: String?

    @Option(help: "Event-loop threads.")
    var threads = 1

    func validate() throws {
        guard (20...60).contains(tokenRefreshMinutes) else {
            throw ValidationError(
                "--token-refresh-minutes must be between 20 and 60 (APNs' rule), got \(tokenRefreshMinutes)")
        }
        guard threads >= 1 else { throw ValidationError("--threads must be at least 1") }
    }

    func run() async throws {
        let urls = try url.split(separator: ",").map { try parseURL(String($0), flag: "--url") }
        guard let tls = urls.first?.tls, urls.allSatisfy({ $0.tls == tls }) else {
            throw ValidationError("--url: one scheme for every address (all https or all http), got '\(url)'")
        }
        var scenario = try loadScenario(scenario)
        if let rate { scenario.rate = rate }
        if let rampTo { scenario.ramp_to = rampTo }
        if let duration { scenario.duration_seconds = duration }
        if let count { scenario.count = count }
        if let connections { scenario.connections = connections }
        if let streams { scenario.streams = streams }
        if let mix {
            do { scenario.mix = try Scenario.mix(flag: mix) } catch { throw ValidationError(error.description) }
        }
        if let problem = scenario.problem() { throw ValidationError("scenario: \(problem)") }

        let text: String
        do {
            text = try String(contentsOfFile: tokens, encoding: .utf8)
        } catch {
            throw ValidationError("--tokens: cannot read \(tokens) (run `pushgate simulate` to write one)")
        }
        var options: BenchOptions
        do {
            options = BenchOptions(
                addresses: urls.map { ($0.host, $0.port) }, tls: tls, scenario: scenario,
                targets: try PushTarget.parse(text, defaultTopic: topic))
        } catch {
            throw ValidationError("--tokens \(tokens): \(error.description)")
        }
        options.targets += try channelTargets(app: topic ?? options.targets.first?.topic)
        options.signer = try loadSigner(key: key, teamID: teamId, keyID: keyId)
        options.tokenRefreshSeconds = tokenRefreshMinutes * 60
        options.trustRoots = caFile.map { [$0] } ?? []
        let adminTarget = try admin.map { try parseURL($0, flag: "--admin") }

        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        defer { group.shutdownGracefully { _ in } }
        let result = try await runBench(
            options, group: group, admin: adminTarget.map { ($0.host, $0.port, adminToken) })
        try write(result, json: json, html: html)
    }

    /// The --channels as targets of the broadcast kinds.
    private func channelTargets(app: String?) throws -> [PushTarget] {
        let ids = (channels ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        guard !ids.isEmpty else { return [] }
        guard let app else { throw ValidationError("--channels: whose app? give --topic") }
        for id in ids where ChannelID(id) == nil {
            throw ValidationError("--channels: '\(id)' is not a channel id (base64, as apns-channel-id)")
        }
        return ids.map { PushTarget.channel($0, bundleID: app) }
    }
}

/// Runs a bench with live progress on a terminal, the gateway's figures when its admin API is known,
/// and prints the summary.
func runBench(
    _ options: BenchOptions, group: MultiThreadedEventLoopGroup, admin: (host: String, port: Int, token: String?)?
) async throws -> BenchResult {
    func counters() async throws -> GatewayFigures.Counters? {
        guard let admin else { return nil }
        let (status, body) = try await AdminClient.get(
            host: admin.host, port: admin.port, path: "/v1/counters", token: admin.token)
        guard status == 200 else { throw ValidationError("--admin: /v1/counters answered \(status): \(body)") }
        return try GatewayFigures.Counters(json: Data(body.utf8))
    }
    func broadcasts() async throws -> [BroadcastFanout]? {
        guard let admin, options.scenario.mix.contains(where: { $0.payload == .broadcast && $0.weight > 0 }) else {
            return nil
        }
        let (status, body) = try await AdminClient.get(
            host: admin.host, port: admin.port, path: "/v1/broadcasts", token: admin.token)
        guard status == 200 else { throw ValidationError("--admin: /v1/broadcasts answered \(status): \(body)") }
        return try BroadcastFanout.list(json: Data(body.utf8))
    }
    let before = try await counters()
    let broadcastsBefore = try await broadcasts()
    let interactive = isatty(STDOUT_FILENO) != 0
    var result: BenchResult
    do {
        result = try await BenchRunner.run(options, group: group) { progress in
            guard interactive else { return }
            print("\u{1B}[2K\r\(progress.line)", terminator: "")
            fflush(nil)
        }
    } catch let error as BenchRunError {
        throw ValidationError(error.description)
    }
    if interactive { print("\u{1B}[2K\r", terminator: "") }
    if let before {
        // Deliveries and their acknowledgements finish just after the last answer.
        try await Task.sleep(for: .seconds(1))
        if let after = try await counters() { result.gateway = GatewayFigures(from: before, to: after) }
    }
    if let broadcastsBefore {
        // The run's broadcasts: those the gateway did not have before, once each reached every subscriber
        // (or after 30 s, as far as they got).
        let known = Set(broadcastsBefore.map(\.apnsID))
        var fanouts: [BroadcastFanout] = []
        for _ in 0..<150 {
            fanouts = (try await broadcasts() ?? []).filter { !known.contains($0.apnsID) }
            if fanouts.allSatisfy(\.isComplete) { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        result.broadcasts = BroadcastFanouts(fanouts: fanouts)
    }
    print(BenchReport.summary(result))
    return result
}

func write(_ result: BenchResult, json: String?, html: String?) throws {
    if let json {
        try result.json().write(to: URL(fileURLWithPath: json))
        print("figures written to \(json)")
    }
    if let html {
        try BenchReport.html(result).write(toFile: html, atomically: true, encoding: .utf8)
        print("report written to \(html)")
    }
}

/// host, port and whether it is https, from `http(s)://host:port`.
func parseURL(_ text: String, flag: String) throws -> (host: String, port: Int, tls: Bool) {
    try failing { try ServerURL.parse(text, flag: flag) }
}

/// The scenario named (Config/scenarios/NAME.yaml) or at a path; the embedded realistic one by default.
func loadScenario(_ name: String?) throws -> Scenario {
    guard let name else { return .realistic }
    return try loadNamedYAML(
        name, directory: "Config/scenarios", flag: "--scenario", embedded: ("realistic", Scenario.realistic))
}

/// A YAML file named in `directory` (NAME.yaml) or at a path, decoded with errors that name the flag, the
/// file and the key; `embedded` answers for its name when the file is not there (outside the repository).
func loadNamedYAML<T: Decodable>(_ name: String, directory: String, flag: String, embedded: (String, T))
    throws -> T
{
    let path = name.contains("/") || name.hasSuffix(".yaml") ? name : "\(directory)/\(name).yaml"
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
        if name == embedded.0 { return embedded.1 }
        throw ValidationError("\(flag): no file at \(path)")
    }
    do {
        return try YAMLDecoder().decode(T.self, from: text)
    } catch {
        throw ValidationError("\(flag) \(path): \(YAMLProblem.describe(error, in: text))")
    }
}

func loadSigner(key: String?, teamID: String?, keyID: String?) throws -> ProviderTokenSigner? {
    guard let key else { return nil }
    guard let teamID, let keyID else { throw ValidationError("--key needs --team-id and --key-id") }
    let pem: String
    do {
        pem = try String(contentsOfFile: key, encoding: .utf8)
    } catch {
        throw ValidationError("--key: cannot read \(key)")
    }
    guard let signer = try? ProviderTokenSigner(teamID: teamID, keyID: keyID, p8PEM: pem) else {
        throw ValidationError("--key: \(key) is not a P-256 private key in PEM (.p8) form")
    }
    return signer
}
