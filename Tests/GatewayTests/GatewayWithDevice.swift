import AdminAPI
import DeviceAgent
import DeviceHub
import Foundation
import Gateway
import Logging
import NIOCore
import NIOPosix
import ProviderAuth
import ProviderClient
import PushModel
import TestSupport
import Testing
import WallClock

/// A real gateway (`LocalGateway`, SQLite store) with one device agent that installed `topic`, and a
/// provider connection to POST with.
struct GatewayWithDevice {
    let topic: String
    let group: MultiThreadedEventLoopGroup
    let gateway: LocalGateway
    let agent: DeviceAgent
    let token: String
    let client: ProviderClient
    let authorization: String

    /// Runs a gateway with the device while `body` runs; then stops the device, the connection and the
    /// gateway.
    static func run<Result>(
        topic: String, settings: [String], _ body: (GatewayWithDevice) async throws -> Result
    ) async throws -> Result {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        do {
            let result = try await running(topic: topic, settings: settings, group: group, body)
            try await group.shutdownGracefully()
            return result
        } catch {
            try? await group.shutdownGracefully()
            throw error
        }
    }

    private static func running<Result>(
        topic: String, settings: [String], group: MultiThreadedEventLoopGroup,
        _ body: (GatewayWithDevice) async throws -> Result
    ) async throws -> Result {
        try await LocalGateway.run(
            topic: topic, settings: ["log.level=error"] + settings, group: group, logger: Logger(label: "test")
        ) { gateway in
            let agent = DeviceAgent(
                host: "127.0.0.1", port: gateway.devicePort, apps: [topic],
                enrolment: gateway.services.hub.settings.enrolmentSecret, behaviour: .prompt, group: group)
            agent.start()
            defer { agent.stop() }
            try await eventually("the device installed the app") { agent.tokens[topic] != nil }
            let token = try #require(agent.tokens[topic])
            let client = try await ProviderClient.connect(
                host: "127.0.0.1", port: gateway.providerPort, security: .cleartext, group: group)
            let setup = GatewayWithDevice(
                topic: topic, group: group, gateway: gateway, agent: agent, token: token, client: client,
                authorization: "bearer " + (try gateway.signer.token(issuedAt: UnixTime.now())))
            do {
                let result = try await body(setup)
                await client.close()
                return result
            } catch {
                await client.close()
                throw error
            }
        }
    }

    /// POSTs a silent push or an alert (to the agent's token unless another is given); the status.
    func post(silent: Bool, to device: String? = nil, id: String? = nil) async throws -> Int {
        let body = silent ? #"{"aps":{"content-available":1}}"# : #"{"aps":{"alert":"hi"}}"#
        return try await client.post(
            path: "/3/device/\(device ?? token)",
            headers: [
                ("authorization", authorization), ("apns-topic", topic),
                ("apns-push-type", silent ? "background" : "alert"), ("apns-priority", silent ? "5" : "10"),
            ] + (id.map { [("apns-id", $0)] } ?? []), body: Array(body.utf8)
        ).status
    }

    func admin(_ path: String) async throws -> (status: Int, body: String) {
        try await AdminClient.get(host: "127.0.0.1", port: gateway.adminPort, path: path, token: nil)
    }

    /// The gateway's `/v1/counters`.
    func counters() async throws -> Counters {
        try #require(await AdminClient.counters(port: gateway.adminPort))
    }

}
