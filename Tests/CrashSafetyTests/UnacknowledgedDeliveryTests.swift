import AdminAPI
import ChildProcess
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
import Synchronization
import Testing
import TestSupport
import WallClock

/// What a device had not acknowledged when the gateway was killed is the device's: after a restart it
/// is sent again, in order, and a newer push while the device was away coalesces none of it. A device
/// whose link stalled with thousands of pushes waiting gets every one of them once it reads again.
@Suite(.serialized) struct UnacknowledgedDeliveryTests {
    static let topic = "com.example.unacked"

    /// A data directory with a registered key, and a `pushgate serve` on it (ports the kernel picks; the
    /// device port fixed again on a restart so devices find it).
    struct Fixture {
        let directory: String
        let signer: ProviderTokenSigner

        init() throws {
            directory =
                FileManager.default.temporaryDirectory
                .appendingPathComponent("pushgate-unacked-\(UUID().uuidString.prefix(8))").path
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            let key = P256.Signing.PrivateKey()
            signer = ProviderTokenSigner(teamID: "ACKTEAM001", keyID: "ACKKEY0001", privateKey: key)
            try RegistryFiles.addKey(
                .init(
                    team_id: signer.teamID, key_id: signer.keyID, public_key: key.publicKey.pemRepresentation,
                    topics: [UnacknowledgedDeliveryTests.topic], environment: nil),
                to: directory + "/provider-keys.yaml")
        }

        func start(devicesPort: Int = 0, log name: String) async throws -> (GatewayProcess, Ports) {
            let log = directory + "/" + name
            let process = try GatewayProcess(
                arguments: [
                    "serve", "--set", "data_dir=\(directory)", "--set", "provider.tls.enabled=false",
                    "--set", "provider.h2c.port=0", "--set", "devices.port=\(devicesPort)",
                    "--set", "devices.tls.enabled=false", "--set", "admin.port=0", "--set", "log.level=notice",
                    "--set", "log.modules=provider=info,devices=info,admin=info",
                    "--set", "provider.rate.device_token.per_second=0", "--set", "devices.keep_alive_seconds=3600",
                    "--set", "channels.tls.enabled=false", "--set", "channels.h2c.enabled=false",
                    // A stalled device is closed for not reading after this long, and pushes for it while it
                    // is away then coalesce (APNs keeps the newest): these tests stall a device on purpose
                    // while thousands of POSTs go in, which a loaded machine can stretch past the default 30 s.
                    "--set", "devices.not_reading_timeout_seconds=3600",
                ], logPath: log)
            let found = try await process.boundPorts(logPath: log)
            let ports = Ports(provider: found.provider, devices: found.devices, admin: found.admin)
            try await waitUntilReady(adminPort: ports.admin)
            return (process, ports)
        }

        /// A device that installed the app, then left: its identity and token.
        func enrol(devicesPort: Int) async throws -> (DeviceAgent.Identity, String) {
            let agent = DeviceAgent(
                host: "127.0.0.1", port: devicesPort, apps: [UnacknowledgedDeliveryTests.topic],
                enrolment: GatewayProcess.enrolment, behaviour: .prompt,
                group: MultiThreadedEventLoopGroup.singleton, onEvent: { _ in })
            agent.start()
            try await eventually("the app is installed") { agent.tokens.count == 1 }
            agent.stop()
            return (agent.identity!, agent.tokens[UnacknowledgedDeliveryTests.topic]!)
        }

        /// POSTs `count` alerts to `token` over one connection; returns the apns-ids answered 200, in order.
        func postAlerts(_ count: Int, to token: String, port: Int) async throws -> [String] {
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: port, security: .cleartext, group: MultiThreadedEventLoopGroup.singleton)
            let authorization = "bearer " + (try signer.token(issuedAt: UnixTime.now()))
            var accepted: [String] = []
            for index in 0..<count {
                let id = UUID().uuidString.lowercased()
                let response = try await client.post(
                    path: "/3/device/\(token)",
                    headers: [("authorization", authorization), ("apns-topic", topic), ("apns-id", id)],
                    body: Array(#"{"aps":{"alert":"n\#(index)"}}"#.utf8))
                if response.status == 200 { accepted.append(id) }
            }
            await client.close()
            return accepted
        }

        var topic: String { UnacknowledgedDeliveryTests.topic }
    }

    struct Ports {
        var provider: Int
        var devices: Int
        var admin: Int
    }

    /// Collects what an agent delivered, in order, repeats included.
    final class Deliveries: Sendable {
        let ids = Shared<[String]>([])
        func record(_ event: AgentEvent) {
            switch event {
            case .delivered(let delivery, _): ids.value.withLock { $0.append(delivery.apnsID) }
            default: break
            }
        }
        var all: [String] { ids.value.withLock { $0 } }
    }

    func reconnect(
        _ identity: DeviceAgent.Identity, port: Int, into deliveries: Deliveries
    ) -> DeviceAgent {
        let agent = DeviceAgent(
            host: "127.0.0.1", port: port, apps: [Self.topic], identity: identity, behaviour: .prompt,
            group: MultiThreadedEventLoopGroup.singleton, onEvent: { deliveries.record($0) })
        agent.start()
        return agent
    }

    /// SIGKILL (a crash) or SIGTERM (a shutdown: the device is told to come back later): either way what
    /// the device had not acknowledged reaches it after the restart.
    @Test(
        .enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"),
        arguments: [SIGKILL, SIGTERM])
    func unacknowledgedAtAStopAreDeliveredAfterTheRestartInOrder(signal: Int32) async throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.directory) }
        let (gateway, ports) = try await fixture.start(log: "first.log")
        defer { gateway.kill(SIGKILL) }
        let (identity, token) = try await fixture.enrol(devicesPort: ports.devices)

        // Three alerts written to a device that reads them but acknowledges none; then SIGKILL.
        let raw = try await RawDevice(
            port: ports.devices, deviceID: identity.deviceID, secret: identity.secret,
            group: MultiThreadedEventLoopGroup.singleton)
        try await eventually("the device is connected") { !raw.collector.texts.withLock { $0.isEmpty } }
        let written = try await fixture.postAlerts(3, to: token, port: ports.provider)
        #expect(written.count == 3)
        try await eventually("the three are written to the device") { raw.received == written }
        gateway.kill(signal)
        #expect(await gateway.exitStatus(within: 30) != nil)
        if signal == SIGTERM {
            try await eventually("the device was told to come back") {
                raw.collector.texts.withLock { texts in
                    texts.contains { $0.contains(#""reason":"shutdown""#) && $0.contains("reconnect_after_ms") }
                }
            }
        }
        try? await raw.channel.close()

        // Restarted; a newer alert while the device is away; then the device comes back.
        let (restarted, again) = try await fixture.start(devicesPort: ports.devices, log: "restarted.log")
        defer { restarted.kill(SIGKILL) }
        let newer = try await fixture.postAlerts(1, to: token, port: again.provider)
        let deliveries = Deliveries()
        let agent = reconnect(identity, port: again.devices, into: deliveries)
        defer { agent.stop() }
        try await eventually("all four reach the device") { deliveries.all.count >= 4 }
        #expect(deliveries.all == written + newer, "the three it had not acknowledged first, in order, then the newer")
    }

    @Test(.enabled(if: GatewayProcess.binary != nil, "needs the pushgate binary that swift test builds"))
    func aStalledDeviceGetsEveryAcceptedPushAfterAKill() async throws {
        let fixture = try Fixture()
        defer { try? FileManager.default.removeItem(atPath: fixture.directory) }
        let (gateway, ports) = try await fixture.start(log: "first.log")
        defer { gateway.kill(SIGKILL) }
        let (identity, token) = try await fixture.enrol(devicesPort: ports.devices)

        // The device's link stalls right after its hello: it reads nothing more.
        let stalled = try await RawDevice(
            port: ports.devices, deviceID: identity.deviceID, secret: identity.secret, reading: false,
            group: MultiThreadedEventLoopGroup.singleton)
        try await eventually("the stalled device is connected") {
            await AdminClient.counters(port: ports.admin)?.connectedDevices == 1
        }
        let rssBefore = residentKilobytes(of: gateway)
        let accepted = try await fixture.postAlerts(2000, to: token, port: ports.provider)
        #expect(accepted.count == 2000, "every alert answered 200")
        let rssAfter = residentKilobytes(of: gateway)
        if let rssBefore, let rssAfter {
            // 2,000 small pushes wait in the device's queue, not in socket buffers: a few MB at most.
            #expect(rssAfter - rssBefore < 64 * 1024, "RSS grew by \(rssAfter - rssBefore) kB while stalled")
        }
        gateway.kill(SIGKILL)
        #expect(await gateway.exitStatus(within: 10) != nil)
        try? await stalled.channel.close()

        let (restarted, again) = try await fixture.start(devicesPort: ports.devices, log: "restarted.log")
        defer { restarted.kill(SIGKILL) }
        let deliveries = Deliveries()
        let agent = reconnect(identity, port: again.devices, into: deliveries)
        defer { agent.stop() }
        try await eventually("all 2,000 reach the device", seconds: 60) { Set(deliveries.all).count >= 2000 }
        #expect(Set(deliveries.all) == Set(accepted), "every push answered 200, and nothing else")
        #expect(deliveries.all == accepted, "once each, in order")
    }

    func residentKilobytes(of process: GatewayProcess) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.process.pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") })
        else { return nil }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])
    }
}
