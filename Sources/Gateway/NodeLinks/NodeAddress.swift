/// Where a node's provider API takes routed pushes: `http://host:port` (h2c) or `https://host:port` (TLS),
/// an IPv6 host in brackets (`http://[::1]:2198`). Each node writes its own in the database
/// (`store.postgres.route_address`); the others read it from there.
public struct NodeAddress: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init(host: String, port: Int, tls: Bool) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// The address of a URL, or nil when it is none of the two forms.
    public init?(url: String) {
        let rest: Substring
        if url.hasPrefix("http://") {
            tls = false
            rest = url.dropFirst("http://".count)
        } else if url.hasPrefix("https://") {
            tls = true
            rest = url.dropFirst("https://".count)
        } else {
            return nil
        }
        let hostPart: Substring
        let portPart: Substring
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { return nil }
            hostPart = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            guard after.hasPrefix(":") else { return nil }
            portPart = after.dropFirst()
        } else {
            guard let colon = rest.lastIndex(of: ":") else { return nil }
            hostPart = rest[..<colon]
            portPart = rest[rest.index(after: colon)...]
        }
        let trimmedPort = portPart.hasSuffix("/") ? portPart.dropLast() : portPart
        guard !hostPart.isEmpty, !hostPart.contains("/"), let port = Int(trimmedPort), (1...65535).contains(port)
        else { return nil }
        host = String(hostPart)
        self.port = port
    }

    public var description: String {
        "\(tls ? "https" : "http")://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    }

    /// The `:authority` of its requests.
    var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
}
