import Foundation
import PostgresNIO

/// The PostgreSQL server the tests may use: `TEST_POSTGRES_URL` names a database whose user may create
/// databases (`.ci/run` starts one and sets it; docs/store.md shows how to run them locally). Each test
/// that needs one makes a database of its own and drops it afterwards.
public enum TestPostgres {
    public static let url = ProcessInfo.processInfo.environment["TEST_POSTGRES_URL"]

    /// Runs a statement on the database `url` names, behind the store's back, as an operator would.
    public static func run(_ url: String, _ sql: String) async throws {
        _ = try await withClient(url) { try await $0.query(PostgresQuery(unsafeSQL: sql)) }
    }

    /// The first column of the first row a query returns, as an integer (nil: no row).
    public static func integer(_ url: String, _ sql: String) async throws -> Int? {
        try await withClient(url) { client in
            for try await value in try await client.query(PostgresQuery(unsafeSQL: sql)).decode(Int64.self) {
                return Int(value)
            }
            return nil
        }
    }

    /// A client of the database `url` names, running while `body` does.
    private static func withClient<R: Sendable>(
        _ url: String, _ body: (PostgresClient) async throws -> R
    ) async throws -> R {
        let components = URLComponents(string: url)!
        let configuration = PostgresClient.Configuration(
            host: components.host!, port: components.port ?? 5432, username: components.user!,
            password: components.password, database: String(components.path.dropFirst()), tls: .disable)
        let client = PostgresClient(configuration: configuration)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }

    /// A new database on the server; returns its URL.
    public static func makeDatabase(prefix: String) async throws -> String {
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        try await run(url!, "CREATE DATABASE \(name)")
        var components = URLComponents(string: url!)!
        components.path = "/" + name
        return components.string!
    }

    public static func dropDatabase(_ databaseURL: String) async {
        let name = URLComponents(string: databaseURL)!.path.dropFirst()
        try? await run(url!, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }
}
