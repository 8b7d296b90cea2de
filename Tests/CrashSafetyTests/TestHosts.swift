import ChildProcess
import Foundation

/// Hosts of their own for gateway nodes: network namespaces the test makes, each with one address on a
/// bridge (in a namespace of its own, as a switch), and this process's namespace on the same bridge as
/// the clients' host. Nothing reaches a node over loopback; PostgreSQL (listening on loopback here) is
/// reached through a relay (`socat`) on this host's address on the bridge, as a database on a machine of
/// its own. Made by `ip` (iproute2) as root; removed with its namespaces.
struct TestHosts {
    /// The clients' host (this process) on the bridge.
    static let clientAddress = "10.203.57.1"
    let suffix = String(UUID().uuidString.prefix(6)).lowercased()
    var namespaces: [String] = []
    private(set) var relay: ChildProcess?

    /// Whether hosts can be made here: root, `ip` and `socat` (`.ci/run` installs both).
    static var available: Bool {
        geteuid() == 0
            && ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].contains(where: FileManager.default.isExecutableFile)
            && ["/usr/bin/socat", "/bin/socat"].contains(where: FileManager.default.isExecutableFile)
    }

    /// Runs `ip` with `arguments`; throws with the command if it fails.
    static func ip(_ arguments: [String]) throws {
        let status = try ChildProcess("ip", arguments).waitUntilExit()
        guard status == 0 else { throw HostSetupFailed(command: "ip " + arguments.joined(separator: " ")) }
    }

    struct HostSetupFailed: Error, CustomStringConvertible {
        var command: String
        var description: String { "\(command) failed" }
    }

    var bridge: String { "sw-\(suffix)" }

    /// Makes the bridge and this process's link to it.
    mutating func makeBridge() throws {
        try Self.ip(["netns", "add", bridge])
        namespaces.append(bridge)
        try Self.ip(["-n", bridge, "link", "add", "br0", "type", "bridge"])
        try Self.ip(["-n", bridge, "link", "set", "br0", "up"])
        try Self.ip(["link", "add", "c-\(suffix)", "type", "veth", "peer", "name", "s-c-\(suffix)"])
        try Self.ip(["link", "set", "s-c-\(suffix)", "netns", bridge])
        try Self.ip(["-n", bridge, "link", "set", "s-c-\(suffix)", "master", "br0", "up"])
        try Self.ip(["addr", "add", Self.clientAddress + "/24", "dev", "c-\(suffix)"])
        try Self.ip(["link", "set", "c-\(suffix)", "up"])
    }

    /// A host `name` with `address` on the bridge: its namespace's name.
    mutating func makeHost(_ name: String, address: String) throws -> String {
        let namespace = "\(name)-\(suffix)"
        try Self.ip(["netns", "add", namespace])
        namespaces.append(namespace)
        let (inside, onBridge) = ("h-\(name)-\(suffix)", "s-\(name)-\(suffix)")
        try Self.ip(["link", "add", inside, "type", "veth", "peer", "name", onBridge])
        try Self.ip(["link", "set", inside, "netns", namespace])
        try Self.ip(["link", "set", onBridge, "netns", bridge])
        try Self.ip(["-n", bridge, "link", "set", onBridge, "master", "br0", "up"])
        try Self.ip(["-n", namespace, "addr", "add", address + "/24", "dev", inside])
        try Self.ip(["-n", namespace, "link", "set", inside, "up"])
        try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
        return namespace
    }

    /// PostgreSQL at `url` (on loopback) reached from the hosts: a relay on the clients' address; the URL
    /// the hosts use.
    mutating func relayDatabase(_ url: String) throws -> String {
        var components = URLComponents(string: url)!
        let port = 20_000 + Int.random(in: 0..<20_000)
        relay = try ChildProcess(
            "socat",
            [
                "TCP-LISTEN:\(port),bind=\(Self.clientAddress),fork,reuseaddr",
                "TCP:\(components.host ?? "127.0.0.1"):\(components.port ?? 5432)",
            ])
        components.host = Self.clientAddress
        components.port = port
        return components.string!
    }

    /// Removes the relay and every namespace (their links go with them).
    func remove() {
        relay?.kill(SIGKILL)
        _ = relay?.waitUntilExit()
        for namespace in namespaces.reversed() { try? Self.ip(["netns", "del", namespace]) }
    }
}
