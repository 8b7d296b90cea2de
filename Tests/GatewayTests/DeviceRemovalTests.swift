import AdminAPI
import DeviceAgent
import DeviceHub
import Foundation
import Gateway
import GatewayFiles
import NIOHTTP1
import Testing

/// The operator's side of device identities on a real gateway: the enrolment secret it keeps in its data
/// directory, and `DELETE /v1/devices/<id>` (what `pushgate devices remove` sends).
@Suite(.timeLimit(.minutes(5))) struct DeviceRemovalTests {
    @Test func theGatewayKeepsItsEnrolmentSecretInItsDataDirectory() async throws {
        try await GatewayWithDevice.run(topic: "com.example.enrol", settings: []) { setup in
            let file = EnrolmentSecret.path(dataDirectory: setup.gateway.dataDirectory)
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            #expect(
                EnrolmentSecret.read(dataDirectory: setup.gateway.dataDirectory)
                    == setup.gateway.services.hub.settings.enrolmentSecret)
            // The device that registered used it (GatewayWithDevice gives it to the agent).
            #expect(setup.agent.identity != nil)
        }
    }

    @Test func removingADeviceOverTheAdminAPI() async throws {
        try await GatewayWithDevice.run(topic: "com.example.remove", settings: []) { setup in
            let id = try #require(setup.agent.identity?.deviceID)
            func delete(_ id: String) async throws -> Int {
                try await AdminClient.request(
                    .DELETE, host: "127.0.0.1", port: setup.gateway.adminPort, path: "/v1/devices/\(id)", token: nil
                ).status
            }
            #expect(try await delete(id) == 200)
            #expect(try await delete(id) == 409)
            #expect(try await delete("no-such-device") == 404)
            #expect(try await setup.post(silent: false) == 410)
            #expect(setup.gateway.services.hub.counters.devicesRemoved == 1)
        }
    }
}
