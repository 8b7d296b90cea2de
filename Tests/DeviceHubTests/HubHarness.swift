import Crypto
import DeviceAgent
import DeviceHub
import DeviceProtocol
import Foundation
import Logging
import NIOCore
import NIOPosix
import ProviderAPI
import ProviderAuth
import ProviderClient
import PushModel
import PushPolicy
import Synchronization
import TestSupport
import Testing

/// Collects what an agent saw.
final class EventLog: Sendable {
    private let events = Mutex<[AgentEvent]>([])
    func append(_ event: AgentEvent) { events.withLock { $0.append(event) } }
    var all: [AgentEvent] { events.withLock { $0 } }
    var deliveries: [Delivery] {
        all.compactMap {
            if case .delivered(let delivery, _) = $0 { return delivery }
            return nil
        }
    }
}

/// A gateway (provider API over h2c + device port) on loopback, with the hub's clock in the test's hands.
final class HubHarness: Sendable {
    static let bundle = "com.example.app"
    let signer = ProviderTokenSigner(teamID: "TEAM123456", keyID: "KEY1234567", privateKey: P256.Signing.PrivateKey())
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
    let clock = ManualClock()
    let hub: DeviceHub
    let provider: ProviderServer
    let devices: DeviceServer

    init(policy: PolicySettings = PolicySettings(), hubSettings: HubSettings = HubSettings()) async throws {
        let logger = Logger(label: "test")
        var hubSettings = hubSettings
        hubSettings.tickMilliseconds = 3_600_000  // the test runs the policy's timers itself
        hubSettings.keepAliveSeconds = 3600
        let clock = self.clock
        hub = DeviceHub(
            registry: DeviceRegistry(), policy: policy, settings: hubSettings, logger: logger, clock: { clock.now })
        var settings = ProviderSettings()
        settings.perDeviceTokenRate = .unlimited
        let keys = KeyRegistry([
            ProviderKey(teamID: "TEAM123456", keyID: "KEY1234567", publicKey: signer.privateKey.publicKey)
        ])
        let context = ProviderContext(
            settings: settings, keys: keys, directory: CombinedDirectory([hub.registry]), intake: hub,
            broadcasts: (hub.channels, hub), clock: { clock.now })
        provider = ProviderServer(
            context: context, listeners: [ProviderListener(host: "127.0.0.1", port: 0, security: .cleartext)],
            group: group,
            logger: logger)
        devices = DeviceServer(hub: hub, listeners: [.init(host: "127.0.0.1", port: 0)], group: group, logger: logger)
        try await provider.start()
        try await devices.start()
    }

    var devicePort: Int { devices.boundAddresses[0].port! }

    func stop() async throws {
        try await devices.shutdown()
        try await provider.shutdown()
        try await group.shutdownGracefully()
    }

    func agent(
        apps: [String] = [bundle], identity: DeviceAgent.Identity? = nil, behaviour: AgentBehaviour = .prompt,
        log: EventLog
    ) -> DeviceAgent {
        DeviceAgent(
            host: "127.0.0.1", port: devicePort, apps: apps, identity: identity,
            enrolment: hub.settings.enrolmentSecret, behaviour: behaviour, group: group, onEvent: { log.append($0) })
    }

    /// A device that installed the app and left (its agent stopped): its identity and token, for a raw
    /// client to present.
    func enrolledDevice() async throws -> (identity: DeviceAgent.Identity, token: String) {
        let setup = agent(log: EventLog())
        setup.start()
        try await eventually("app installed") { setup.tokens[HubHarness.bundle] != nil }
        let identity = try #require(setup.identity)
        let token = setup.tokens[HubHarness.bundle]!
        setup.stop()
        try await eventually("setup agent gone") { self.hub.connectedCount == 0 }
        return (identity, token)
    }

    /// A started agent that has installed the app, and its token.
    func installedAgent(behaviour: AgentBehaviour = .prompt, log: EventLog) async throws -> (DeviceAgent, String) {
        let agent = self.agent(behaviour: behaviour, log: log)
        agent.start()
        try await eventually("app installed") { agent.tokens[Self.bundle] != nil }
        return (agent, agent.tokens[Self.bundle]!)
    }

    /// A device on a raw WebSocket with `identity`, which acknowledges only when told to.
    func rawDevice(_ identity: DeviceAgent.Identity) async throws -> RawDevice {
        try await RawDevice(port: devicePort, deviceID: identity.deviceID, secret: identity.secret, group: group)
    }

    func post(token: String, payload: String, extra: [(String, String)] = []) async throws -> ProviderClient.Response {
        let client = try await ProviderClient.connect(
            host: "127.0.0.1", port: provider.boundAddresses[0].port!, security: .cleartext, group: group)
        defer { Task { await client.close() } }
        let headers =
            [("authorization", "bearer " + (try signer.token(issuedAt: clock.now))), ("apns-topic", Self.bundle)]
            + extra
        return try await client.post(path: "/3/device/\(token)", headers: headers, body: Array(payload.utf8))
    }
}

/// Waits for a condition, polling, bounded by a deadline (no fixed sleeps).

let alert = #"{"aps":{"alert":"hello"}}"#
let silent = #"{"aps":{"content-available":1}}"#
