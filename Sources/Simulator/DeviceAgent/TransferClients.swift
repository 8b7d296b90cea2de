import AsyncHTTPClient
import DescriptorLimit
import NIOCore

/// The HTTP clients a fleet fetches with (iPhones their content, plain agents their wakes' URL): one for
/// each `devicesPerClient` devices, as each real iPhone has its own connections — not one client for the
/// whole fleet.
///
/// A transfer that waits for a connection (one being opened, or none free) waits in its client's queue,
/// and every cancel or connection-wait timeout of a waiting one searches that queue, under the client's
/// one lock, on an event loop. 300 iPhones whose users open every second keep ~900 transfers under way
/// (a full `swift test` on 2 cores); with one client for all of them, on a loaded machine the queue
/// grew faster than the loops could open connections, until both loops did nothing but search it
/// (perf: 88 % of the samples under the pool's lock, in `RequestQueue.remove` and
/// `cancelRequestTimeout`) and a gateway sharing them stopped committing. A client of 64 devices keeps
/// its queue, and what one search costs, to a few hundred transfers at most, and its lock to its own.
enum TransferClients {
    static let devicesPerClient = 64
    /// iOS's connections per host for one session (`URLSessionConfiguration.httpMaximumConnectionsPerHost`).
    static let perDevice = 4
    /// The fleet's connections when the descriptors leave no room for more (what a fleet of any size
    /// had before it was split).
    static let floor = 512

    /// `devices`' clients (`clientIndex(of:)` says whose).
    static func make(devices: Int, group: any EventLoopGroup) -> [HTTPClient] {
        let count = max(1, (devices + devicesPerClient - 1) / devicesPerClient)
        var configuration = HTTPClient.Configuration()
        // Paced background downloads hold their connections for long.
        configuration.connectionPool = .init(
            idleTimeout: .seconds(30),
            concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerClient(devices: devices, clients: count))
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(120))
        return (0..<count).map { _ in HTTPClient(eventLoopGroupProvider: .shared(group), configuration: configuration) }
    }

    static func clientIndex(of device: Int) -> Int { device / devicesPerClient }

    /// Each client's share of the fleet's connections (`limit`): the fleet never holds more, so a
    /// fleet the descriptors leave no room for holds no more than it did with one client.
    static func connectionsPerClient(devices: Int, clients: Int, descriptors: Int = DescriptorLimit.current()) -> Int {
        max(1, limit(devices: devices, descriptors: descriptors) / max(1, clients))
    }

    /// The fleet's connections: four a device, within `descriptors` — each device's WebSocket and each
    /// transfer's connection take one here, and as many again in this process when the gateway and the
    /// content server run in it (the demo, the tests); 256 are left for everything else.
    static func limit(devices: Int, descriptors: Int) -> Int {
        let room = (descriptors - 2 * devices) / 2 - 256
        return max(floor, min(perDevice * devices, room))
    }
}
