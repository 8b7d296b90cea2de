import EmbeddedSQLite
import Foundation
import PushModel
import PushPolicy
import Synchronization

/// The embedded store: one SQLite file in WAL mode, on the SQLite that vapor/sqlite-nio compiles in
/// (`EmbeddedSQLite`). One connection writes, on a thread of its own; another reads (lookups, counts,
/// the snapshot at start). A commit is one transaction. With `synchronous: full` (the default) it is
/// on disk before its requests are answered, so a power loss does not lose it either: the writer's
/// connection commits to the log without syncing it, and `sync` (`SQLiteLogSync`, on a thread of its
/// own) syncs the log while the next commit is written. `normal` survives a crash of the process but
/// not of the machine (the log is synced only at checkpoints).
public final class SQLiteStore: StoreBackend {
    public let kind = "sqlite"
    public let path: String
    private let writer: SQLiteWorker
    private let reader: SQLiteWorker
    private let checkpointer: SQLiteCheckpointer
    /// Syncs the log after commits (`synchronous: full`); nil with `normal`.
    private let logSync: SQLiteLogSync?
    /// How far pruning has walked the notifications finished at receipt: every such row at or below this
    /// `seq` received before the last cutoff is gone (0 after a start: the first pass walks them all).
    private let walked = Mutex<Int64>(0)

    public enum Synchronous: String, Sendable, CaseIterable {
        case full
        case normal
    }

    /// `checkpointPages`: the WAL's size that starts a checkpoint (10,000 pages, ~40 MiB: a page changed
    /// by many commits is copied back once).
    public init(path: String, synchronous: Synchronous = .full, checkpointPages: Int32 = 10_000) throws {
        self.path = path
        let checkpointer = SQLiteCheckpointer(path: path, threshold: checkpointPages)
        self.checkpointer = checkpointer
        logSync = synchronous == .full ? SQLiteLogSync(database: path) : nil
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        }
        do {
            writer = try SQLiteWorker(path: path, label: "pushgate.store.writer") { db in
                try Self.tune(db)
                try db.execute("PRAGMA journal_mode = WAL")
                // Commits reach the log unsynced in both modes; with `full`, `sync` syncs it.
                try db.execute("PRAGMA synchronous = NORMAL")
                try checkpointer.install(on: db)
            }
            reader = try SQLiteWorker(path: path, label: "pushgate.store.reader", readOnly: true) { db in
                try Self.tune(db)
            }
        } catch {
            throw StoreError("cannot open the SQLite database at \(path): \(error)")
        }
    }

    /// Both connections: wait up to 10 s for another process's lock (an operator's `sqlite3`); pages
    /// read through memory and cached (64 MiB) instead of a read call each.
    private static func tune(_ db: SQLiteConnection) throws {
        db.waitForLocks(milliseconds: 10_000)
        try db.execute("PRAGMA cache_size = -65536")
        try db.execute("PRAGMA mmap_size = 1073741824")
    }

    /// `work` in one transaction on the writer's connection.
    private func write<T: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await writer.run { db in try db.transaction(immediate: true) { try work(db) } }
    }

    /// `work` in one transaction (one snapshot of the database) on the reader's connection.
    private func read<T: Sendable>(_ work: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await reader.run { db in try db.transaction(immediate: false) { try work(db) } }
    }

    // MARK: Schema

    /// Version n's statements are `migrations[n - 1]`.
    static let migrations: [[String]] = [
        [
            """
            CREATE TABLE devices (
                id TEXT PRIMARY KEY NOT NULL, secret_hash BLOB NOT NULL, created_at INTEGER NOT NULL)
            """,
            """
            CREATE TABLE tokens (
                token TEXT PRIMARY KEY NOT NULL, device_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                unregistered_at INTEGER)
            """,
            """
            CREATE TABLE notifications (
                seq INTEGER PRIMARY KEY, team_id TEXT NOT NULL, apns_id TEXT NOT NULL,
                device_token TEXT NOT NULL, topic TEXT NOT NULL, bundle_id TEXT NOT NULL, push_type TEXT NOT NULL,
                priority INTEGER NOT NULL, expiration INTEGER, collapse_id TEXT, class TEXT NOT NULL,
                payload BLOB NOT NULL, received_at INTEGER NOT NULL, expires_at INTEGER, device_id TEXT,
                state INTEGER NOT NULL, rule TEXT, finished_at INTEGER)
            """,
        ] + notificationsIndexes + [
            """
            CREATE TABLE app_budgets (
                device_id TEXT NOT NULL, bundle_id TEXT NOT NULL, tokens REAL, strikes REAL NOT NULL,
                settled_at INTEGER NOT NULL, cooling_until INTEGER NOT NULL, app_state TEXT NOT NULL,
                PRIMARY KEY (device_id, bundle_id)) WITHOUT ROWID
            """
        ],
        // The owner column serves several nodes on PostgreSQL; one SQLite file has one node.
        ["ALTER TABLE devices ADD COLUMN owner TEXT"],
        // Version 3 adds the nodes' leases on PostgreSQL; nothing changes here.
        [],
        // When each device last connected (pruning) and when it was removed.
        ["ALTER TABLE devices ADD COLUMN last_seen_at INTEGER", "ALTER TABLE devices ADD COLUMN removed_at INTEGER"],
        // Version 5 indexes devices by owner on PostgreSQL (takeovers); nothing changes here.
        [],
        // Live Activity tokens beside the apps' own (docs/live-activities.md).
        ["ALTER TABLE tokens ADD COLUMN activity TEXT"],
        // Broadcast channels (docs/live-activities.md).
        [
            """
            CREATE TABLE channels (id TEXT PRIMARY KEY, bundle_id TEXT NOT NULL, storage_policy INTEGER NOT NULL,
                created_at INTEGER NOT NULL, deleted_at INTEGER)
            """
        ],
        // Broadcasts (one row each) and the channel subscriptions with their cursors.
        [
            """
            CREATE TABLE broadcasts (channel_id TEXT NOT NULL, sequence INTEGER NOT NULL, apns_id TEXT NOT NULL,
                team_id TEXT NOT NULL, bundle_id TEXT NOT NULL, priority INTEGER NOT NULL, expiration INTEGER,
                payload BLOB NOT NULL, accepted_at INTEGER NOT NULL, deliverable_until INTEGER NOT NULL,
                PRIMARY KEY (channel_id, sequence)) WITHOUT ROWID
            """,
            """
            CREATE TABLE subscriptions (device_id TEXT NOT NULL, channel_id TEXT NOT NULL, bundle_id TEXT NOT NULL,
                acknowledged INTEGER NOT NULL, PRIMARY KEY (device_id, channel_id)) WITHOUT ROWID
            """,
        ],
        // apns-ids and tokens as bytes (SQLiteStore+Keys.swift).
        keysAsBytes,
        // finished_at indexed only for notifications finished after receipt (SQLiteStore+Keys.swift).
        finishedIndex,
        // Version 11 gives PostgreSQL's nodes their route addresses and the fleet its secret; nothing here.
        [],
        // Versions 12 and 13 leave room on PostgreSQL's device and budget pages; nothing here.
        [],
        [],
        // Version 14 indexes PostgreSQL's undecided pushes (the fleet's sweep); nothing here.
        [],
    ]

    private func migrate() async throws {
        let path = path
        try await write { db in
            try db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            let current =
                try db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_version").scalar(as: Int.self) ?? 0
            guard current <= Schema.latestVersion else { throw StoreError.newerSchema(current, where: "at \(path)") }
            for version in (current + 1)..<(Schema.latestVersion + 1) {
                for statement in Self.migrations[version - 1] { try db.execute(statement) }
                try db.prepare("INSERT INTO schema_version (version) VALUES (?)").run(version)
            }
        }
    }

    // MARK: StoreBackend

    public func open(now: UnixTime) async throws -> StoreSnapshot {
        try await migrate()
        _ = try await write { db in try Self.expire(db, now: now, atStart: true) }
        return try await read { db in
            var snapshot = StoreSnapshot()
            try db.prepare("SELECT id, secret_hash, created_at, last_seen_at, removed_at FROM devices ORDER BY rowid")
                .query { row in
                    snapshot.devices.append(
                        StoredDevice(
                            id: row[0], secretHash: row[1], createdAt: UnixTime(milliseconds: row[2]),
                            lastSeenAt: (row[3] as Int64?).map { UnixTime(milliseconds: $0) },
                            removedAt: (row[4] as Int64?).map { UnixTime(milliseconds: $0) }))
                }
            try db.prepare("SELECT token, device_id, bundle_id, unregistered_at, activity FROM tokens ORDER BY rowid")
                .query { row in
                    snapshot.tokens.append(
                        StoredToken(
                            token: row[0], deviceID: row[1], bundleID: row[2],
                            unregisteredAt: (row[3] as Int64?).map { UnixTime(milliseconds: $0) },
                            activity: row[4]))
                }
            try db.prepare(
                "SELECT id, bundle_id, storage_policy, created_at, deleted_at FROM channels ORDER BY rowid"
            ).query { row in
                snapshot.channels.append(
                    StoredChannel(
                        id: row[0], bundleID: row[1], storagePolicy: row[2], createdAt: UnixTime(milliseconds: row[3]),
                        deletedAt: (row[4] as Int64?).map { UnixTime(milliseconds: $0) }))
            }
            snapshot.budgets = try Self.budgets(db)
            try db.prepare(
                "SELECT device_id, channel_id, bundle_id, acknowledged FROM subscriptions ORDER BY device_id, channel_id"
            ).query { row in
                snapshot.subscriptions.append(
                    StoredSubscription(deviceID: row[0], channelID: row[1], bundleID: row[2], acknowledged: row[3]))
            }
            try db.statement(
                Self.selectBroadcast + """
                     b WHERE deliverable_until >= ?
                        AND sequence = (SELECT MAX(sequence) FROM broadcasts WHERE channel_id = b.channel_id)
                    ORDER BY channel_id
                    """
            ).query(now.milliseconds) { row in snapshot.broadcasts.append(Self.broadcast(row)) }
            try db.prepare(Self.selectNotification + " WHERE state = 0 ORDER BY seq").query { row in
                snapshot.pending.append(try Self.notification(row))
            }
            return snapshot
        }
    }

    public func commit(_ batch: StoreBatch) async throws {
        guard !batch.isEmpty else { return }
        try await write { db in
            if !batch.devices.isEmpty {
                let insert = try db.statement(
                    "INSERT OR IGNORE INTO devices (id, secret_hash, created_at) VALUES (?, ?, ?)")
                for device in batch.devices {
                    try insert.run(device.id, device.secretHash, device.createdAt.milliseconds)
                }
            }
            if !batch.seen.isEmpty {
                let update = try db.statement("UPDATE devices SET last_seen_at = ? WHERE id = ?")
                for (id, at) in batch.seen { try update.run(at.milliseconds, id) }
            }
            if !batch.removed.isEmpty {
                let update = try db.statement("UPDATE devices SET removed_at = ? WHERE id = ?")
                for (id, at) in batch.removed { try update.run(at.milliseconds, id) }
            }
            if !batch.tokens.isEmpty {
                let upsert = try db.statement(
                    """
                    INSERT INTO tokens (token, device_id, bundle_id, unregistered_at, activity) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (token) DO UPDATE SET unregistered_at = excluded.unregistered_at
                    """)
                for token in batch.tokens {
                    try upsert.run(
                        token.token, token.deviceID, token.bundleID, token.unregisteredAt?.milliseconds, token.activity)
                }
            }
            if !batch.channels.isEmpty {
                let upsert = try db.statement(
                    """
                    INSERT INTO channels (id, bundle_id, storage_policy, created_at, deleted_at) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (id) DO UPDATE SET deleted_at = excluded.deleted_at
                    """)
                for channel in batch.channels {
                    try upsert.run(
                        channel.id, channel.bundleID, channel.storagePolicy, channel.createdAt.milliseconds,
                        channel.deletedAt?.milliseconds)
                }
            }
            try Self.commitBroadcasts(batch, db)
            var rest = batch.notifications[...]
            for (size, sql) in Self.insertNotifications {
                guard rest.count >= size else { continue }
                // Bound in place (`SQLiteRowBinder`): 17 values a row, copied by SQLite one by one, cost
                // more than SQLite's insert itself on this path.
                var rows = SQLiteRowBinder(try db.statement(sql))
                while rest.count >= size {
                    for (row, stored) in rest.prefix(size).enumerated() {
                        Self.bind(stored, to: &rows, at: Int32(row * NotificationColumns.count))
                    }
                    try rows.step("cannot insert notification \(rest.first!.notification.id)")
                    rest = rest.dropFirst(size)
                }
            }
            if !batch.outcomes.isEmpty {
                let update = try db.statement(
                    """
                    UPDATE notifications SET state = ?, rule = COALESCE(?, rule), finished_at = ?
                    WHERE apns_id = ?
                    """)
                for outcome in batch.outcomes {
                    let finished: Int64? = outcome.state == .pending ? nil : outcome.at.milliseconds
                    try update.run(outcome.state.rawValue, outcome.rule?.rawValue, finished, Self.key(outcome.apnsID))
                }
            }
            if !batch.budgets.isEmpty {
                let clear = try db.statement("DELETE FROM app_budgets WHERE device_id = ?")
                let insert = try db.statement(
                    """
                    INSERT INTO app_budgets (device_id, bundle_id, tokens, strikes, settled_at, cooling_until,
                        app_state) VALUES (?, ?, ?, ?, ?, ?, ?)
                    """)
                for (device, apps) in batch.budgets {
                    try clear.run(device)
                    for app in apps {
                        let budget = app.budget
                        try insert.run(
                            device, app.bundleID, budget.tokens.map { Double($0) }, Double(budget.strikes),
                            budget.settledAt, budget.coolingUntil, budget.appState.rawValue)
                    }
                }
            }
        }
    }

    public func prune(finishedBefore: UnixTime, now: UnixTime) async throws -> PruneResult {
        let walked = walked.withLock { $0 }
        let (result, walkedTo) = try await write { db in
            let expired = try Self.expire(db, now: now, atStart: false)
            let cutoff = finishedBefore.milliseconds
            try db.statement(Self.pruneFinishedAfterReceipt).run(cutoff)
            var removed = db.changes
            // Only pruning deletes notifications, and a new row's seq is one past the largest left, so no
            // row lands at or below where the walk stopped.
            let from = min(walked, try db.statement(Self.lastSeq).scalar(as: Int64.self) ?? 0)
            let boundary = try db.statement(Self.firstReceivedSince).scalar(from, cutoff, as: Int64.self) ?? Int64.max
            try db.statement(Self.pruneFinishedAtReceipt).run(from, boundary)
            removed += db.changes
            let last = try db.statement(Self.lastSeq).scalar(as: Int64.self) ?? 0
            try db.statement("DELETE FROM broadcasts WHERE deliverable_until < ?").run(now.milliseconds)
            return (PruneResult(removed: removed, expired: expired), min(boundary - 1, last))
        }
        self.walked.withLock { $0 = walkedTo }
        return result
    }

    /// Notifications finished after they were received, before the cutoff: through the partial index on
    /// finished_at.
    static let pruneFinishedAfterReceipt =
        "DELETE FROM notifications WHERE state <> 0 AND finished_at <> received_at AND finished_at < ?"
    /// Notifications finished at receipt (finished_at = received_at, never changed after) are not in that
    /// index. Rows are received in `seq` order, so those received before the cutoff lie before the first
    /// row received at or after it: each pass walks on from where the last one stopped (`walked`) to
    /// that row, so a row is read about once however long it is kept.
    static let firstReceivedSince =
        "SELECT seq FROM notifications WHERE seq > ? AND received_at >= ? ORDER BY seq LIMIT 1"
    static let pruneFinishedAtReceipt =
        "DELETE FROM notifications WHERE seq > ? AND seq < ? AND state <> 0 AND finished_at = received_at"
    static let lastSeq = "SELECT COALESCE(MAX(seq), 0) FROM notifications"

    public func notification(_ id: APNsID) async throws -> StoredNotification? {
        try await read { db in
            var found: StoredNotification?
            try db.statement(Self.selectNotification + " WHERE apns_id = ? ORDER BY seq DESC LIMIT 1")
                .query(Self.key(id)) { row in found = try Self.notification(row) }
            return found
        }
    }

    public func counts() async throws -> [NotificationState: Int] {
        try await read { db in
            var counts: [NotificationState: Int] = [:]
            try db.statement("SELECT state, COUNT(*) FROM notifications GROUP BY state").query { row in
                if let state = NotificationState(rawValue: row[0]) { counts[state] = row[1] }
            }
            return counts
        }
    }

    public func ping() async throws {
        _ = try await read { db in try db.statement("SELECT 1").scalar(as: Int.self) }
    }

    public var commitsAreDurable: Bool { logSync == nil }

    public func sync() async throws {
        try await logSync?.sync()
    }

    public func close() async throws {
        logSync?.close()
        try checkpointer.close()
        try writer.close()
        try reader.close()
    }

    // MARK: Inserting notifications

    /// The INSERTs by rows each, largest first: what SQLite spends per statement run (its cursors opened
    /// and closed, the reset) is shared by up to 32 notifications.
    static let insertNotifications: [(rows: Int, sql: String)] = [32, 8, 1].map { rows in
        let row = "(" + Array(repeating: "?", count: NotificationColumns.count).joined(separator: ", ") + ")"
        let sql = """
            INSERT INTO notifications (team_id, apns_id, device_token, topic, bundle_id, push_type, priority,
                expiration, collapse_id, class, payload, received_at, expires_at, device_id, state, rule, finished_at)
            VALUES \(Array(repeating: row, count: rows).joined(separator: ", "))
            ON CONFLICT (apns_id, team_id) DO NOTHING
            """
        return (rows, sql)
    }

    /// One notification's 17 values (the columns of `NotificationColumns`, and `finished_at`), as
    /// parameters `base + 1` to `base + 17`; read from the notification itself, so that no string is
    /// made or retained on the way.
    static func bind(_ stored: StoredNotification, to row: inout SQLiteRowBinder, at base: Int32) {
        let push = stored.notification
        row.text(base + 1, push.teamID ?? "")
        bind(push.id, to: &row, at: base + 2)
        row.blob(base + 3) { push.deviceToken.appendBytes(to: &$0) }
        row.text(base + 4, push.topic.value)
        row.text(base + 5, push.bundleID)
        row.text(base + 6, push.pushType.rawValue)
        row.integer(base + 7, Int64(push.priority.rawValue))
        row.integer(base + 8, push.expiration.storedSeconds)
        row.text(base + 9, push.collapseID?.value)
        row.text(base + 10, push.notificationClass.rawValue)
        row.blob(base + 11, push.payload)
        row.integer(base + 12, push.receivedAt.milliseconds)
        row.integer(base + 13, stored.expiresAt?.milliseconds)
        row.text(base + 14, stored.deviceID)
        row.integer(base + 15, Int64(stored.state.rawValue))
        row.text(base + 16, stored.rule?.rawValue)
        row.integer(base + 17, stored.state == .pending ? nil : push.receivedAt.milliseconds)
    }

    // MARK: Broadcasts

    private static func commitBroadcasts(_ batch: StoreBatch, _ db: SQLiteConnection) throws {
        if !batch.broadcasts.isEmpty {
            let insert = try db.statement(
                """
                INSERT OR IGNORE INTO broadcasts (channel_id, sequence, apns_id, team_id, bundle_id, priority,
                    expiration, payload, accepted_at, deliverable_until) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for broadcast in batch.broadcasts {
                try insert.run(
                    broadcast.channelID, broadcast.sequence, broadcast.apnsID, broadcast.teamID, broadcast.bundleID,
                    broadcast.priority, broadcast.expiration, broadcast.payload, broadcast.acceptedAt.milliseconds,
                    broadcast.deliverableUntil.milliseconds)
            }
        }
        if !batch.subscriptions.isEmpty {
            let upsert = try db.statement(
                """
                INSERT OR REPLACE INTO subscriptions (device_id, channel_id, bundle_id, acknowledged)
                VALUES (?, ?, ?, ?)
                """)
            for subscription in batch.subscriptions {
                try upsert.run(
                    subscription.deviceID, subscription.channelID, subscription.bundleID, subscription.acknowledged)
            }
        }
        if !batch.unsubscribed.isEmpty {
            let delete = try db.statement("DELETE FROM subscriptions WHERE device_id = ? AND channel_id = ?")
            for key in batch.unsubscribed { try delete.run(key.deviceID, key.channelID) }
        }
        if !batch.cursors.isEmpty {
            let update = try db.statement(
                """
                UPDATE subscriptions SET acknowledged = MAX(acknowledged, ?) WHERE device_id = ? AND channel_id = ?
                """)
            for (key, sequence) in batch.cursors { try update.run(sequence, key.deviceID, key.channelID) }
        }
    }

    static let selectBroadcast = """
        SELECT channel_id, sequence, apns_id, team_id, bundle_id, priority, expiration, payload, accepted_at,
            deliverable_until FROM broadcasts
        """

    static func broadcast(_ row: SQLiteRow) -> StoredBroadcast {
        StoredBroadcast(
            channelID: row[0], sequence: row[1], apnsID: row[2], teamID: row[3], bundleID: row[4], priority: row[5],
            expiration: row[6], payload: row[7], acceptedAt: UnixTime(milliseconds: row[8]),
            deliverableUntil: UnixTime(milliseconds: row[9]))
    }

    // MARK: Rows

    static let selectNotification = """
        SELECT team_id, apns_id, device_token, topic, bundle_id, push_type, priority, expiration, collapse_id,
            class, payload, received_at, expires_at, device_id, state, rule FROM notifications
        """

    static func notification(_ row: SQLiteRow) throws -> StoredNotification {
        try NotificationColumns(
            teamID: row[0], apnsID: idText(row[1]), deviceToken: tokenText(row[2]), topic: row[3], bundleID: row[4],
            pushType: row[5],
            priority: row[6], expiration: row[7], collapseID: row[8], notificationClass: row[9],
            payload: row[10], receivedAt: row[11], expiresAt: row[12], deviceID: row[13],
            state: row[14], rule: row[15]
        ).stored()
    }

    static func budgets(_ db: SQLiteConnection) throws -> [DeviceBudgets] {
        var result: [DeviceBudgets] = []
        let rows = try db.prepare(
            """
            SELECT device_id, bundle_id, tokens, strikes, settled_at, cooling_until, app_state
            FROM app_budgets ORDER BY device_id, bundle_id
            """)
        try rows.query { row in
            let deviceID: String = row[0]
            let state: String = row[6]
            guard let appState = AppState(rawValue: state) else {
                throw StoreError(
                    "app_budgets: device \(deviceID) has app_state '\(state)', which this pushgate cannot read")
            }
            let app = AppBudget(
                bundleID: row[1],
                budget: ThrottleBudget(
                    tokens: (row[2] as Double?).map(Float.init), strikes: Float(row[3] as Double), settledAt: row[4],
                    coolingUntil: row[5], appState: appState))
            if result.last?.deviceID == deviceID {
                result[result.count - 1].apps.append(app)
            } else {
                result.append(DeviceBudgets(deviceID: deviceID, apps: [app]))
            }
        }
        return result
    }

    /// Marks pending notifications past their expiry as expired (at start, `apns-expiration: 0` ones too).
    static func expire(_ db: SQLiteConnection, now: UnixTime, atStart: Bool) throws -> Int {
        try db.statement(
            """
            UPDATE notifications SET state = 2, finished_at = ?,
                rule = CASE WHEN expires_at IS NULL THEN ? ELSE ? END
            WHERE state = 0 AND (expires_at < ? \(atStart ? "OR expires_at IS NULL" : ""))
            """
        ).run(now.milliseconds, Rule.notStoredExpirationZero.rawValue, Rule.expired.rawValue, now.milliseconds)
        return db.changes
    }
}
