import Foundation

/// Where a server listens, from a flag's `http(s)://host:port`.
public enum ServerURL {
    /// Host, port (the scheme's own when none is given) and whether it is https; a message naming the
    /// flag otherwise.
    public static func parse(_ text: String, flag: String) throws(IPhoneFleetError) -> (
        host: String, port: Int, tls: Bool
    ) {
        guard let url = URL(string: text), let scheme = url.scheme, let host = url.host,
            scheme == "http" || scheme == "https"
        else { throw .usage("\(flag) must look like https://host:port or http://host:port, got '\(text)'") }
        return (host, url.port ?? (scheme == "https" ? 443 : 80), scheme == "https")
    }
}
