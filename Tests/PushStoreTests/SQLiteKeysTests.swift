import EmbeddedSQLite
import Foundation
import PushModel
import PushPolicy
import Testing

@testable import PushStore

/// Schema version 9 keeps a notification's apns-id and device token as bytes on SQLite (16 and 32, not
/// 36 and 64 hex digits); an apns-id sent with upper-case digits keeps its text.
@Suite struct SQLiteKeysTests {
    static let lowerID = "0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5b"
    static let upperID = "0190A1B2-C3D4-7E5F-8A6B-0C1D2E3F4A5C"
    static let token64 = String(repeating: "0123456789abcdef", count: 4)
    static let token80 = String(repeating: "fedcba9876543210", count: 5)

    /// A database of version 8 (its apns-ids and tokens as text) is rebuilt at start: every notification
    /// reads back as it was, is found by its apns-id as sent, takes outcomes, and a repeated (team, id)
    /// is still stored once.
    @Test func aVersion8DatabaseKeepsEveryNotificationThroughTheRebuild() async throws {
        let (directory, path) = Self.place()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let old = try SQLiteConnection(path: path)
        for statement in SQLiteStore.migrations.prefix(8).joined() { try old.execute(statement) }
        try old.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        try old.execute("INSERT INTO schema_version (version) VALUES (8)")
        let insert = try old.prepare(
            """
            INSERT INTO notifications (team_id, apns_id, device_token, topic, bundle_id, push_type, priority,
                class, payload, received_at, expires_at, device_id, state, rule, finished_at)
            VALUES ('TEAM000001', ?, ?, 'com.example.a', 'com.example.a', 'background', 5, 'silent', ?, ?, ?,
                'dev-a', ?, ?, ?)
            """)
        let t0 = StoreContractTests.t0.milliseconds
        let later = t0 + 86_400_000
        try insert.run(Self.lowerID, Self.token64, [UInt8]("{}".utf8), t0, later, 0, "held_over_budget", nil as Int64?)
        try insert.run(Self.upperID, Self.token64, [UInt8]("{}".utf8), t0, later, 0, "held_over_budget", nil as Int64?)
        let longID = "0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5d"
        try insert.run(longID, Self.token80, [UInt8]("{}".utf8), t0, later, 0, "held_over_budget", nil as Int64?)
        let deliveredID = "0190a1b2-c3d4-7e5f-8a6b-0c1d2e3f4a5e"
        try insert.run(deliveredID, Self.token64, [UInt8](), t0, later, 1, "alerting", t0)
        try old.close()

        let store = try SQLiteStore(path: path)
        let snapshot = try await store.open(now: StoreContractTests.t0)
        #expect(snapshot.pending.map(\.notification.id.value) == [Self.lowerID, Self.upperID, longID])
        #expect(snapshot.pending.map(\.notification.deviceToken.hex) == [Self.token64, Self.token64, Self.token80])
        #expect(snapshot.pending[2].notification.deviceToken.isInline == false)
        #expect(
            try Self.rows(
                path, "SELECT typeof(apns_id), length(apns_id), typeof(device_token), length(device_token)",
                columns: 4)
                == [
                    ["blob", "16", "blob", "32"], ["text", "36", "blob", "32"], ["blob", "16", "blob", "40"],
                    ["blob", "16", "blob", "32"],
                ])

        let delivered = try #require(try await store.notification(APNsID(header: deliveredID)!))
        #expect(delivered.state == .delivered && delivered.notification.payload.isEmpty)
        var outcomes = StoreBatch()
        for id in [Self.lowerID, Self.upperID] {
            outcomes.outcomes.append(
                NotificationOutcome(
                    apnsID: APNsID(header: id)!, state: .delivered, rule: nil, at: StoreContractTests.t0))
        }
        // The same (team, id) again: not stored twice.
        outcomes.notifications = [Self.stored(id: Self.lowerID, token: Self.token64, payload: [1])]
        try await store.commit(outcomes)
        let upper = try #require(try await store.notification(APNsID(header: Self.upperID)!))
        #expect(upper.notification.id.value == Self.upperID && upper.state == .delivered)
        let lower = try #require(try await store.notification(APNsID(header: Self.lowerID)!))
        #expect(lower.state == .delivered && lower.notification.payload == Array("{}".utf8))
        #expect(try Self.rows(path, "SELECT COUNT(*)") == [["4"]])
        try await store.close()
    }

    /// New rows: a lower-case apns-id as 16 bytes, an upper-case one as sent, tokens as their bytes;
    /// each reads back exactly, by lookup and after a restart.
    @Test func newNotificationsAreWrittenAsBytesAndReadBackAsSent() async throws {
        let (directory, path) = Self.place()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try SQLiteStore(path: path)
        _ = try await store.open(now: StoreContractTests.t0)
        var batch = StoreBatch()
        batch.notifications = [
            Self.stored(id: Self.lowerID, token: Self.token64), Self.stored(id: Self.upperID, token: Self.token80),
        ]
        try await store.commit(batch)
        #expect(
            try Self.rows(path, "SELECT typeof(apns_id), hex(apns_id), hex(device_token)", columns: 3)
                == [
                    [
                        "blob", Self.lowerID.replacingOccurrences(of: "-", with: "").uppercased(),
                        Self.token64.uppercased(),
                    ],
                    [
                        "text", Data(Self.upperID.utf8).map { String(format: "%02X", $0) }.joined(),
                        Self.token80.uppercased(),
                    ],
                ])
        for (id, token) in [(Self.lowerID, Self.token64), (Self.upperID, Self.token80)] {
            let found = try #require(try await store.notification(APNsID(header: id)!))
            #expect(found.notification.id.value == id && found.notification.deviceToken.hex == token)
        }
        try await store.close()
        let reopened = try SQLiteStore(path: path)
        let snapshot = try await reopened.open(now: StoreContractTests.t0)
        #expect(snapshot.pending.map(\.notification.id.value) == [Self.lowerID, Self.upperID])
        #expect(snapshot.pending.map(\.notification.deviceToken.hex) == [Self.token64, Self.token80])
        try await reopened.close()
    }

    /// `Samples.stored(1)` with another id and token.
    static func stored(id: String, token: String, payload: [UInt8]? = nil) -> StoredNotification {
        let sample = Samples.stored(1, payload: payload)
        let push = sample.notification
        return StoredNotification(
            notification: PushNotification(
                id: APNsID(header: id)!, deviceToken: DeviceToken(token, lengths: 2...100)!, topic: push.topic,
                bundleID: push.bundleID, pushType: push.pushType, priority: push.priority, expiration: push.expiration,
                collapseID: nil, notificationClass: push.notificationClass, payload: push.payload,
                teamID: push.teamID, receivedAt: push.receivedAt),
            expiresAt: sample.expiresAt, deviceID: sample.deviceID, state: sample.state, rule: sample.rule)
    }

    static func place() -> (directory: String, path: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "pushgate-keys-\(UUID().uuidString.prefix(8))"
        ).path
        return (directory, directory + "/pushgate.sqlite")
    }

    /// `select` (of `columns` values) over the notifications in order, each value as text.
    static func rows(_ path: String, _ select: String, columns: Int32 = 1) throws -> [[String]] {
        let connection = try SQLiteConnection(path: path, readOnly: true)
        defer { try? connection.close() }
        var rows: [[String]] = []
        let statement = try connection.prepare(select + " FROM notifications ORDER BY seq")
        try statement.query { row in
            rows.append((0..<columns).map { row[$0] as String })
        }
        return rows
    }
}
