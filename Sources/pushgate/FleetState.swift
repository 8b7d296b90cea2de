import ChildProcess
import Foundation

/// What `pushgate fleet up` started, kept in `<data_dir>/fleet/fleet.json` (0600: it holds the database's
/// URL) for `fleet status` and `fleet down`.
struct FleetState: Codable, Equatable {
    struct Node: Codable, Equatable {
        var name: String
        var pid: Int32
        var dataDirectory: String
        var log: String
        /// The provider API's TLS and h2c ports, the device ports (plain, TLS) and the admin port (0: off).
        var providerTLSPort: Int
        var providerH2CPort: Int
        var devicesPort: Int
        var devicesTLSPort: Int
        var adminPort: Int
        /// The channel-management API's TLS and h2c ports (0: off; absent in a record of the version
        /// before them).
        var channelsTLSPort = 0
        var channelsH2CPort = 0
    }

    var nodes: [Node]
    /// The database the nodes share.
    var postgresURL: String
    /// The cluster `fleet up` started (nil: the database was given), stopped by `fleet down`.
    var ownPostgres: OwnPostgres?

    struct OwnPostgres: Codable, Equatable {
        var directory: String
        var port: Int
    }

    static func directory(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("fleet")
    }
    static func path(dataDirectory: String) -> String { directory(dataDirectory: dataDirectory) + "/fleet.json" }

    static func read(dataDirectory: String) throws -> FleetState? {
        let path = path(dataDirectory: dataDirectory)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(FleetState.self, from: data)
        } catch {
            throw FleetFailure("\(path) is not a fleet's record (\(error)); remove it once its nodes are stopped")
        }
    }

    func write(dataDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = Self.path(dataDirectory: dataDirectory)
        guard
            FileManager.default.createFile(
                atPath: path, contents: try encoder.encode(self), attributes: [.posixPermissions: 0o600])
        else { throw FleetFailure("cannot write \(path)") }
    }

    static func remove(dataDirectory: String) {
        try? FileManager.default.removeItem(atPath: path(dataDirectory: dataDirectory))
    }
}

extension FleetState.Node {
    /// Reads a record of the version before the channel-management ports too (they are 0 there).
    init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        name = try values.decode(String.self, forKey: .name)
        pid = try values.decode(Int32.self, forKey: .pid)
        dataDirectory = try values.decode(String.self, forKey: .dataDirectory)
        log = try values.decode(String.self, forKey: .log)
        providerTLSPort = try values.decode(Int.self, forKey: .providerTLSPort)
        providerH2CPort = try values.decode(Int.self, forKey: .providerH2CPort)
        devicesPort = try values.decode(Int.self, forKey: .devicesPort)
        devicesTLSPort = try values.decode(Int.self, forKey: .devicesTLSPort)
        adminPort = try values.decode(Int.self, forKey: .adminPort)
        channelsTLSPort = try values.decodeIfPresent(Int.self, forKey: .channelsTLSPort) ?? 0
        channelsH2CPort = try values.decodeIfPresent(Int.self, forKey: .channelsH2CPort) ?? 0
    }
}

extension FleetState.Node {
    /// Whether the node's process is running: its pid exists and is this node's `pushgate serve` (a pid
    /// reused by another process after a reboot is not taken for the node).
    var isRunning: Bool {
        guard ChildProcess.exists(pid) else { return false }
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return true }
        let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return arguments.contains("serve") && arguments.contains("data_dir=\(dataDirectory)")
    }
}

/// A fleet command's refusal: the message says what to do.
struct FleetFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
