import AdminAPI
import Crypto
import DeviceAgent
import DeviceProtocol
import Foundation
import Gateway
import GatewayFiles
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import PushStore
import Synchronization
import TestSupport
import Testing
import WallClock

/// A 200 means committed: a gateway killed with SIGKILL while pushes flow, then restarted on the same
/// data directory, delivers every push it answered 200 for, except those discarded by design
/// (coalesced, expired); then it stops cleanly on SIGTERM.
@Suite(.serialized) struct CrashSafetyTests {
    static let topic = "com.example.crash"

    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func nothingAnsweredWith200IsLostToAKill() async throws {
        let (directory, signer) = try gatewayDirectory(
            prefix: "pushgate-crash", team: "CRASHTEAM1", keyID: "CRASHKEY01", topic: Self.topic)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // Ports the kernel picks, read back from the log; the restart binds the same device port again
        // (the devices reconnect to it), the others anew.
        func arguments(devicesPort: Int) -> [String] {
            [
                "serve", "--set", "data_dir=\(directory)", "--set", "provider.tls.enabled=false",
                "--set", "provider.h2c.port=0", "--set", "devices.port=\(devicesPort)",
                "--set", "devices.tls.enabled=false", "--set", "admin.port=0", "--set", "log.level=notice",
                "--set", "log.modules=provider=info,devices=info,admin=info", "--set", "devices.keep_alive_seconds=1",
                "--set", "channels.tls.enabled=false", "--set", "channels.h2c.enabled=false",
            ]
        }
        let logPath = directory + "/gateway.log"
        let gateway = try GatewayProcess(arguments: arguments(devicesPort: 0), logPath: logPath)
        defer { gateway.kill(SIGKILL) }
        let ports = try await gateway.boundPorts(logPath: logPath)
        try await waitUntilReady(adminPort: ports.admin)

        // Ten devices with the app; what each receives is recorded by apns-id.
        let received = Shared<Set<String>>([])
        let group = MultiThreadedEventLoopGroup.singleton
        let agents = (0..<10).map { _ in
            DeviceAgent(
                host: "127.0.0.1", port: ports.devices, apps: [Self.topic], enrolment: GatewayProcess.enrolment,
                behaviour: .prompt, group: group,
                onEvent: { event in
                    if case .delivered(let delivery, _) = event {
                        _ = received.value.withLock { $0.insert(delivery.apnsID) }
                    }
                })
        }
        for agent in agents { agent.start() }
        defer { for agent in agents { agent.stop() } }
        try await eventually("every device installed the app") { agents.allSatisfy { $0.tokens.count == 1 } }
        let tokens = agents.compactMap { $0.tokens[Self.topic] }

        // Pushes from 8 concurrent senders; SIGKILL once 150 were answered 200.
        let accepted = Shared<[String]>([])
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: ports.provider, security: .cleartext, group: group)
        let authorization = "bearer " + (try signer.token(issuedAt: UnixTime.now()))
        await withTaskGroup(of: Void.self) { senders in
            for sender in 0..<8 {
                senders.addTask {
                    for n in 0..<60 {
                        let id = UUID().uuidString.lowercased()
                        let silent = (sender + n) % 4 == 0
                        let body = silent ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"n\#(n)"}}"#
                        let headers = [
                            ("authorization", authorization), ("apns-topic", Self.topic), ("apns-id", id),
                            ("apns-push-type", silent ? "background" : "alert"),
                            ("apns-priority", silent ? "5" : "10"),
                        ]
                        guard
                            let response = try? await client.post(
                                path: "/3/device/\(tokens[(sender * 60 + n) % tokens.count])", headers: headers,
                                body: Array(body.utf8))
                        else { return }
                        if response.status == 200 {
                            let count = accepted.value.withLock {
                                $0.append(id)
                                return $0.count
                            }
                            if count == 150 { gateway.kill(SIGKILL) }
                        }
                    }
                }
            }
        }
        await client.close()
        #expect(await gateway.exitStatus(within: 10) != nil, "the gateway did not die")
        let answered = accepted.value.withLock { $0 }
        #expect(answered.count >= 150)

        // Every push answered 200 is in the database, even the ones answered just before the kill.
        let database = directory + "/pushgate.sqlite"
        let store = try SQLiteStore(path: database)
        for id in answered {
            #expect(try await store.notification(APNsID(header: id)!) != nil, "\(id) got a 200 but was not stored")
        }

        // Restarted on the same data: the devices come back and get what was not delivered before.
        let restartLog = directory + "/restarted.log"
        let restarted = try GatewayProcess(arguments: arguments(devicesPort: ports.devices), logPath: restartLog)
        defer { restarted.kill(SIGKILL) }
        try await waitUntilReady(adminPort: try await restarted.boundPorts(logPath: restartLog).admin)
        var missing: [String] = []
        try await eventually("every push answered 200 delivered or discarded by design", seconds: 60) {
            let seen = received.value.withLock { $0 }
            missing = []
            for id in answered where !seen.contains(id) {
                let stored = try await store.notification(APNsID(header: id)!)
                if stored?.state != .discarded { missing.append(id) }
            }
            return missing.isEmpty
        }
        #expect(missing.isEmpty, "lost: \(missing.prefix(5))")
        try await store.close()

        // SIGTERM: drains, commits, closes devices with a reconnect hint, exits 0.
        restarted.kill(SIGTERM)
        let status = await restarted.exitStatus(within: 30)
        #expect(status == 0, "exit status \(String(describing: status)); log: \(restartLog)")
    }
}

/// A value shared between tasks.
final class Shared<Value: Sendable>: Sendable {
    let value: Mutex<Value>
    init(_ initial: Value) { value = Mutex(initial) }
}
