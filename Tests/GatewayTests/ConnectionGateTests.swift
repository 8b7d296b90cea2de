import AdminAPI
import ConnectionLimits
import DeviceHub
import Foundation
import Gateway
import Logging
import NIOCore
import NIOPosix
import Testing
import TestSupport

/// The listeners' doors on a real gateway: connections that never finish their handshake are closed,
/// and the caps refuse the excess at accept while the connections already in keep working.
@Suite(.timeLimit(.minutes(5))) struct ConnectionGateTests {
    static let topic = "com.example.gate"

    /// A TCP connection that says nothing.
    static func silentConnection(port: Int, group: any EventLoopGroup) async throws -> any Channel {
        try await ClientBootstrap(group: group).connect(host: "127.0.0.1", port: port).get()
    }

    @Test func silentConnectionsAreClosedAfterTheHandshakeTimeout() async throws {
        try await GatewayWithDevice.run(
            topic: Self.topic, settings: ["provider.handshake_timeout_seconds=1", "devices.upgrade_timeout_seconds=1"]
        ) { setup in
            let toProvider = try await Self.silentConnection(port: setup.gateway.providerPort, group: setup.group)
            let toDevices = try await Self.silentConnection(port: setup.gateway.devicePort, group: setup.group)
            try await eventually("both silent connections are closed") { !toProvider.isActive && !toDevices.isActive }
            let connections = try await setup.counters().connections
            #expect(connections["provider"]?.handshakeTimeouts == 1)
            #expect(connections["devices"]?.handshakeTimeouts == 1)
            // The established ones are not touched: the device (upgraded long ago) and the provider client.
            #expect(try await setup.post(silent: false) == 200)
            let metrics = try await setup.admin("/metrics").body
            #expect(metrics.contains(#"pushgate_handshake_timeouts_total{listener="provider"} 1"#))
        }
    }

    @Test func theCapsRefuseTheExcessAndTheConnectionsInKeepWorking() async throws {
        // One device agent and one provider client are in; the caps leave room for one more of each.
        try await GatewayWithDevice.run(
            topic: Self.topic,
            // Long handshake timeouts: the silent connections admitted here must outlive a slow machine's
            // test (they were closed by the 5 s defaults on a loaded CI run).
            settings: [
                "devices.max_connections=2", "provider.max_connections_per_address=2",
                "devices.upgrade_timeout_seconds=300", "provider.handshake_timeout_seconds=300",
            ]
        ) { setup in
            let device = try await Self.silentConnection(port: setup.gateway.devicePort, group: setup.group)
            let provider = try await Self.silentConnection(port: setup.gateway.providerPort, group: setup.group)
            let refusedDevice = try await Self.silentConnection(port: setup.gateway.devicePort, group: setup.group)
            let refusedProvider = try await Self.silentConnection(port: setup.gateway.providerPort, group: setup.group)
            try await eventually("the excess is closed at accept") {
                !refusedDevice.isActive && !refusedProvider.isActive
            }
            #expect(device.isActive && provider.isActive)
            #expect(try await setup.post(silent: false) == 200, "the provider client in still works")
            try await eventually("and the device in still gets its pushes") {
                setup.gateway.services.hub.counters.delivered == 1
            }
            let metrics = try await setup.admin("/metrics").body
            #expect(
                metrics.contains(#"pushgate_connections_refused_total{listener="devices",reason="listener_cap"} 1"#))
            #expect(
                metrics.contains(#"pushgate_connections_refused_total{listener="provider",reason="address_cap"} 1"#))
            #expect(metrics.contains(#"pushgate_connections_open{listener="devices"} 2"#))
            try await device.close()
            try await provider.close()
        }
    }

    @Test func aGateCountsAndReleasesByAddress() {
        let gate = ConnectionGate(
            name: "test", limits: .init(maxConnections: 3, maxPerAddress: 2, handshakeTimeout: .seconds(5)),
            logger: Logger(label: "test"))
        #expect(gate.admit("10.0.0.1") == nil)
        #expect(gate.admit("10.0.0.1") == nil)
        #expect(gate.admit("10.0.0.1") == .addressCap)
        #expect(gate.admit("10.0.0.2") == nil)
        #expect(gate.admit("10.0.0.3") == .listenerCap)
        gate.release("10.0.0.1")
        #expect(gate.admit("10.0.0.3") == nil)
        #expect(gate.figures.open == 3)
        #expect(gate.figures.refusedAddressCap == 1)
        #expect(gate.figures.refusedListenerCap == 1)
    }
}
