import AdminAPI
import Foundation
import GatewayFiles
import NIOPosix
import ProviderAuth
import PushModel
import TestSupport
import Testing
import WallClock

/// SIGTERM while providers have hundreds of streams in flight: every stream up to a connection's GOAWAY
/// last stream id is answered (200, or 503 Shutdown) before the connection closes (RFC 9113 §6.8), the
/// streams above it are refused, and `/ready` says 503 once the signal is handled — on both stores.
@Suite(.serialized) struct DrainUnderLoadTests {
    static let topic = "com.example.drain"
    static let connections = 8
    /// Streams each connection has open when the signal arrives: half of them with their body sent (the
    /// gateway is deciding or committing them), half still waiting for it.
    static let streamsPerConnection = 40
    /// SIGTERMs per store in one test run (`DRAIN_RUNS` raises it for a measurement).
    static let runs = ProcessInfo.processInfo.environment["DRAIN_RUNS"].flatMap(Int.init) ?? 2

    enum Store: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }
    }

    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        arguments: Store.allCases)
    func everyPromisedStreamIsAnswered(store: Store) async throws {
        if store == .postgres, TestPostgres.url == nil { return }  // needs TEST_POSTGRES_URL (docs/store.md)
        // One database for the store's runs: each gateway starts on what the one before it left.
        let database = store == .postgres ? try await TestPostgres.makeDatabase(prefix: "pushgate_drain") : nil
        var totals = DrainTally()
        var failure: (any Error)?
        for run in 0..<Self.runs {
            do {
                totals.add(try await drainOnce(database: database, run: run))
            } catch {
                failure = error
                break
            }
        }
        if let database { await TestPostgres.dropDatabase(database) }
        if let failure { throw failure }
        print(
            "drain (\(store.rawValue), \(Self.runs) SIGTERMs): \(totals.inFlight) streams in flight, "
                + "\(totals.accepted) answered 200, \(totals.shutdown) answered 503 Shutdown, "
                + "\(totals.refused) refused (above GOAWAY's last stream id), \(totals.unanswered) unanswered")
        #expect(totals.unanswered == 0)
    }

    func drainOnce(database: String?, run: Int) async throws -> DrainTally {
        let (directory, signer) = try gatewayDirectory(
            prefix: "pushgate-drainload", team: "DRAINTEAM1", keyID: "DRAINKEY01", topic: Self.topic)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let tokens = (0..<16).map { n in DeviceToken(String(format: "%064x", 0xd2a1_0000 + n))! }
        try RegistryFiles.registerTokens(tokens, bundleID: Self.topic, in: directory + "/device-tokens.yaml")
        let storeArguments =
            database.map { ["--set", "store.backend=postgres", "--set", "store.postgres.url=\($0)"] } ?? []
        let log = directory + "/gateway.log"
        let gateway = try GatewayProcess(
            arguments: GatewayProcess.serve(
                dataDirectory: directory, ["--set", "shutdown.grace_seconds=60"] + storeArguments),
            logPath: log)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: log)
        try await waitUntilReady(adminPort: ports.admin)

        let group = MultiThreadedEventLoopGroup.singleton
        var clients: [RawHTTP2] = []
        for _ in 0..<Self.connections { clients.append(try await RawHTTP2(port: ports.provider, group: group)) }
        let authorization = "bearer " + (try signer.token(issuedAt: UnixTime.now()))
        let body = Array(#"{"aps":{"alert":"drain"}}"#.utf8)
        func head(_ n: Int) -> [(String, String)] {
            [
                (":method", "POST"), (":scheme", "http"), (":authority", "127.0.0.1"),
                (":path", "/3/device/\(tokens[n % tokens.count])"), ("authorization", authorization),
                ("apns-topic", Self.topic), ("apns-push-type", "alert"),
            ]
        }
        // Every connection's streams open; the first half get their bodies at once.
        var opened = [[UInt32]](repeating: [], count: Self.connections)
        for (index, client) in clients.enumerated() {
            for n in 0..<Self.streamsPerConnection {
                let stream = UInt32(2 * n + 1)
                try await client.headers(stream: stream, head(n), endStream: false)
                if n < Self.streamsPerConnection / 2 { try await client.data(stream: stream, body, endStream: true) }
                opened[index].append(stream)
            }
        }
        gateway.kill(SIGTERM)
        // Once the gateway says it drains, `/ready` says so on every poll.
        try await eventually("the gateway drains") {
            ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").contains("draining")
        }
        let ready = try? await AdminClient.get(host: "127.0.0.1", port: ports.admin, path: "/ready", token: nil)
        #expect(ready?.status == 503, "run \(run): /ready after the drain began")
        // The waiting bodies arrive, and every connection tries one more stream.
        for (index, client) in clients.enumerated() {
            for n in Self.streamsPerConnection / 2..<Self.streamsPerConnection {
                try? await client.data(stream: UInt32(2 * n + 1), body, endStream: true)
            }
            let late = UInt32(2 * Self.streamsPerConnection + 1)
            try? await client.headers(stream: late, head(0), endStream: false)
            try? await client.data(stream: late, body, endStream: true)
            opened[index].append(late)
        }
        var tally = DrainTally()
        for (index, client) in clients.enumerated() {
            let frames = try await client.waitFor(seconds: 60) { _ in client.isClosed }
            #expect(client.isClosed, "run \(run): connection \(index) still open after the grace period")
            let last = frames.first { $0.type == RawHTTP2.Frame.goAway }.map {
                $0.payload[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } & 0x7fff_ffff
            }
            #expect(last != nil, "run \(run): connection \(index) closed without a GOAWAY")
            for stream in opened[index] {
                let status = frames.first { $0.stream == stream && $0.type == RawHTTP2.Frame.headersType }?.status
                let reset = frames.first { $0.stream == stream && $0.type == RawHTTP2.Frame.rstStream }
                if stream <= last ?? 0 { tally.inFlight += 1 }
                switch status {
                case "200": tally.accepted += 1
                case "503": tally.shutdown += 1
                case nil where stream > last ?? 0 || reset?.errorCode == 0x7: tally.refused += 1
                default:
                    tally.unanswered += 1
                    Issue.record("run \(run): stream \(stream) on connection \(index) got \(status ?? "no answer")")
                }
            }
        }
        for client in clients { await client.close() }
        let status = await gateway.exitStatus(within: 60)
        #expect(status == 0, "run \(run): exit status \(String(describing: status)); log: \(log)")
        return tally
    }
}

struct DrainTally {
    var inFlight = 0
    var accepted = 0
    var shutdown = 0
    var refused = 0
    var unanswered = 0

    mutating func add(_ other: DrainTally) {
        inFlight += other.inFlight
        accepted += other.accepted
        shutdown += other.shutdown
        refused += other.refused
        unanswered += other.unanswered
    }
}
