import DescriptorLimit
import Testing

@testable import DeviceAgent

/// A fleet's clients for its content server: one for each 64 devices, sharing iOS's four connections a
/// device within the descriptors — never fewer than the fleet had before, nor more than the descriptors
/// leave room for.
@Suite struct TransferClientsTests {
    @Test func aFleetGetsFourConnectionsADeviceWithinItsDescriptors() {
        #expect(TransferClients.limit(devices: 300, descriptors: 20_000) == 1_200)
        #expect(TransferClients.limit(devices: 10, descriptors: 20_000) == 512, "the floor")
        // (20,000 − 2 × 5,000) / 2 − 256: the descriptors bound it, not the devices.
        #expect(TransferClients.limit(devices: 5_000, descriptors: 20_000) == 4_744)
        #expect(TransferClients.limit(devices: 10_000, descriptors: 20_000) == 512, "no room: the floor")
        #expect(DescriptorLimit.current() > 0)
    }

    @Test func eachClientServesItsSixtyFourDevices() {
        #expect(TransferClients.clientIndex(of: 0) == 0 && TransferClients.clientIndex(of: 63) == 0)
        #expect(TransferClients.clientIndex(of: 64) == 1 && TransferClients.clientIndex(of: 299) == 4)
        // 300 devices, 5 clients: 1,200 / 5 each; 10,000 devices, 157 clients: 512 / 157 each (471 in
        // all, within the 512 the fleet had with one client).
        #expect(TransferClients.connectionsPerClient(devices: 300, clients: 5, descriptors: 20_000) == 240)
        #expect(TransferClients.connectionsPerClient(devices: 10_000, clients: 157, descriptors: 20_000) == 3)
        #expect(TransferClients.connectionsPerClient(devices: 100_000, clients: 1_563, descriptors: 20_000) == 1)
    }
}
