import Foundation
import Gateway

/// Where `pushgate fleet up` puts each node: its name, directory, log and ports, and the settings every
/// node is started with. Node i (from 0) takes each configured port plus i × the span of the configured
/// ports, so the nodes' ports follow one another without overlapping (the defaults, 2195–2201, make node
/// 1 2195–2201, node 2 2202–2208, …).
public struct NodePlan {
    public let dataDirectory: String
    public let fleetDirectory: String
    public let nodeCount: Int
    /// The configured ports, by key (0 for a listener that is off).
    public let ports: [(key: String, port: Int)]
    public let stride: Int
    /// Settings naming the files every node shares (the base data directory's registries).
    public let sharedFiles: [String: String]
    /// Whether a listener needs a TLS certificate (the provider's or the devices').
    public let needsTLS: Bool

    public init(configuration: GatewayConfiguration, nodes: Int) throws {
        dataDirectory = Self.absolute(configuration.dataDirectory)
        fleetDirectory = NodeRecord.directory(dataDirectory: dataDirectory)
        nodeCount = nodes
        guard configuration.admin.enabled else {
            throw NodesFailure(
                "admin.enabled is false: fleet up waits for each node's /ready and fleet status reads its admin API")
        }
        var ports: [(key: String, port: Int)] = []
        for (key, listener) in [
            ("provider.tls.port", configuration.tlsListener), ("provider.h2c.port", configuration.h2cListener),
            ("devices.port", configuration.deviceListener), ("devices.tls.port", configuration.deviceTLSListener),
            ("admin.port", configuration.admin), ("channels.tls.port", configuration.channelTLSListener),
            ("channels.h2c.port", configuration.channelH2CListener),
        ] {
            guard listener.enabled else {
                ports.append((key, 0))
                continue
            }
            guard listener.port != 0 else {
                throw NodesFailure(
                    "\(key) is 0 (a free port): fleet up gives each node its own port from it, so set one")
            }
            ports.append((key, listener.port))
        }
        let used = ports.map(\.port).filter { $0 != 0 }
        stride = (used.max() ?? 0) - (used.min() ?? 0) + 1
        guard (used.max() ?? 0) + stride * (nodes - 1) <= 65535 else {
            throw NodesFailure(
                "\(nodes) nodes from port \(used.min() ?? 0) in steps of \(stride) pass 65535: lower the ports or --nodes"
            )
        }
        self.ports = ports
        sharedFiles = [
            "provider.auth.keys_file": Self.absolute(configuration.keysFile),
            "provider.auth.certificates_file": Self.absolute(configuration.certificatesFile),
            "devices.tokens_file": Self.absolute(configuration.tokensFile),
        ]
        needsTLS = configuration.tlsListener.enabled || configuration.deviceTLSListener.enabled
    }

    /// Node `index` (from 0), before it runs (pid 0).
    public func node(_ index: Int) -> NodeRecord.Node {
        let name = "node-\(index + 1)"
        func port(_ key: String) -> Int {
            let base = ports.first { $0.key == key }?.port ?? 0
            return base == 0 ? 0 : base + stride * index
        }
        return NodeRecord.Node(
            name: name, pid: 0, dataDirectory: fleetDirectory + "/" + name, log: fleetDirectory + "/\(name).log",
            providerTLSPort: port("provider.tls.port"), providerH2CPort: port("provider.h2c.port"),
            devicesPort: port("devices.port"), devicesTLSPort: port("devices.tls.port"), adminPort: port("admin.port"),
            channelsTLSPort: port("channels.tls.port"), channelsH2CPort: port("channels.h2c.port"))
    }

    /// The settings that make `node` one node of the fleet (after the user's own `--set`s, so these win).
    public func overrides(for node: NodeRecord.Node) -> [String: String] {
        var settings = [
            "data_dir": node.dataDirectory, "store.backend": "postgres", "store.postgres.node_id": node.name,
        ]
        let byKey = [
            "provider.tls.port": node.providerTLSPort, "provider.h2c.port": node.providerH2CPort,
            "devices.port": node.devicesPort, "devices.tls.port": node.devicesTLSPort, "admin.port": node.adminPort,
            "channels.tls.port": node.channelsTLSPort, "channels.h2c.port": node.channelsH2CPort,
        ]
        for (key, port) in byKey where port != 0 { settings[key] = String(port) }
        return settings
    }

    public static func absolute(_ path: String) -> String {
        let url = URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath))
        return url.standardizedFileURL.path
    }
}
