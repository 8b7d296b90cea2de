import EmbeddedSQLite
import Foundation
import PushModel
import PushPolicy
import PushStore
import TestSupport
import Testing

/// A backend the contract suite runs against, and where its data lives.
enum StoreUnderTest: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case memory
    case sqlite
    /// With `TEST_POSTGRES_URL` (a database whose user may create databases; `.ci/run` starts a
    /// server and sets it): each test gets a database of its own.
    case postgres

    var testDescription: String { rawValue }

    static let postgresURL = TestPostgres.url

    static var available: [StoreUnderTest] {
        if postgresURL == nil {
            print("PostgreSQL contract tests skipped: set TEST_POSTGRES_URL (see docs/store.md)")
            return [.memory, .sqlite]
        }
        return allCases
    }

    func makePlace() async throws -> StorePlace {
        switch self {
        case .memory:
            return StorePlace(kind: self, path: "", memory: MemoryStore())
        case .sqlite:
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "pushgate-store-\(UUID().uuidString.prefix(8))")
            return StorePlace(kind: self, path: directory.appendingPathComponent("pushgate.sqlite").path, memory: nil)
        case .postgres:
            return StorePlace(
                kind: self, path: try await TestPostgres.makeDatabase(prefix: "pushgate_test"), memory: nil)
        }
    }
}

/// Runs `body` with a task group in which each store it opens (`StorePlace.open(in:)`) runs its
/// background work (PostgreSQL's connection pool) until `body` ends.
func withStores<Result>(_ body: (inout ThrowingTaskGroup<Void, any Error>) async throws -> Result) async throws
    -> Result
{
    try await withThrowingTaskGroup(of: Void.self) { stores in
        defer { stores.cancelAll() }
        return try await body(&stores)
    }
}

/// Opens the same data again, as a restarted gateway would.
struct StorePlace: Sendable {
    var kind: StoreUnderTest
    var path: String
    var memory: MemoryStore?

    func open() async throws -> any StoreBackend {
        switch kind {
        case .memory: return memory!
        case .sqlite: return try SQLiteStore(path: path)
        case .postgres: return try PostgresStore(url: path)
        }
    }

    /// Opens the store, its background work a child of `stores` (`withStores`).
    func open(in stores: inout ThrowingTaskGroup<Void, any Error>) async throws -> any StoreBackend {
        let store = try await open()
        stores.addTask { await store.run() }
        return store
    }

    /// Runs a statement on the store's database behind its back.
    func execute(_ sql: String) async throws {
        switch kind {
        case .memory: break
        case .sqlite: try Samples.sqlite(path, sql)
        case .postgres: try await TestPostgres.run(path, sql)
        }
    }

    func remove() async {
        switch kind {
        case .memory: break
        case .sqlite: try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent)
        case .postgres: await TestPostgres.dropDatabase(path)
        }
    }
}

enum Samples {
    static func id(_ n: Int) -> APNsID { APNsID(header: String(format: "00000000-0000-4000-8000-%012d", n))! }
    static func token(_ n: Int) -> String { String(format: "%064x", n) }

    static func stored(
        _ n: Int, team: String? = "TEAM000001", state: NotificationState = .pending, rule: Rule? = .overBudget,
        kind: NotificationClass = .silent, collapse: String? = nil, payload: [UInt8]? = nil,
        expiresAt: UnixTime? = StoreContractTests.t0.adding(seconds: 86400), expiration: Expiration = .storeByDefault,
        receivedAt: UnixTime = StoreContractTests.t0
    ) -> StoredNotification {
        let push = PushNotification(
            id: id(n), deviceToken: DeviceToken(token(n))!, topic: Topic("com.example.a")!, bundleID: "com.example.a",
            pushType: kind == .silent ? .background : .alert, priority: kind == .silent ? .conservePower : .immediate,
            expiration: expiration, collapseID: collapse.flatMap { CollapseID(header: $0) }, notificationClass: kind,
            payload: payload ?? Array(#"{"aps":{"content-available":1}}"#.utf8), teamID: team,
            receivedAt: receivedAt)
        return StoredNotification(
            notification: push, expiresAt: expiration == .immediateOnly ? nil : expiresAt, deviceID: "dev-a",
            state: state, rule: rule)
    }

    static func budget(tokens: Float?, state: AppState = .background) -> ThrottleBudget {
        ThrottleBudget(
            tokens: tokens, strikes: 1.5, settledAt: StoreContractTests.t0.milliseconds,
            coolingUntil: StoreContractTests.t0.milliseconds + 60_000, appState: state)
    }

    /// Runs a statement on a SQLite file behind the store's back, as an operator would.
    static func sqlite(_ path: String, _ sql: String) throws {
        let connection = try SQLiteConnection(path: path)
        connection.waitForLocks(milliseconds: 10_000)
        try connection.execute(sql)
        try connection.close()
    }
}
