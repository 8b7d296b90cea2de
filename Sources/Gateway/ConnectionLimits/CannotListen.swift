import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// A listener that could not bind, named by its address and the setting that chose it, so that a gateway
/// that cannot start says which port to free or which key to change (not NIO's `bind(descriptor:…)`).
public struct CannotListen: Error, CustomStringConvertible {
    public let host: String
    public let port: Int
    /// The configuration key of the listener's port (`provider.h2c.port`, …); empty when there is none.
    public let setting: String
    public let underlying: any Error

    public var description: String {
        let named = setting.isEmpty ? "" : " (\(setting))"
        return "cannot listen on \(host):\(port)\(named): \(reason)"
    }

    private var reason: String {
        switch (underlying as? IOError)?.errnoCode {
        case EADDRINUSE: "another process holds that address; stop it, or choose another port"
        case EACCES: "permission denied (a port below 1024 needs privileges)"
        case EADDRNOTAVAIL: "no interface of this machine has that address"
        default: "\(underlying)"
        }
    }

    /// Runs `bind`, naming the listener if it fails.
    public static func naming<Bound>(
        host: String, port: Int, setting: String, _ bind: () async throws -> Bound
    ) async throws -> Bound {
        do {
            return try await bind()
        } catch {
            throw CannotListen(host: host, port: port, setting: setting, underlying: error)
        }
    }
}
