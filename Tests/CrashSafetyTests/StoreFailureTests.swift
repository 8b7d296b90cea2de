import AdminAPI
import ChildProcess
import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import PushStore
import Synchronization
import Testing
import TestSupport
import WallClock

/// A store that cannot write: every push whose commit failed is answered 500 `InternalServerError` and
/// never delivered (its provider sends it again, so a delivery would be a duplicate); `/ready` says 503
/// naming the store from the first failure until a commit succeeds; the log says so once, not once per
/// commit. The failure is real: another process holds the SQLite file's write lock.
@Suite(.serialized) struct StoreFailureTests {
    static let topic = "com.example.storefail"

    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func aPushTheStoreCouldNotWriteIsRefusedAndNeverDelivered() async throws {
        let (directory, signer) = try gatewayDirectory(
            prefix: "pushgate-storefail", team: "FAILTEAM01", keyID: "FAILKEY001", topic: Self.topic)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let log = directory + "/gateway.log"
        let gateway = try GatewayProcess(
            arguments: GatewayProcess.serve(
                dataDirectory: directory,
                ["--set", "provider.rate.device_token.per_second=0", "--set", "store.wait_limit_seconds=2"]),
            logPath: log)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: log)
        func ready() async throws -> (status: Int, body: String) {
            let answer = try await AdminClient.get(host: "127.0.0.1", port: ports.admin, path: "/ready", token: nil)
            return (answer.status, answer.body)
        }
        try await eventually("the gateway is ready") { try await ready().status == 200 }

        let delivered = Shared<[String]>([])
        let agent = DeviceAgent(
            host: "127.0.0.1", port: ports.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
            behaviour: .prompt, group: MultiThreadedEventLoopGroup.singleton,
            onEvent: { event in
                if case .delivered(let delivery, _) = event { delivered.value.withLock { $0.append(delivery.apnsID) } }
            })
        agent.start()
        defer { agent.stop() }
        try await eventually("the app is installed") { agent.tokens[Self.topic] != nil }
        let token = try #require(agent.tokens[Self.topic])
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: ports.provider, security: .cleartext, group: MultiThreadedEventLoopGroup.singleton)
        let authorization = "bearer " + (try signer.token(issuedAt: UnixTime.now()))
        func post(_ id: String, silent: Bool = false) async throws -> ProviderClient.Response {
            let alert: [(String, String)] = [("apns-push-type", "alert")]
            let background: [(String, String)] = [("apns-push-type", "background"), ("apns-priority", "5")]
            return try await client.post(
                path: "/3/device/\(token)",
                headers: [("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id)]
                    + (silent ? background : alert),
                body: Array((silent ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"hi"}}"#).utf8))
        }

        // Stored, then delivered.
        let first = UUID().uuidString.lowercased()
        #expect(try await post(first).status == 200)
        try await eventually("the first push is delivered") { delivered.value.withLock { $0.contains(first) } }

        // Another process takes the database's write lock: every commit fails.
        let locker = try SQLiteWriteLock(database: directory + "/pushgate.sqlite", marker: directory + "/locked")
        defer { locker.release() }
        try await eventually("the database is locked") { FileManager.default.fileExists(atPath: directory + "/locked") }
        // The first waits in a commit for SQLite's busy timeout (10 s) and fails: 500. The others, sent once
        // that commit runs, collect behind it and are dropped unattempted after store.wait_limit_seconds
        // (2 s): 503. Both are refusals: none of them is ever delivered.
        let refused = (0..<20).map { _ in UUID().uuidString.lowercased() }
        func answer(_ index: Int) async throws -> Int {
            let answer = try await post(refused[index], silent: index % 4 == 3)
            let reason = answer.status == 503 ? "ServiceUnavailable" : "InternalServerError"
            #expect(answer.bodyText.contains(reason), "\(answer.status) \(answer.bodyText)")
            return answer.status
        }
        let statuses = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            group.addTask { (0, try await answer(0)) }
            try await eventually("the first push's commit is running") {
                await AdminClient.counters(port: ports.admin)?.store?.committing ?? 0 >= 1
            }
            for index in 1..<refused.count { group.addTask { (index, try await answer(index)) } }
            return try await group.reduce(into: [Int: Int]()) { $0[$1.0] = $1.1 }
        }
        #expect(statuses[0] == 500, "the push in the stuck commit: \(statuses)")
        #expect((1..<refused.count).allSatisfy { statuses[$0] == 503 }, "those behind it: \(statuses)")
        let notReady = try await ready()
        #expect(notReady.status == 503)
        let readiness = try? JSONDecoder().decode(Readiness.self, from: Data(notReady.body.utf8))
        #expect(readiness?.checks["store"] == false, "\(notReady.body)")

        // The lock is released: the next push is stored and delivered, and /ready is 200 again. The
        // device's queue is in order, so once this one arrives nothing refused before it is still coming.
        locker.release()
        let marker = UUID().uuidString.lowercased()
        try await eventually("a push is stored again") { try await post(UUID().uuidString.lowercased()).status == 200 }
        #expect(try await post(marker).status == 200)
        try await eventually("the push after the outage is delivered") {
            delivered.value.withLock { $0.contains(marker) }
        }
        #expect(try await ready().status == 200)
        let seen = delivered.value.withLock { Set($0) }
        #expect(refused.filter { seen.contains($0) }.isEmpty, "refused pushes were delivered")
        // Held silent pushes were withdrawn too: a keep-alive's release has nothing of theirs.
        #expect(await AdminClient.counters(port: ports.admin)?.hub.notStored == 20)

        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        let lines = text.components(separatedBy: "\n")
        let failureLines = lines.filter { $0.contains("store cannot write") }
        #expect(!failureLines.isEmpty, "the failure was logged")
        #expect(failureLines.count < refused.count, "one line per failed commit: \(failureLines.count)")
        #expect(lines.contains { $0.contains("store writes again") })
        await client.close()
    }
}

/// Another process (python3's sqlite3) holding a database's write lock (`BEGIN EXCLUSIVE`) until it is
/// released; it writes `marker` once it holds the lock.
final class SQLiteWriteLock: Sendable {
    let process: ChildProcess

    init(database: String, marker: String) throws {
        process = try ChildProcess(
            "python3",
            [
                "-c",
                """
                import sqlite3, sys, time
                db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
                db.execute("BEGIN EXCLUSIVE")
                open(sys.argv[2], "w").close()
                while True: time.sleep(1)
                """,
                database, marker,
            ])
    }

    /// SIGKILL: the test process may ignore SIGTERM, and a child inherits that.
    func release() {
        guard process.isRunning else { return }
        process.kill(SIGKILL)
        process.waitUntilExit()
    }
}
