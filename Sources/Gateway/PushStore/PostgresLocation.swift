import Foundation

/// Where a PostgreSQL database is, from `store.postgres.url`:
/// `postgres://user:password@host:port/database` (`postgresql://` too; port 5432 by default).
struct PostgresLocation: Sendable {
    var host: String
    var port: Int
    var user: String
    var password: String?
    /// nil: the server's default (the user's name).
    var database: String?

    init(url: String) throws {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme),
            let host = components.host, !host.isEmpty, let user = components.user, !user.isEmpty
        else {
            throw StoreError(
                "store.postgres.url: expected postgres://user:password@host:port/database, got '\(Self.redacted(url))'")
        }
        self.host = host
        port = components.port ?? 5432
        self.user = user
        password = components.password
        let database = String(components.path.drop { $0 == "/" })
        self.database = database.isEmpty ? nil : database
    }

    /// The URL without its password, for messages.
    var place: String { "postgres://\(user)@\(host):\(port)/\(database ?? "")" }

    /// `url` with its password replaced by `***`.
    static func redacted(_ url: String) -> String {
        guard var components = URLComponents(string: url), components.password != nil else { return url }
        components.password = "***"
        return components.string ?? "?"
    }
}
