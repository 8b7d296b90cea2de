import ArgumentParser
import DeviceAgent
import Foundation

/// `host:port,host:port,…` (an IPv6 host in brackets: `[::1]:2199`), as `--endpoints` takes it.
func parseEndpoints(_ text: String, flag: String) throws -> [DeviceAgent.Endpoint] {
    let items = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    guard !items.isEmpty else { throw ValidationError("\(flag): expected host:port,host:port…, got '\(text)'") }
    return try items.map { item in
        guard let colon = item.lastIndex(of: ":"), let port = Int(item[item.index(after: colon)...]),
            (1...65535).contains(port)
        else { throw ValidationError("\(flag): '\(item)' is not host:port (a port from 1 to 65535)") }
        var host = String(item[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty else { throw ValidationError("\(flag): '\(item)' has no host") }
        return DeviceAgent.Endpoint(host: host, port: port)
    }
}
