import ChildProcess
import Foundation

/// What `pushgate fleet up` started, kept in `<data_dir>/fleet/fleet.json` (0600: it holds the database's
/// URL) for `fleet status` and `fleet down`.
public struct NodeRecord: Codable, Equatable {
    public struct Node: Codable, Equatable {
        public var name: String
        public var pid: Int32
        public var dataDirectory: String
        public var log: String
        /// The provider API's TLS and h2c ports, the device ports (plain, TLS) and the admin port (0: off).
        public var providerTLSPort: Int
        public var providerH2CPort: Int
        public var devicesPort: Int
        public var devicesTLSPort: Int
        public var adminPort: Int
        /// The channel-management API's TLS and h2c ports (0: off; absent in a record of the version
        /// before them).
        public var channelsTLSPort = 0
        public var channelsH2CPort = 0
    }

    public var nodes: [Node]
    /// The database the nodes share.
    public var postgresURL: String
    /// The cluster `fleet up` started (nil: the database was given), stopped by `fleet down`.
    public var ownPostgres: OwnPostgres?

    public struct OwnPostgres: Codable, Equatable {
        public var directory: String
        public var port: Int
    }

    public static func directory(dataDirectory: String) -> String {
        (dataDirectory as NSString).appendingPathComponent("fleet")
    }
    public static func path(dataDirectory: String) -> String { directory(dataDirectory: dataDirectory) + "/fleet.json" }

    public static func read(dataDirectory: String) throws -> NodeRecord? {
        let path = path(dataDirectory: dataDirectory)
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        do {
            return try JSONDecoder().decode(NodeRecord.self, from: data)
        } catch {
            throw NodesFailure("\(path) is not a fleet's record (\(error)); remove it once its nodes are stopped")
        }
    }

    public func write(dataDirectory: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let path = Self.path(dataDirectory: dataDirectory)
        guard
            FileManager.default.createFile(
                atPath: path, contents: try encoder.encode(self), attributes: [.posixPermissions: 0o600])
        else { throw NodesFailure("cannot write \(path)") }
    }

    public static func remove(dataDirectory: String) {
        try? FileManager.default.removeItem(atPath: path(dataDirectory: dataDirectory))
    }
}

extension NodeRecord.Node {
    /// Reads a record of the version before the channel-management ports too (they are 0 there).
    public init(from decoder: any Decoder) throws {
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

extension NodeRecord.Node {
    /// Whether the node's process is running: its pid exists and is this node's `pushgate serve` (a pid
    /// reused by another process after a reboot is not taken for the node).
    public var isRunning: Bool {
        guard ChildProcess.exists(pid) else { return false }
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return true }
        let arguments = data.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        return arguments.contains("serve") && arguments.contains("data_dir=\(dataDirectory)")
    }
}

/// A fleet command's refusal: the message says what to do.
public struct NodesFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
